// CUDA OpKernels for TopK, OneHot, EyeLike, Compress, ReverseSequence,
// TensorScatter and Dropout (inference). Their parameters (k, depth and the
// off/on values, the condition, the sequence lengths, the write indices,
// Dropout's ratio and mode) arrive in host memory and are checked there as
// on the CPU (kernels/host_params.h); Compress, ReverseSequence and
// TensorScatter are then strided copies (copy.h), one per run of kept
// entries or per batch entry.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/runtime_params.h"
#include "graph/shape_fns.h"
#include "kernels/cuda/copy.h"
#include "kernels/cuda/cuda_kernel_util.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/fill.h"
#include "kernels/cuda/select.h"
#include "kernels/host_params.h"

namespace sluice::cuda {
namespace {

int ElementBytes(DataType t) { return static_cast<int>(DataTypeSize(t)); }

// outer x n x inner: a shape seen around one axis.
struct AxisView {
  int64_t outer = 1, n = 1, inner = 1;
};
AxisView ViewAround(const Shape& s, int axis) {
  AxisView v;
  for (int i = 0; i < axis; ++i) v.outer *= s.dim(i);
  v.n = s.dim(axis);
  for (int i = axis + 1; i < s.rank(); ++i) v.inner *= s.dim(i);
  return v;
}

// Copies a [rows, cols] block of elements: source rows src_row_stride
// apart from src_offset, destination rows dst_row_stride apart.
absl::Status CopyBlock(int element_bytes, const void* src, int64_t src_offset,
                       int64_t src_row_stride, void* dst, int64_t dst_offset,
                       int64_t dst_row_stride, int64_t rows, int64_t cols,
                       cudaStream_t stream) {
  if (rows == 0 || cols == 0) return absl::OkStatus();
  ASSIGN_OR_RETURN(IndexMap map, CopyMap({rows, cols}, {src_row_stride, 1},
                                         {dst_row_stride, 1}));
  return LaunchStridedCopy(element_bytes, src, src_offset, dst, dst_offset,
                           map, stream);
}

class TopKKernel final : public OpKernel {
 public:
  struct Attrs {
    int64_t axis = -1;
    bool largest = true;
  };
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    Attrs a;
    ASSIGN_OR_RETURN(a.axis, node.attrs().GetInt("axis"));
    ASSIGN_OR_RETURN(a.largest, node.attrs().GetBool("largest"));
    return a;
  }
  TopKKernel(const Node& node, Attrs attrs) : OpKernel(node), attrs_(attrs) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu, /*host_inputs=*/{1}));
    const Tensor& x = ctx->input(0);
    ASSIGN_OR_RETURN(std::vector<int64_t> kv,
                     IntParamValues(ctx->input(1), "TopK's k"));
    if (kv.size() != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("TopK's k must hold one value, got ", kv.size()));
    }
    const int64_t k = kv[0];
    ASSIGN_OR_RETURN(int axis, NormalizeAxis(attrs_.axis, x.rank()));
    const AxisView v = ViewAround(x.shape(), axis);
    if (k < 0 || k > v.n) {
      return absl::InvalidArgumentError(
          absl::StrCat("TopK's k = ", k, " is outside [0, ", v.n,
                       "] for axis ", axis, " of ", x.shape().DebugString()));
    }
    Shape out_shape = x.shape();
    out_shape.set_dim(axis, k);
    ASSIGN_OR_RETURN(Tensor * values,
                     ctx->allocate_output(0, out_shape, x.dtype()));
    ASSIGN_OR_RETURN(Tensor * indices,
                     ctx->allocate_output(1, out_shape, DT_INT64));
    return LaunchTopK(ToGpuDtype(x.dtype()), x.raw_data(), values->raw_data(),
                      indices->data<int64_t>(), v.outer, v.n, v.inner, k,
                      attrs_.largest, gpu.stream);
  }

 private:
  const Attrs attrs_;
};

// Indices in device memory; depth and values (off, on) in host memory.
class OneHotKernel final : public OpKernel {
 public:
  struct Attrs {
    int64_t axis = -1;
  };
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    Attrs a;
    ASSIGN_OR_RETURN(a.axis, node.attrs().GetInt("axis"));
    return a;
  }
  OneHotKernel(const Node& node, Attrs attrs)
      : OpKernel(node), attrs_(attrs) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu, /*host_inputs=*/{1, 2}));
    const Tensor& indices = ctx->input(0);
    const Tensor& values = ctx->input(2);
    ASSIGN_OR_RETURN(std::vector<int64_t> depth_v,
                     HostInt64s(ctx->input(1), "depth"));
    if (depth_v.size() != 1 || depth_v[0] < 1) {
      return absl::InvalidArgumentError(
          "depth must be one value of at least 1");
    }
    const int64_t depth = depth_v[0];
    if (values.NumElements() != 2) {
      return absl::InvalidArgumentError(absl::StrCat(
          "values must hold [off_value, on_value], got shape ",
          values.shape().DebugString()));
    }
    const int rank = indices.rank() + 1;
    int64_t axis = attrs_.axis;
    if (axis < -rank || axis >= rank) {
      return absl::InvalidArgumentError(absl::StrCat(
          "axis ", axis, " is out of range for an output of rank ", rank));
    }
    if (axis < 0) axis += rank;
    Shape out_shape;
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < indices.rank(); ++d) {
      if (d == axis) out_shape.AddDim(depth);
      out_shape.AddDim(indices.dim(d));
      (d < axis ? outer : inner) *= indices.dim(d);
    }
    if (axis == indices.rank()) out_shape.AddDim(depth);
    ASSIGN_OR_RETURN(Tensor * y,
                     ctx->allocate_output(0, out_shape, values.dtype()));
    const int bytes = ElementBytes(values.dtype());
    uint64_t off = 0, on = 0;
    const char* vp = static_cast<const char*>(values.raw_data());
    std::memcpy(&off, vp, bytes);
    std::memcpy(&on, vp + bytes, bytes);
    return LaunchOneHot(ToGpuDtype(indices.dtype()), indices.raw_data(), bytes,
                        off, on, y->raw_data(), outer, depth, inner,
                        gpu.stream);
  }

 private:
  const Attrs attrs_;
};

class EyeLikeKernel final : public OpKernel {
 public:
  struct Attrs {
    DataType dst = DT_INVALID;
    int64_t k = 0;
  };
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    Attrs a;
    ASSIGN_OR_RETURN(a.dst, node.attrs().GetType("DstT"));
    ASSIGN_OR_RETURN(a.k, node.attrs().GetInt("k"));
    return a;
  }
  EyeLikeKernel(const Node& node, Attrs attrs)
      : OpKernel(node), attrs_(attrs) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu));
    const Tensor& x = ctx->input(0);
    if (x.rank() != 2) {
      return absl::InvalidArgumentError(
          absl::StrCat("EyeLike's input must have rank 2, got shape ",
                       x.shape().DebugString()));
    }
    ASSIGN_OR_RETURN(Tensor * y,
                     ctx->allocate_output(0, x.shape(), attrs_.dst));
    return LaunchEyeLike(ToGpuDtype(attrs_.dst), y->raw_data(), x.dim(0),
                         x.dim(1), attrs_.k, gpu.stream);
  }

 private:
  const Attrs attrs_;
};

// The condition in host memory: one strided copy per run of kept entries.
class CompressKernel final : public OpKernel {
 public:
  struct Attrs {
    bool flatten = true;
    int64_t axis = 0;
  };
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    Attrs a;
    ASSIGN_OR_RETURN(a.flatten, node.attrs().GetBool("flatten"));
    ASSIGN_OR_RETURN(a.axis, node.attrs().GetInt("axis"));
    return a;
  }
  CompressKernel(const Node& node, Attrs attrs)
      : OpKernel(node), attrs_(attrs) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu, /*host_inputs=*/{1}));
    const Tensor& x = ctx->input(0);
    AxisView v;
    v.n = x.NumElements();
    int axis = 0;
    if (!attrs_.flatten) {
      ASSIGN_OR_RETURN(axis, NormalizeAxis(attrs_.axis, x.rank()));
      v = ViewAround(x.shape(), axis);
    }
    ASSIGN_OR_RETURN(std::vector<int64_t> keep,
                     CompressSelection(ctx->input(1), v.n));
    const int64_t m = static_cast<int64_t>(keep.size());
    Shape out_shape({m});
    if (!attrs_.flatten) {
      out_shape = x.shape();
      out_shape.set_dim(axis, m);
    }
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, out_shape, x.dtype()));
    for (int64_t r = 0; r < m;) {
      int64_t end = r + 1;  // keep[r, end) are consecutive entries
      while (end < m && keep[end] == keep[end - 1] + 1) ++end;
      RETURN_IF_ERROR(CopyBlock(ElementBytes(x.dtype()), x.raw_data(),
                                keep[r] * v.inner, v.n * v.inner,
                                y->raw_data(), r * v.inner, m * v.inner,
                                v.outer, (end - r) * v.inner, gpu.stream));
      r = end;
    }
    return absl::OkStatus();
  }

 private:
  const Attrs attrs_;
};

// sequence_lens in host memory: per batch entry, one copy with a negative
// time stride for the reversed steps and one for the rest.
class ReverseSequenceKernel final : public OpKernel {
 public:
  struct Attrs {
    int64_t batch_axis = 1;
  };
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    Attrs a;
    ASSIGN_OR_RETURN(a.batch_axis, node.attrs().GetInt("batch_axis"));
    ASSIGN_OR_RETURN(int64_t time_axis, node.attrs().GetInt("time_axis"));
    if (!((a.batch_axis == 0 && time_axis == 1) ||
          (a.batch_axis == 1 && time_axis == 0))) {
      return absl::InvalidArgumentError(
          "batch_axis and time_axis must be 0 and 1 in some order");
    }
    return a;
  }
  ReverseSequenceKernel(const Node& node, Attrs attrs)
      : OpKernel(node), attrs_(attrs) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu, /*host_inputs=*/{1}));
    const Tensor& x = ctx->input(0);
    if (x.rank() < 2) {
      return absl::InvalidArgumentError(absl::StrCat(
          "ReverseSequence needs rank >= 2, got ", x.shape().DebugString()));
    }
    const bool batch_first = attrs_.batch_axis == 0;
    const int64_t batch = x.dim(batch_first ? 0 : 1);
    const int64_t steps = x.dim(batch_first ? 1 : 0);
    RETURN_IF_ERROR(CheckSequenceLens(ctx->input(1), batch, steps));
    const int64_t* lens = ctx->input(1).data<int64_t>();
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, x.shape(), x.dtype()));
    int64_t row = 1;  // elements per (batch, step)
    for (int d = 2; d < x.rank(); ++d) row *= x.dim(d);
    const int64_t step_stride = batch_first ? row : batch * row;
    auto offset = [&](int64_t b, int64_t t) {
      return (batch_first ? b * steps + t : t * batch + b) * row;
    };
    const int bytes = ElementBytes(x.dtype());
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t len = lens[b];
      if (len > 0) {  // y[b, t] = x[b, len - 1 - t] for t < len
        RETURN_IF_ERROR(CopyBlock(bytes, x.raw_data(), offset(b, len - 1),
                                  -step_stride, y->raw_data(), offset(b, 0),
                                  step_stride, len, row, gpu.stream));
      }
      if (len < steps) {
        RETURN_IF_ERROR(CopyBlock(bytes, x.raw_data(), offset(b, len),
                                  step_stride, y->raw_data(), offset(b, len),
                                  step_stride, steps - len, row, gpu.stream));
      }
    }
    return absl::OkStatus();
  }

 private:
  const Attrs attrs_;
};

// Inference: y is x's buffer, the mask all true; ratio and training_mode
// in host memory, refused in training mode as on the CPU.
class DropoutKernel final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu, /*host_inputs=*/{1, 2}));
    const Tensor& x = ctx->input(0);
    RETURN_IF_ERROR(CheckDropoutInference(ctx->input(1), ctx->input(2)));
    ctx->set_output(0, x);
    ASSIGN_OR_RETURN(Tensor * mask, ctx->allocate_output(1, x.shape(), DT_BOOL));
    if (mask->NumElements() == 0) return absl::OkStatus();
    return LaunchFillBits(mask->raw_data(), mask->NumElements(), 1, 1,
                          gpu.stream);
  }
};

// The cache copied, then per batch entry one strided copy of its update
// rows (two where a circular write wraps); write_indices in host memory,
// checked there as on the CPU.
class TensorScatterKernel final : public OpKernel {
 public:
  struct Attrs {
    bool circular = false;
    int64_t axis = -2;
  };
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    Attrs a;
    ASSIGN_OR_RETURN(std::string mode, node.attrs().GetString("mode"));
    if (mode != "linear" && mode != "circular") {
      return absl::InvalidArgumentError(
          absl::StrCat("mode must be linear or circular, got ", mode));
    }
    a.circular = mode == "circular";
    ASSIGN_OR_RETURN(a.axis, node.attrs().GetInt("axis"));
    return a;
  }
  TensorScatterKernel(const Node& node, Attrs attrs)
      : OpKernel(node), attrs_(attrs) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu, /*host_inputs=*/{2}));
    const Tensor& cache = ctx->input(0);
    const Tensor& update = ctx->input(1);
    const Tensor& where = ctx->input(2);
    ASSIGN_OR_RETURN(TensorScatterPlan p,
                     PlanTensorScatter(cache, update, where, attrs_.axis));
    const int64_t batch = cache.rank() > 0 ? cache.dim(0) : 0;
    const int64_t* w = where.data<int64_t>();
    if (!attrs_.circular && p.prefix > 0 && p.steps > 0) {
      for (int64_t b = 0; b < batch; ++b) {  // the CPU's first bad index
        const int64_t at = w[b] < 0 ? w[b] : std::max(w[b], p.len);
        if (w[b] < 0 || w[b] + p.steps > p.len) {
          return absl::OutOfRangeError(absl::StrCat(
              "write index ", at, " is outside the cache length ", p.len));
        }
      }
    }
    ASSIGN_OR_RETURN(Tensor * out,
                     ctx->allocate_output(0, cache.shape(), cache.dtype()));
    const int bytes = ElementBytes(cache.dtype());
    RETURN_IF_ERROR(CopyBlock(bytes, cache.raw_data(), 0, 0, out->raw_data(),
                              0, 0, 1, cache.NumElements(), gpu.stream));
    if (p.prefix == 0 || p.steps == 0) return absl::OkStatus();
    // Update steps [s0, s1) of batch entry b to cache positions from `at`.
    auto write = [&](int64_t b, int64_t s0, int64_t s1, int64_t at) {
      return CopyBlock(bytes, update.raw_data(),
                       (b * p.per_batch * p.steps + s0) * p.inner,
                       p.steps * p.inner, out->raw_data(),
                       (b * p.per_batch * p.len + at) * p.inner,
                       p.len * p.inner, p.per_batch, (s1 - s0) * p.inner,
                       gpu.stream);
    };
    for (int64_t b = 0; b < batch; ++b) {
      if (!attrs_.circular) {
        RETURN_IF_ERROR(write(b, 0, p.steps, w[b]));
        continue;
      }
      const int64_t r = ((w[b] % p.len) + p.len) % p.len;
      const int64_t first = std::min(p.steps, p.len - r);
      RETURN_IF_ERROR(write(b, 0, first, r));
      if (first < p.steps) RETURN_IF_ERROR(write(b, first, p.steps, 0));
    }
    return absl::OkStatus();
  }

 private:
  const Attrs attrs_;
};

std::vector<DataType> Filter(bool (*has)(GpuDtype),
                             const std::vector<DataType>& candidates) {
  std::vector<DataType> out;
  for (DataType t : candidates) {
    if (has(ToGpuDtype(t))) out.push_back(t);
  }
  return out;
}

}  // namespace

void RegisterSelectKernels(KernelRegistry* registry) {
  const std::vector<DataType> ordered = Filter(HasTopKKernel, GpuAllTypes());
  RegisterGpu(registry, "TopK", {{"T", ordered}}, MakeKernel<TopKKernel>,
              /*host_memory_inputs=*/{1});
  RegisterGpu(registry, "OneHot",
              {{"TI", Filter(HasOneHotIndices, GpuAllTypes())},
               {"TD", ordered},
               {"T", GpuAllTypes()}},
              MakeKernel<OneHotKernel>, /*host_memory_inputs=*/{1, 2});
  RegisterGpu(registry, "EyeLike", {{"DstT", GpuAllTypes()}},
              MakeKernel<EyeLikeKernel>);
  RegisterGpu(registry, "Compress", {{"T", GpuAllTypes()}},
              MakeKernel<CompressKernel>, /*host_memory_inputs=*/{1});
  RegisterGpu(registry, "ReverseSequence", {{"T", GpuAllTypes()}},
              MakeKernel<ReverseSequenceKernel>, /*host_memory_inputs=*/{1});
  RegisterGpu(registry, "TensorScatter", {{"T", GpuAllTypes()}},
              MakeKernel<TensorScatterKernel>, /*host_memory_inputs=*/{2});
  RegisterGpu(registry, "Dropout",
              {{"T", GpuAllTypes()}, {"R", GpuFloatTypes()}},
              MakeKernel<DropoutKernel>, /*host_memory_inputs=*/{1, 2});
}

}  // namespace sluice::cuda

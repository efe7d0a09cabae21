// CUDA OpKernels for TopK, OneHot, EyeLike, Compress, NonZero, Unique,
// ReverseSequence, TensorScatter and Dropout (inference). Their parameters (k, depth and the
// off/on values, the condition, the sequence lengths, the write indices,
// Dropout's ratio and mode) arrive in host memory and are checked there as
// on the CPU (kernels/host_params.h); Compress, ReverseSequence and
// TensorScatter are then strided copies (copy.h), one per run of kept
// entries or per batch entry. NonZero and Unique select on the GPU
// (nonzero.h, unique.h) and read only the count back, to size their
// outputs.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/shape_fns.h"
#include "kernels/cuda/copy.h"
#include "kernels/cuda/cuda_kernel_util.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/fill.h"
#include "kernels/cuda/nonzero.h"
#include "kernels/cuda/select.h"
#include "kernels/cuda/unique.h"
#include "kernels/host_params.h"
#include "kernels/launch_kernel.h"
#include "kernels/select_params.h"

namespace sluice::cuda {
namespace {

int ElementBytes(DataType t) { return static_cast<int>(DataTypeSize(t)); }

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

class TopKKernel final : public LaunchKernel<TopKAttrs, ParseTopKAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu, /*host_inputs=*/{1}));
    const Tensor& x = ctx->input(0);
    ASSIGN_OR_RETURN(TopKPlan p, PlanTopK(x, ctx->input(1), attrs()));
    ASSIGN_OR_RETURN(Tensor * values,
                     ctx->allocate_output(0, p.out_shape, x.dtype()));
    ASSIGN_OR_RETURN(Tensor * indices,
                     ctx->allocate_output(1, p.out_shape, DT_INT64));
    return LaunchTopK(ToGpuDtype(x.dtype()), x.raw_data(), values->raw_data(),
                      indices->data<int64_t>(), p.view.outer, p.view.n,
                      p.view.inner, p.k, attrs().largest, gpu.stream);
  }
};

// Indices in device memory; depth and values (off, on) in host memory.
class OneHotKernel final : public LaunchKernel<OneHotAttrs, ParseOneHotAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu, /*host_inputs=*/{1, 2}));
    const Tensor& indices = ctx->input(0);
    const Tensor& values = ctx->input(2);
    ASSIGN_OR_RETURN(OneHotPlan p,
                     PlanOneHot(indices, ctx->input(1), values, attrs()));
    ASSIGN_OR_RETURN(Tensor * y,
                     ctx->allocate_output(0, p.out_shape, values.dtype()));
    const int bytes = ElementBytes(values.dtype());
    uint64_t off = 0, on = 0;
    const char* vp = static_cast<const char*>(values.raw_data());
    std::memcpy(&off, vp, bytes);
    std::memcpy(&on, vp + bytes, bytes);
    return LaunchOneHot(ToGpuDtype(indices.dtype()), indices.raw_data(), bytes,
                        off, on, y->raw_data(), p.outer, p.depth, p.inner,
                        gpu.stream);
  }
};

class EyeLikeKernel final
    : public LaunchKernel<EyeLikeAttrs, ParseEyeLikeAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu));
    const Tensor& x = ctx->input(0);
    RETURN_IF_ERROR(CheckEyeLikeInput(x));
    ASSIGN_OR_RETURN(Tensor * y,
                     ctx->allocate_output(0, x.shape(), attrs().dst));
    return LaunchEyeLike(ToGpuDtype(attrs().dst), y->raw_data(), x.dim(0),
                         x.dim(1), attrs().k, gpu.stream);
  }
};

// The condition in host memory: one strided copy per run of kept entries.
class CompressKernel final
    : public LaunchKernel<CompressAttrs, ParseCompressAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu, /*host_inputs=*/{1}));
    const Tensor& x = ctx->input(0);
    AxisView v;
    v.n = x.NumElements();
    int axis = 0;
    if (!attrs().flatten) {
      ASSIGN_OR_RETURN(axis, NormalizeAxis(attrs().axis, x.rank()));
      v = ViewAround(x.shape(), axis);
    }
    ASSIGN_OR_RETURN(std::vector<int64_t> keep,
                     CompressSelection(ctx->input(1), v.n));
    const int64_t m = static_cast<int64_t>(keep.size());
    Shape out_shape({m});
    if (!attrs().flatten) {
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
};

// The positions are selected on the GPU; the count comes back to the host
// (a wait for the GPU: the output's size depends on it), then the positions
// are unravelled into y [rank, count].
class NonZeroKernel final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  static absl::Status Supports(const Node& node) {
    const Shape& x = node.input_shape(0);
    if (!x.unknown_rank() && x.rank() > kMaxSmallInt64s) {
      return absl::UnimplementedError(absl::StrCat(
          "NonZero of rank ", x.rank(), " > ", kMaxSmallInt64s, " on the GPU"));
    }
    return absl::OkStatus();
  }

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu));
    const Tensor& x = ctx->input(0);
    const int rank = std::max(x.rank(), 1);  // a scalar: one element of rank 1
    if (rank > kMaxSmallInt64s) {
      return absl::UnimplementedError(
          absl::StrCat("NonZero of rank ", rank, " on the GPU"));
    }
    const int64_t n = x.NumElements();
    if (n == 0) return ctx->allocate_output(0, Shape({rank, 0})).status();
    const GpuDtype dtype = ToGpuDtype(x.dtype());
    ASSIGN_OR_RETURN(size_t scratch_bytes, NonZeroScratchBytes(dtype, n));
    ASSIGN_OR_RETURN(Tensor positions, ctx->allocate_temp(DT_INT64, Shape({n + 1})));
    ASSIGN_OR_RETURN(Tensor scratch,
                     ctx->allocate_temp(DT_UINT8, Shape({static_cast<int64_t>(
                                                      std::max<size_t>(scratch_bytes, 1))})));
    int64_t* count_on_gpu = positions.data<int64_t>() + n;
    RETURN_IF_ERROR(LaunchNonZeroPositions(dtype, x.raw_data(), n,
                                           positions.data<int64_t>(),
                                           count_on_gpu, scratch.raw_data(),
                                           scratch_bytes, gpu.stream));
    ASSIGN_OR_RETURN(uint64_t count, ReadDeviceFlag(gpu, count_on_gpu));
    const int64_t m = static_cast<int64_t>(count);
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, Shape({rank, m}), DT_INT64));
    SmallInt64s dims;
    dims.count = rank;
    for (int d = 0; d < rank; ++d) dims.values[d] = x.rank() == 0 ? 1 : x.dim(d);
    return LaunchUnravelPositions(positions.data<int64_t>(), m, dims,
                                  y->data<int64_t>(), gpu.stream);
  }
};

// Unique of the flattened input (or of a rank-1 one along its axis): sorted
// and grouped on the GPU (unique.h); the number of groups is read back
// (a wait for the GPU) to allocate the outputs. Unique over slices
// (flatten = 0 on rank 2 and up) runs on the CPU when the rank is known at
// placement; one whose rank was unknown then fails here with UNIMPLEMENTED.
class UniqueKernel final : public OpKernel {
 public:
  struct Attrs {
    bool sorted = true;
  };
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    Attrs a;
    ASSIGN_OR_RETURN(a.sorted, node.attrs().GetBool("sorted"));
    return a;
  }
  UniqueKernel(const Node& node, Attrs attrs) : OpKernel(node), attrs_(attrs) {}

  static absl::Status Supports(const Node& node) {
    ASSIGN_OR_RETURN(bool flatten, node.attrs().GetBool("flatten"));
    const Shape& x = node.input_shape(0);
    if (flatten || x.unknown_rank() || x.rank() == 1) return absl::OkStatus();
    return absl::UnimplementedError(
        "Unique over slices (flatten = 0) of a tensor of rank other than 1 on "
        "the GPU");
  }

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu));
    const Tensor& x = ctx->input(0);
    ASSIGN_OR_RETURN(bool flatten, node().attrs().GetBool("flatten"));
    if (!flatten) {
      if (x.rank() != 1) {
        return absl::UnimplementedError(absl::StrCat(
            "Unique over slices of a rank-", x.rank(), " tensor on the GPU"));
      }
      ASSIGN_OR_RETURN(int64_t axis, node().attrs().GetInt("axis"));
      RETURN_IF_ERROR(NormalizeAxis(axis, 1).status());
    }
    const int64_t n = x.NumElements();
    const GpuDtype dtype = ToGpuDtype(x.dtype());
    uint64_t u = 0;
    Tensor scratch;
    size_t bytes = 0;
    if (n > 0) {
      ASSIGN_OR_RETURN(bytes, UniqueScratchBytes(dtype, n));
      ASSIGN_OR_RETURN(scratch, ctx->allocate_temp(
                                    DT_UINT8, Shape({static_cast<int64_t>(bytes)})));
      RETURN_IF_ERROR(LaunchUniqueGroups(dtype, x.raw_data(), n, scratch.raw_data(),
                                         bytes, gpu.stream));
      ASSIGN_OR_RETURN(const int64_t* groups,
                       UniqueGroupCount(dtype, n, scratch.raw_data()));
      ASSIGN_OR_RETURN(u, ReadDeviceFlag(gpu, groups));
    }
    const int64_t m = static_cast<int64_t>(u);
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, Shape({m}), x.dtype()));
    ASSIGN_OR_RETURN(Tensor * indices, ctx->allocate_output(1, Shape({m}), DT_INT64));
    ASSIGN_OR_RETURN(Tensor * inverse, ctx->allocate_output(2, Shape({n}), DT_INT64));
    ASSIGN_OR_RETURN(Tensor * counts, ctx->allocate_output(3, Shape({m}), DT_INT64));
    if (n == 0) return absl::OkStatus();
    return LaunchUniqueOutputs(dtype, x.raw_data(), n, m, attrs_.sorted,
                               scratch.raw_data(), bytes, y->raw_data(),
                               indices->data<int64_t>(), inverse->data<int64_t>(),
                               counts->data<int64_t>(), gpu.stream);
  }

 private:
  const Attrs attrs_;
};

// sequence_lens in host memory: per batch entry, one copy with a negative
// time stride for the reversed steps and one for the rest.
class ReverseSequenceKernel final
    : public LaunchKernel<ReverseSequenceAttrs, ParseReverseSequenceAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu, /*host_inputs=*/{1}));
    const Tensor& x = ctx->input(0);
    ASSIGN_OR_RETURN(ReverseSequencePlan p,
                     PlanReverseSequence(x, ctx->input(1), attrs()));
    const bool batch_first = p.batch_first;
    const int64_t batch = p.batch, steps = p.steps;
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
class TensorScatterKernel final
    : public LaunchKernel<TensorScatterAttrs, ParseTensorScatterAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu, /*host_inputs=*/{2}));
    const Tensor& cache = ctx->input(0);
    const Tensor& update = ctx->input(1);
    const Tensor& where = ctx->input(2);
    ASSIGN_OR_RETURN(TensorScatterPlan p,
                     PlanTensorScatter(cache, update, where, attrs().axis));
    const int64_t batch = cache.rank() > 0 ? cache.dim(0) : 0;
    const int64_t* w = where.data<int64_t>();
    if (!attrs().circular && p.prefix > 0 && p.steps > 0) {
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
      if (!attrs().circular) {
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
};

}  // namespace

void RegisterSelectKernels(KernelRegistry* registry) {
  const std::vector<DataType> ordered = GpuTypesWhere(HasTopKKernel, GpuAllTypes());
  RegisterGpu(registry, "TopK", {{"T", ordered}}, MakeKernel<TopKKernel>,
              /*host_memory_inputs=*/{1});
  RegisterGpu(registry, "OneHot",
              {{"TI", GpuTypesWhere(HasOneHotIndices, GpuAllTypes())},
               {"TD", ordered},
               {"T", GpuAllTypes()}},
              MakeKernel<OneHotKernel>, /*host_memory_inputs=*/{1, 2});
  RegisterGpu(registry, "EyeLike", {{"DstT", GpuAllTypes()}},
              MakeKernel<EyeLikeKernel>);
  RegisterGpu(registry, "Compress", {{"T", GpuAllTypes()}},
              MakeKernel<CompressKernel>, /*host_memory_inputs=*/{1});
  KernelDef nonzero = GpuKernelDef(
      "NonZero", {{"T", GpuTypesWhere(HasNonZeroKernel, GpuAllTypes())}},
      MakeKernel<NonZeroKernel>, /*host_memory_inputs=*/{},
      NonZeroKernel::Supports);
  nonzero.sizes_outputs_from_gpu_values = true;
  registry->Register(std::move(nonzero));
  KernelDef unique = GpuKernelDef(
      "Unique", {{"T", GpuTypesWhere(HasUniqueKernel, GpuAllTypes())}},
      MakeKernel<UniqueKernel>, /*host_memory_inputs=*/{}, UniqueKernel::Supports);
  unique.sizes_outputs_from_gpu_values = true;
  registry->Register(std::move(unique));
  RegisterGpu(registry, "ReverseSequence", {{"T", GpuAllTypes()}},
              MakeKernel<ReverseSequenceKernel>, /*host_memory_inputs=*/{1});
  RegisterGpu(registry, "TensorScatter", {{"T", GpuAllTypes()}},
              MakeKernel<TensorScatterKernel>, /*host_memory_inputs=*/{2});
  RegisterGpu(registry, "Dropout",
              {{"T", GpuAllTypes()}, {"R", GpuFloatTypes()}},
              MakeKernel<DropoutKernel>, /*host_memory_inputs=*/{1, 2});
}

}  // namespace sluice::cuda

// CUDA OpKernels for the sources and the shape and indexing ops. Identity,
// Reshape, Squeeze and Unsqueeze share their input's buffer; Transpose,
// Concat, Split, Slice and Expand are strided copies (copy.h); Gather checks
// its indices (on the host when they arrive in host memory, else through a
// device flag).
#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "device/gpu_graph.h"
#include "graph/runtime_params.h"
#include "graph/shape_fns.h"
#include "kernels/array_params.h"
#include "kernels/cuda/copy.h"
#include "kernels/cuda/cuda_kernel_util.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/shape_copy.h"
#include "kernels/input_kernel.h"
#include "kernels/launch_kernel.h"

namespace sluice::cuda {
namespace {

// An int-list attribute; empty when absent, an error when of another kind.
absl::StatusOr<std::vector<int64_t>> IntList(const Node& node,
                                             const char* name) {
  if (!node.attrs().Has(name)) return std::vector<int64_t>();
  return node.attrs().GetIntList(name);
}

std::vector<int64_t> Dims(const Shape& s) {
  return std::vector<int64_t>(s.dims().begin(), s.dims().end());
}

int ElementBytes(const Tensor& t) {
  return static_cast<int>(DataTypeSize(t.dtype()));
}

class ConstKernel final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    const Tensor* value = node().const_value();
    if (value == nullptr || !value->valid()) {
      return absl::InternalError("Const node has no value");
    }
    ASSIGN_OR_RETURN(Tensor t, gpu.device->CopyToDevice(*value));
    ctx->set_output(0, std::move(t));
    return absl::OkStatus();
  }
};

// Identity, Reshape, Squeeze, Unsqueeze and their Dynamic forms (whose
// shape or axes arrive in host memory as input 1): the input's buffer,
// reshaped.
template <absl::StatusOr<ViewAttrs> (*Parse)(const Node&)>
class ViewKernel final : public LaunchKernel<ViewAttrs, Parse> {
 public:
  using LaunchKernel<ViewAttrs, Parse>::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    const ViewAttrs& a = this->attrs();
    if (a.dynamic) {
      RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu, /*host_inputs=*/{1}));
    } else {
      RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu));
    }
    const Tensor& x = ctx->input(0);
    ASSIGN_OR_RETURN(Shape out,
                     PlanView(a, x.shape(), a.dynamic ? &ctx->input(1) : nullptr));
    ctx->set_output(0, x.Reshaped(out));
    return absl::OkStatus();
  }
};

class TransposeKernel final : public LaunchKernel<TransposeAttrs, ParseTransposeAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu));
    const Tensor& x = ctx->input(0);
    ASSIGN_OR_RETURN(CopyPlan p, PlanTranspose(attrs(), x.shape()));
    ASSIGN_OR_RETURN(Tensor* y, ctx->allocate_output(0, p.out_shape, x.dtype()));
    ASSIGN_OR_RETURN(IndexMap map, CopyMap(Dims(p.out_shape), p.in_strides,
                                           RowMajorStrides(p.out_shape)));
    return LaunchStridedCopy(ElementBytes(x), x.raw_data(), 0, y->raw_data(),
                             0, map, gpu.stream);
  }
};

class ConcatKernel final : public LaunchKernel<ConcatAttrs, ParseConcatAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu));
    ASSIGN_OR_RETURN(ConcatPlan p, PlanConcat(attrs(), *ctx));
    ASSIGN_OR_RETURN(Tensor* y,
                     ctx->allocate_output(0, p.out_shape, ctx->input(0).dtype()));
    const std::vector<int64_t> dst = RowMajorStrides(p.out_shape);
    int64_t offset = 0;
    for (int i = 0; i < ctx->num_inputs(); ++i) {
      const Tensor& x = ctx->input(i);
      ASSIGN_OR_RETURN(IndexMap map,
                       CopyMap(Dims(x.shape()), RowMajorStrides(x.shape()), dst));
      RETURN_IF_ERROR(LaunchStridedCopy(ElementBytes(x), x.raw_data(), 0,
                                        y->raw_data(), offset * dst[p.axis], map,
                                        gpu.stream));
      offset += x.dim(p.axis);
    }
    return absl::OkStatus();
  }
};

// Split, and DynamicSplit, whose sizes arrive in host memory as input 1.
template <absl::StatusOr<SplitAttrs> (*Parse)(const Node&)>
class SplitKernel final : public LaunchKernel<SplitAttrs, Parse> {
 public:
  using LaunchKernel<SplitAttrs, Parse>::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    if (this->attrs().dynamic) {
      RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu, /*host_inputs=*/{1}));
    } else {
      RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu));
    }
    const Tensor& x = ctx->input(0);
    ASSIGN_OR_RETURN(SplitPlan p, PlanSplit(this->attrs(), *ctx));
    const std::vector<int64_t> src = RowMajorStrides(x.shape());
    int64_t offset = 0;
    for (size_t i = 0; i < p.out_shapes.size(); ++i) {
      const Shape& out = p.out_shapes[i];
      ASSIGN_OR_RETURN(Tensor* y,
                       ctx->allocate_output(static_cast<int>(i), out, x.dtype()));
      ASSIGN_OR_RETURN(IndexMap map, CopyMap(Dims(out), src, RowMajorStrides(out)));
      RETURN_IF_ERROR(LaunchStridedCopy(ElementBytes(x), x.raw_data(),
                                        offset * src[p.axis], y->raw_data(), 0,
                                        map, gpu.stream));
      offset += out.dim(p.axis);
    }
    return absl::OkStatus();
  }
};

class SliceKernel final : public OpKernel {
 public:
  struct Attrs {
    std::vector<int64_t> begin, end, axes, steps;
  };
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    Attrs a;
    ASSIGN_OR_RETURN(a.begin, IntList(node, "begin"));
    ASSIGN_OR_RETURN(a.end, IntList(node, "end"));
    ASSIGN_OR_RETURN(a.axes, IntList(node, "axes"));
    ASSIGN_OR_RETURN(a.steps, IntList(node, "steps"));
    return a;
  }
  SliceKernel(const Node& node, Attrs attrs)
      : OpKernel(node), attrs_(std::move(attrs)) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu));
    return SliceInto(ctx, gpu, ctx->input(0), attrs_.begin, attrs_.end,
                     attrs_.axes, attrs_.steps);
  }

 private:
  const Attrs attrs_;
};

// Expand, and DynamicExpand, whose shape arrives in host memory as input 1.
template <absl::StatusOr<ExpandAttrs> (*Parse)(const Node&)>
class ExpandKernel final : public LaunchKernel<ExpandAttrs, Parse> {
 public:
  using LaunchKernel<ExpandAttrs, Parse>::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    const ExpandAttrs& a = this->attrs();
    if (a.dynamic) {
      RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu, /*host_inputs=*/{1}));
    } else {
      RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu));
    }
    const Tensor& x = ctx->input(0);
    ASSIGN_OR_RETURN(CopyPlan p,
                     PlanExpand(a, x.shape(), a.dynamic ? &ctx->input(1) : nullptr));
    ASSIGN_OR_RETURN(Tensor* y, ctx->allocate_output(0, p.out_shape, x.dtype()));
    if (y->NumElements() == 0) return absl::OkStatus();
    ASSIGN_OR_RETURN(IndexMap map, CopyMap(Dims(p.out_shape), p.in_strides,
                                           RowMajorStrides(p.out_shape)));
    return LaunchStridedCopy(ElementBytes(x), x.raw_data(), 0, y->raw_data(), 0,
                             map, gpu.stream);
  }
};

class GatherKernel final : public OpKernel {
 public:
  struct Attrs {
    int64_t axis = 0;
  };
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    Attrs a;
    ASSIGN_OR_RETURN(a.axis, node.attrs().GetInt("axis"));
    return a;
  }
  GatherKernel(const Node& node, Attrs attrs)
      : OpKernel(node), axis_attr_(attrs.axis) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    const bool host_indices = ctx->num_inputs() == 2 &&
                              ctx->input(1).valid() && ctx->input(1).on_host();
    if (host_indices) {
      RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu, {1}));
    } else {
      RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu));
    }
    const Tensor& params = ctx->input(0);
    Tensor indices = ctx->input(1);
    if (indices.dtype() != DT_INT32 && indices.dtype() != DT_INT64) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Gather indices must be int32 or int64, got ",
          DataTypeName(indices.dtype())));
    }
    const bool i64 = indices.dtype() == DT_INT64;
    const int64_t axis_attr = axis_attr_;
    ASSIGN_OR_RETURN(Shape out, GatherShape(params.shape(), indices.shape(), axis_attr));
    ASSIGN_OR_RETURN(int axis, NormalizeAxis(axis_attr, params.rank()));
    const int64_t axis_dim = params.dim(axis);
    const int64_t n = indices.NumElements();
    if (host_indices) {  // check here: no GPU round trip
      for (int64_t i = 0; i < n; ++i) {
        const int64_t v = i64 ? indices.data<int64_t>()[i]
                              : indices.data<int32_t>()[i];
        if (v < -axis_dim || v >= axis_dim) return BadIndex(v, i, axis_dim);
      }
      ASSIGN_OR_RETURN(indices, gpu.device->CopyToDevice(indices));
    }
    ASSIGN_OR_RETURN(Tensor* y, ctx->allocate_output(0, out, params.dtype()));
    if (y->NumElements() == 0) return absl::OkStatus();
    int64_t outer = 1;
    for (int d = 0; d < axis; ++d) outer *= params.dim(d);
    int64_t inner = 1;
    for (int d = axis + 1; d < params.rank(); ++d) inner *= params.dim(d);
    // Device indices in a step being recorded: the graph checks them after
    // each launch (an error word it zeroes), with no wait here.
    const bool recorded = !host_indices && CapturingOnThisThread(gpu.device);
    unsigned long long* bad = nullptr;
    Tensor flag;
    if (recorded) {
      // The graph's error names the node, as the executor's would.
      ASSIGN_OR_RETURN(
          bad, RecordErrorWord(gpu.device, [indices, i64, axis_dim,
                                            name = ctx->node().DebugName()](
                                               uint64_t position) {
            absl::Status s = ReadBadIndex(indices, i64, axis_dim, position);
            return absl::Status(s.code(), absl::StrCat(name, ": ", s.message()));
          }));
    } else {
      ASSIGN_OR_RETURN(flag, ctx->allocate_temp(DT_INT64, Shape({1})));
      bad = static_cast<unsigned long long*>(flag.raw_data());
      RETURN_IF_ERROR(Cuda(cudaMemsetAsync(bad, 0, sizeof(*bad), gpu.stream)));
    }
    RETURN_IF_ERROR(LaunchGather(ElementBytes(params), params.raw_data(),
                                 indices.raw_data(), i64, y->raw_data(), outer,
                                 axis_dim, inner, n, bad, gpu.stream));
    if (host_indices || recorded) return absl::OkStatus();
    // Indices computed on the GPU: read the flag back (a host wait).
    unsigned long long position = 0;
    RETURN_IF_ERROR(Cuda(cudaMemcpyAsync(&position, bad, sizeof(position),
                                         cudaMemcpyDeviceToHost, gpu.stream)));
    gpu.device->NoteKernelHostWait();
    RETURN_IF_ERROR(Cuda(cudaStreamSynchronize(gpu.stream)));
    if (position == 0) return absl::OkStatus();
    return ReadBadIndex(indices, i64, axis_dim, position);
  }

 private:
  const int64_t axis_attr_;

  // The error for a set flag (`position` is the bad index's position + 1),
  // reading that index from the GPU.
  static absl::Status ReadBadIndex(const Tensor& indices, bool i64,
                                   int64_t axis_dim, uint64_t position) {
    const int64_t k = static_cast<int64_t>(position - 1);
    int64_t value = 0;
    const char* src = static_cast<const char*>(indices.raw_data()) +
                      k * static_cast<int64_t>(DataTypeSize(indices.dtype()));
    if (i64) {
      RETURN_IF_ERROR(Cuda(cudaMemcpy(&value, src, 8, cudaMemcpyDeviceToHost)));
    } else {
      int32_t v32 = 0;
      RETURN_IF_ERROR(Cuda(cudaMemcpy(&v32, src, 4, cudaMemcpyDeviceToHost)));
      value = v32;
    }
    return BadIndex(value, k, axis_dim);
  }

  static absl::Status BadIndex(int64_t value, int64_t position, int64_t dim) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Gather index ", value, " at position ", position,
        " is out of range for an axis of size ", dim, " (valid: [", -dim,
        ", ", dim, "))"));
  }
  static absl::Status Cuda(cudaError_t err) {
    if (err == cudaSuccess) return absl::OkStatus();
    cudaGetLastError();
    return absl::InternalError(absl::StrCat("Gather: ", cudaGetErrorString(err)));
  }
};

}  // namespace

void RegisterArrayKernels(KernelRegistry* registry) {
  RegisterGpu(registry, "Const", {}, MakeKernel<ConstKernel>);
  RegisterGpu(registry, "Input", {}, MakeKernel<InputKernel>);
  RegisterGpu(registry, "Identity", {{"T", GpuAllTypes()}},
              MakeKernel<ViewKernel<ParseIdentityAttrs>>);
  RegisterGpu(registry, "Reshape", {{"T", GpuAllTypes()}},
              MakeKernel<ViewKernel<ParseReshapeAttrs>>);
  RegisterGpu(registry, "Squeeze", {{"T", GpuAllTypes()}},
              MakeKernel<ViewKernel<ParseSqueezeAttrs>>);
  RegisterGpu(registry, "Unsqueeze", {{"T", GpuAllTypes()}},
              MakeKernel<ViewKernel<ParseUnsqueezeAttrs>>);
  RegisterGpu(registry, "DynamicReshape", {{"T", GpuAllTypes()}},
              MakeKernel<ViewKernel<ParseDynamicReshapeAttrs>>, /*host_memory_inputs=*/{1});
  RegisterGpu(registry, "DynamicSqueeze", {{"T", GpuAllTypes()}},
              MakeKernel<ViewKernel<ParseDynamicSqueezeAttrs>>, /*host_memory_inputs=*/{1});
  RegisterGpu(registry, "DynamicUnsqueeze", {{"T", GpuAllTypes()}},
              MakeKernel<ViewKernel<ParseDynamicUnsqueezeAttrs>>,
              /*host_memory_inputs=*/{1});
  // Strided copies index at most kMaxGpuDims dimensions.
  RegisterGpu(registry, "Transpose", {{"T", GpuAllTypes()}},
              MakeKernel<TransposeKernel>, {}, RanksAtMost(kMaxGpuDims));
  RegisterGpu(registry, "Concat", {{"T", GpuAllTypes()}},
              MakeKernel<ConcatKernel>, {}, RanksAtMost(kMaxGpuDims));
  RegisterGpu(registry, "Split", {{"T", GpuAllTypes()}},
              MakeKernel<SplitKernel<ParseSplitAttrs>>, {}, RanksAtMost(kMaxGpuDims));
  RegisterGpu(registry, "DynamicSplit", {{"T", GpuAllTypes()}},
              MakeKernel<SplitKernel<ParseDynamicSplitAttrs>>, /*host_memory_inputs=*/{1},
              RanksAtMost(kMaxGpuDims));
  RegisterGpu(registry, "Slice", {{"T", GpuAllTypes()}},
              MakeKernel<SliceKernel>, {}, RanksAtMost(kMaxGpuDims));
  RegisterGpu(registry, "Expand", {{"T", GpuAllTypes()}},
              MakeKernel<ExpandKernel<ParseExpandAttrs>>, {}, RanksAtMost(kMaxGpuDims));
  RegisterGpu(registry, "DynamicExpand", {{"T", GpuAllTypes()}},
              MakeKernel<ExpandKernel<ParseDynamicExpandAttrs>>, /*host_memory_inputs=*/{1},
              RanksAtMost(kMaxGpuDims));
  // Indices in host memory when the executor can keep them there: checked
  // on the host, no GPU round trip.
  // A step recorded as a CUDA graph may give it its fed indices in GPU
  // memory: they are then checked by the graph (RecordErrorWord).
  KernelDef gather;
  gather.op = "Gather";
  gather.device = DeviceType::kGpu;
  gather.type_constraints = {{"T", GpuAllTypes()},
                             {"Tindices", {DT_INT32, DT_INT64}}};
  gather.factory = MakeKernel<GatherKernel>;
  gather.host_memory_inputs = {1};
  gather.stageable_host_inputs = {1};
  registry->Register(std::move(gather));
}

}  // namespace sluice::cuda

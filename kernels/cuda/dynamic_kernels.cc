// CUDA OpKernels for the runtime-parameter ops (docs/ops.md, "Runtime
// parameters"): Shape and Size (their int64 results written by a launch),
// DynamicReshape / DynamicSqueeze / DynamicUnsqueeze (the input's buffer,
// reshaped), DynamicSlice, DynamicExpand and Tile (strided copies), Fill
// and Range. Their parameter inputs arrive in host memory
// (host_memory_inputs), where the shapes are computed as on the CPU.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/runtime_params.h"
#include "graph/shape_fns.h"
#include "kernels/cuda/cuda_kernel_util.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/fill.h"
#include "kernels/cuda/shape_copy.h"
#include "kernels/dynamic_params.h"
#include "kernels/launch_kernel.h"

namespace sluice::cuda {
namespace {

// The setup of Shape, Fill and Range is kernels/dynamic_params.h.
class ShapeKernel final : public LaunchKernel<ShapeAttrs, ParseShapeAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  // The dims are passed to the kernel by value: at most kMaxSmallInt64s.
  static absl::Status Supports(const Node& node) {
    const Shape& x = node.input_shape(0);
    if (!x.unknown_rank() && x.rank() > kMaxSmallInt64s) {
      return absl::UnimplementedError(absl::StrCat(
          "Shape of rank ", x.rank(), " > ", kMaxSmallInt64s, " on the GPU"));
    }
    return absl::OkStatus();
  }

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    const Tensor& x = ctx->input(0);
    const ShapePlan p = PlanShape(attrs(), x.shape());
    if (p.dims.size() > static_cast<size_t>(kMaxSmallInt64s)) {
      return absl::UnimplementedError(
          absl::StrCat("Shape of rank ", x.rank(), " on the GPU"));
    }
    SmallInt64s dims;
    dims.count = static_cast<int>(p.dims.size());
    std::copy(p.dims.begin(), p.dims.end(), dims.values);
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, p.out_shape, DT_INT64));
    return LaunchWriteInt64s(y->data<int64_t>(), dims, gpu.stream);
  }
};

class SizeKernel final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    SmallInt64s n;
    n.count = 1;
    n.values[0] = ctx->input(0).NumElements();
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, Shape({}), DT_INT64));
    return LaunchWriteInt64s(y->data<int64_t>(), n, gpu.stream);
  }
};

class DynamicSliceKernel final : public OpKernel {
 public:
  struct Attrs {};
  static absl::StatusOr<Attrs> ParseAttrs(const Node&) { return Attrs{}; }
  DynamicSliceKernel(const Node& node, Attrs) : OpKernel(node) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu, {1, 2, 3, 4}));
    ASSIGN_OR_RETURN(std::vector<int64_t> begin,
                     IntParamValues(ctx->input(1), "starts"));
    ASSIGN_OR_RETURN(std::vector<int64_t> end,
                     IntParamValues(ctx->input(2), "ends"));
    ASSIGN_OR_RETURN(std::vector<int64_t> axes,
                     IntParamValues(ctx->input(3), "axes"));
    ASSIGN_OR_RETURN(std::vector<int64_t> steps,
                     IntParamValues(ctx->input(4), "steps"));
    return SliceInto(ctx, gpu, ctx->input(0), begin, end, std::move(axes),
                     std::move(steps));
  }
};

// Tile: a strided copy driven by input 1 (the repeats).
class TileKernel final : public OpKernel {
 public:
  struct Attrs {};
  static absl::StatusOr<Attrs> ParseAttrs(const Node&) { return Attrs{}; }
  TileKernel(const Node& node, Attrs) : OpKernel(node) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu, {1}));
    ASSIGN_OR_RETURN(std::vector<int64_t> repeats,
                     IntParamValues(ctx->input(1), "repeats"));
    return TileInto(ctx, gpu, ctx->input(0), repeats);
  }
};

class FillKernel final : public LaunchKernel<FillAttrs, ParseFillAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu, {0}));
    ASSIGN_OR_RETURN(Shape shape, PlanFill(ctx->input(0)));
    const size_t size = DataTypeSize(attrs().dtype);
    uint64_t bits = 0;
    if (size > sizeof(bits)) {
      return absl::UnimplementedError(absl::StrCat(
          "Fill of ", DataTypeName(attrs().dtype), " on the GPU"));
    }
    std::memcpy(&bits, attrs().value.raw_data(), size);
    ASSIGN_OR_RETURN(Tensor * y,
                     ctx->allocate_output(0, shape, attrs().dtype));
    return LaunchFillBits(y->raw_data(), y->NumElements(),
                          static_cast<int>(size), bits, gpu.stream);
  }
};

class RangeKernel final : public LaunchKernel<RangeAttrs, ParseRangeAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu, {0, 1, 2}));
    const DataType t = attrs().t;
    if (t != DT_FLOAT && t != DT_DOUBLE && t != DT_INT32 && t != DT_INT64) {
      return absl::UnimplementedError(
          absl::StrCat("Range of ", DataTypeName(t), " on the GPU"));
    }
    ASSIGN_OR_RETURN(RangePlan p, PlanRange(attrs(), ctx->input(0),
                                            ctx->input(1), ctx->input(2)));
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, p.out_shape, t));
    return LaunchRange(ToGpuDtype(t), y->raw_data(), p.n, p.start, p.delta,
                       p.istart, p.idelta, gpu.stream);
  }
};

}  // namespace

void RegisterDynamicKernels(KernelRegistry* registry) {
  RegisterGpu(registry, "Shape", {{"T", GpuAllTypes()}},
              MakeKernel<ShapeKernel>, {}, ShapeKernel::Supports);
  RegisterGpu(registry, "Size", {{"T", GpuAllTypes()}},
              MakeKernel<SizeKernel>);
  RegisterGpu(registry, "DynamicSlice", {{"T", GpuAllTypes()}},
              MakeKernel<DynamicSliceKernel>, {1, 2, 3, 4},
              RanksAtMost(kMaxGpuDims));
  // Tile iterates [repeats, dim] pairs: twice the rank before merging.
  RegisterGpu(registry, "Tile", {{"T", GpuAllTypes()}},
              MakeKernel<TileKernel>, {1},
              RanksAtMost(kMaxGpuDims / 2));
  RegisterGpu(registry, "Fill", {{"dtype", GpuAllTypes()}},
              MakeKernel<FillKernel>, {0});
  RegisterGpu(registry, "Range",
              {{"T", {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64}}},
              MakeKernel<RangeKernel>, {0, 1, 2});
}

}  // namespace sluice::cuda

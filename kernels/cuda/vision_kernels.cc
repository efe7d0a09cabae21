// CUDA OpKernels for Resize, Pad, PoolND, MaxPoolWithIndices, GridSample,
// AffineGrid, MaxUnpool, RoiAlign and NonMaxSuppression. Parameters that
// ONNX passes as inputs (Resize's roi, scales and sizes; Pad's pads, value
// and axes; AffineGrid's size; MaxUnpool's indices and output_shape;
// RoiAlign's batch_indices; NonMaxSuppression's count and thresholds) are
// host-memory inputs, read here
// as the CPU kernels read them; the attributes, shapes and error messages
// come from the functions the CPU kernels use (kernels/vision_params.h,
// graph/vision_shapes.h).
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/runtime_params.h"
#include "graph/vision_shapes.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/cuda/cuda_kernel_util.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/nms.h"
#include "kernels/cuda/pool_grid.h"
#include "kernels/cuda/resize_pad.h"
#include "kernels/cuda/scatter_gather.h"
#include "kernels/launch_kernel.h"
#include "kernels/vision_params.h"

namespace sluice::cuda {
namespace {

using cpu::CheckDtype;
using cpu::CheckRank;

absl::StatusOr<ResizeParams> ToResizeParams(const ResizeAttrs& a) {
  ResizeParams p;
  p.mode = a.mode == "nearest"  ? ResizeMode::kNearest
           : a.mode == "linear" ? ResizeMode::kLinear
                                : ResizeMode::kCubic;
  const std::string& t = a.transform;
  p.transform = t == "half_pixel_symmetric" ? ResizeTransform::kHalfPixelSymmetric
                : t == "pytorch_half_pixel" ? ResizeTransform::kPytorchHalfPixel
                : t == "align_corners"      ? ResizeTransform::kAlignCorners
                : t == "asymmetric"         ? ResizeTransform::kAsymmetric
                : t == "tf_crop_and_resize" ? ResizeTransform::kTfCropAndResize
                                            : ResizeTransform::kHalfPixel;
  const std::string& n = a.nearest_mode;
  p.nearest = n == "round_prefer_ceil" ? NearestMode::kRoundPreferCeil
              : n == "floor"           ? NearestMode::kFloor
              : n == "ceil"            ? NearestMode::kCeil
                                       : NearestMode::kRoundPreferFloor;
  p.cubic_a = a.cubic_a;
  p.exclude_outside = a.exclude_outside;
  p.antialias = a.antialias;
  p.extrapolation = a.extrapolation;
  return p;
}

class ResizeKernel final : public OpKernel {
 public:
  struct Attrs {
    ResizeAttrs attrs;
    ResizeParams params;
  };
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    Attrs a;
    ASSIGN_OR_RETURN(a.attrs, ParseResizeAttrs(node));
    ASSIGN_OR_RETURN(a.params, ToResizeParams(a.attrs));
    return a;
  }
  ResizeKernel(const Node& node, Attrs attrs)
      : OpKernel(node), a_(std::move(attrs)) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu, /*host_inputs=*/{1, 2, 3}));
    const Tensor& x = ctx->input(0);
    ASSIGN_OR_RETURN(ResizePlan p,
                     PlanResize(a_.attrs, x, ctx->input(1), ctx->input(2),
                                ctx->input(3)));
    const int rank = x.rank();
    const std::vector<int64_t>& in_dims = p.in_dims;
    const std::vector<int64_t>& out_dims = p.out_dims;
    const std::vector<double>& scale = p.scale;
    const std::vector<double>& roi_start = p.roi_start;
    const std::vector<double>& roi_end = p.roi_end;
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, Shape(out_dims)));
    if (y->NumElements() == 0) return absl::OkStatus();
    if (x.NumElements() == 0) {
      return absl::InvalidArgumentError(
          "Resize of an empty input to a non-empty output");
    }
    // The passes, as on the CPU: every axis that is not the identity.
    const bool crop = a_.params.transform == ResizeTransform::kTfCropAndResize;
    std::vector<ResizeAxisGeometry> passes;
    std::vector<int64_t> dims = in_dims;
    int64_t largest = x.NumElements();
    for (int d = 0; d < rank; ++d) {
      if (dims[d] == out_dims[d] && scale[d] == 1.0 && !crop) continue;
      ResizeAxisGeometry g;
      for (int i = 0; i < d; ++i) g.outer *= dims[i];
      for (int i = d + 1; i < rank; ++i) g.inner *= dims[i];
      g.in_len = dims[d];
      g.out_len = out_dims[d];
      g.scale = scale[d];
      g.roi_start = roi_start[d];
      g.roi_end = roi_end[d];
      passes.push_back(g);
      dims[d] = out_dims[d];
      largest = std::max(largest, g.outer * g.out_len * g.inner);
    }
    const GpuDtype dtype = ToGpuDtype(x.dtype());
    ASSIGN_OR_RETURN(Tensor a, ctx->allocate_temp(DT_DOUBLE, Shape({largest})));
    Tensor b;
    if (!passes.empty()) {
      ASSIGN_OR_RETURN(b, ctx->allocate_temp(DT_DOUBLE, Shape({largest})));
    }
    double* cur = a.data<double>();
    double* next = passes.empty() ? nullptr : b.data<double>();
    RETURN_IF_ERROR(
        LaunchToDouble(dtype, x.raw_data(), cur, x.NumElements(), gpu.stream));
    for (const ResizeAxisGeometry& g : passes) {
      RETURN_IF_ERROR(LaunchResizeAxis(a_.params, g, cur, next, gpu.stream));
      std::swap(cur, next);
    }
    return LaunchFromDouble(dtype, cur, y->raw_data(), y->NumElements(),
                            gpu.stream);
  }

 private:
  const Attrs a_;
};

class PadKernel final : public LaunchKernel<PadMode, ParsePadMode> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu, /*host_inputs=*/{1, 2, 3}));
    const Tensor& x = ctx->input(0);
    const Tensor& value = ctx->input(2);
    ASSIGN_OR_RETURN(std::vector<PadAxis> pad_axes,
                     PlanPad(x, ctx->input(1), value, ctx->input(3),
                             attrs()));
    const int rank = x.rank();
    if (rank > kMaxGpuDims) {
      return absl::UnimplementedError(absl::StrCat(
          "rank ", rank, " > ", kMaxGpuDims,
          ": CUDA kernels index at most ", kMaxGpuDims, " dimensions"));
    }
    PadGeometry g;
    g.mode = static_cast<GpuPadMode>(static_cast<int>(attrs()));
    g.rank = rank;
    const std::vector<int64_t> strides = RowMajorStrides(x.shape());
    std::vector<int64_t> dims(rank);
    for (int d = 0; d < rank; ++d) {
      dims[d] = pad_axes[d].out;
      g.out_dims[d] = pad_axes[d].out;
      g.in_strides[d] = strides[d];
      g.begin[d] = pad_axes[d].begin;
      g.lo[d] = pad_axes[d].lo;
      g.len[d] = pad_axes[d].len;
    }
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, Shape(dims)));
    g.total = y->NumElements();
    if (g.total == 0) return absl::OkStatus();
    const int bytes = static_cast<int>(DataTypeSize(x.dtype()));
    uint64_t fill = 0;
    if (value.NumElements() == 1) std::memcpy(&fill, value.raw_data(), bytes);
    return LaunchPad(bytes, g, x.raw_data(), fill, y->raw_data(), gpu.stream);
  }
};

// PoolND and MaxPoolWithIndices (the latter's attrs say indices).
class PoolNdKernel final : public OpKernel {
 public:
  using Attrs = PoolAttrs;
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    return ParsePoolAttrs(node);
  }
  // At most kMaxSpatialDims window dims, whether or not shapes are known.
  static absl::Status Supports(const Node& node) {
    ASSIGN_OR_RETURN(std::vector<int64_t> kernel,
                     node.attrs().GetIntList("kernel_shape"));
    if (kernel.size() > static_cast<size_t>(kMaxSpatialDims)) {
      return absl::UnimplementedError(
          absl::StrCat(kernel.size(), " spatial dims > ", kMaxSpatialDims,
                       ": the CUDA pools take at most ", kMaxSpatialDims));
    }
    return absl::OkStatus();
  }
  PoolNdKernel(const Node& node, Attrs attrs)
      : OpKernel(node), a_(std::move(attrs)) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu));
    const Tensor& x = ctx->input(0);
    const size_t n = a_.kernel.size();
    RETURN_IF_ERROR(CheckRank(x, static_cast<int>(n) + 2, "pool input"));
    PoolGeometry g;
    g.mode = a_.mode == PoolMode::kMax   ? GpuPoolMode::kMax
             : a_.mode == PoolMode::kAvg ? GpuPoolMode::kAvg
                                         : GpuPoolMode::kLp;
    g.n = static_cast<int>(n);
    g.planes = x.dim(0) * x.dim(1);
    g.include_pad = a_.include_pad;
    g.p = a_.p;
    g.storage_order = a_.storage_order;
    std::vector<int64_t> dims = {x.dim(0), x.dim(1)};
    for (size_t d = 0; d < n; ++d) {
      ASSIGN_OR_RETURN(int64_t o,
                       PoolOutputSize(x.dim(2 + d), a_.kernel[d],
                                      a_.strides[d], a_.pads[d],
                                      a_.pads[n + d], a_.dilations[d],
                                      a_.ceil_mode));
      dims.push_back(o);
      g.in[d] = x.dim(2 + d);
      g.out[d] = o;
      g.kernel[d] = a_.kernel[d];
      g.strides[d] = a_.strides[d];
      g.dilations[d] = a_.dilations[d];
      g.pad_begin[d] = a_.pads[d];
      g.pad_end[d] = a_.pads[n + d];
    }
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, Shape(dims)));
    Tensor* indices = nullptr;
    if (a_.indices) {
      ASSIGN_OR_RETURN(indices, ctx->allocate_output(1, Shape(dims)));
    }
    if (y->NumElements() == 0) return absl::OkStatus();
    return LaunchPool(ToGpuDtype(x.dtype()), g, x.raw_data(), y->raw_data(),
                      indices != nullptr ? indices->data<int64_t>() : nullptr,
                      gpu.stream);
  }

 private:
  const Attrs a_;
};

class GridSampleKernel final
    : public LaunchKernel<GridSampleAttrs, ParseGridSampleAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu));
    const Tensor& x = ctx->input(0);
    const Tensor& grid = ctx->input(1);
    ASSIGN_OR_RETURN(std::vector<int64_t> dims, GridSampleDims(x, grid));
    const int r = x.rank() - 2;
    if (r > kMaxSpatialDims) {
      return absl::UnimplementedError(
          absl::StrCat(r, " spatial dims > ", kMaxSpatialDims,
                       ": CUDA GridSample takes at most ", kMaxSpatialDims));
    }
    GridSampleGeometry g;
    g.interp = attrs().interp;
    g.padding = attrs().padding;
    g.align_corners = attrs().align_corners;
    g.r = r;
    g.batch = x.dim(0);
    g.channels = x.dim(1);
    g.out_plane = 1;
    for (int d = 0; d < r; ++d) {
      g.in[d] = x.dim(2 + d);
      g.out_plane *= grid.dim(1 + d);
    }
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, Shape(dims)));
    if (y->NumElements() == 0) return absl::OkStatus();
    return LaunchGridSample(ToGpuDtype(x.dtype()), g, x.raw_data(),
                            grid.raw_data(), y->raw_data(), gpu.stream);
  }
};

class AffineGridKernel final
    : public LaunchKernel<AffineGridAttrs, ParseAffineGridAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu, /*host_inputs=*/{1}));
    const Tensor& theta = ctx->input(0);
    ASSIGN_OR_RETURN(std::vector<int64_t> size,
                     IntParamValues(ctx->input(1), "size"));
    ASSIGN_OR_RETURN(std::vector<int64_t> dims, AffineGridDims(theta, size));
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, Shape(dims)));
    if (y->NumElements() == 0) return absl::OkStatus();
    const int r = static_cast<int>(size.size()) - 2;
    return LaunchAffineGrid(ToGpuDtype(theta.dtype()), theta.raw_data(),
                            y->raw_data(), size[0], r, size.data() + 2,
                            attrs().align_corners, gpu.stream);
  }
};

// Indices read and checked in host memory; each output element gathers the
// input element that the CPU's in-order scatter leaves there (the last
// one written), or zero.
class MaxUnpoolKernel final
    : public LaunchKernel<MaxUnpoolAttrs, ParseMaxUnpoolAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu, /*host_inputs=*/{1, 2}));
    const Tensor& x = ctx->input(0);
    const Tensor& idx = ctx->input(1);
    ASSIGN_OR_RETURN(std::vector<int64_t> dims,
                     PlanMaxUnpool(attrs(), x, idx, ctx->input(2)));
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, Shape(dims)));
    const int64_t total = y->NumElements();
    std::vector<int64_t> source(total, -1);
    const int64_t* where = idx.data<int64_t>();
    for (int64_t i = 0; i < x.NumElements(); ++i) source[where[i]] = i;
    if (total == 0) return absl::OkStatus();
    ASSIGN_OR_RETURN(Tensor source_dev,
                     gpu.device->CopyToDevice(Tensor::FromVector<int64_t>(
                         source, Shape({total}))));
    return LaunchGatherSlices(static_cast<int>(DataTypeSize(x.dtype())),
                              x.raw_data(), x.NumElements(),
                              source_dev.data<int64_t>(), y->raw_data(), total,
                              /*slice=*/1, gpu.stream);
  }
};

class RoiAlignKernel final
    : public LaunchKernel<RoiAlignAttrs, ParseRoiAlignAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu, /*host_inputs=*/{2}));
    const Tensor& x = ctx->input(0);
    const Tensor& rois = ctx->input(1);
    ASSIGN_OR_RETURN(std::vector<int64_t> batch,
                     IntParamValues(ctx->input(2), "batch_indices"));
    RETURN_IF_ERROR(CheckRoiAlignInputs(x, rois, batch));
    ASSIGN_OR_RETURN(
        Tensor * y,
        ctx->allocate_output(0, Shape({rois.dim(0), x.dim(1), attrs().out_h,
                                       attrs().out_w})));
    if (y->NumElements() == 0) return absl::OkStatus();
    RoiAlignGeometry g;
    g.half_pixel = attrs().half_pixel;
    g.max = attrs().max;
    g.out_h = attrs().out_h;
    g.out_w = attrs().out_w;
    g.sampling_ratio = attrs().sampling_ratio;
    g.spatial_scale = attrs().spatial_scale;
    g.rois = rois.dim(0);
    g.channels = x.dim(1);
    g.h = x.dim(2);
    g.w = x.dim(3);
    ASSIGN_OR_RETURN(Tensor batch_dev,
                     gpu.device->CopyToDevice(Tensor::FromVector<int64_t>(
                         batch, Shape({g.rois}))));
    return LaunchRoiAlign(ToGpuDtype(x.dtype()), g, x.raw_data(),
                          rois.raw_data(), batch_dev.data<int64_t>(),
                          y->raw_data(), gpu.stream);
  }
};

// Boxes and scores on the GPU, the parameters in host memory; the row
// count is read back (a wait for the GPU) to allocate the output.
class NmsKernel final : public LaunchKernel<NmsAttrs, ParseNmsAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu, /*host_inputs=*/{2, 3, 4}));
    const Tensor& boxes = ctx->input(0);
    const Tensor& scores = ctx->input(1);
    ASSIGN_OR_RETURN(NmsPlan plan, PlanNms(boxes, scores, ctx->input(2),
                                           ctx->input(3), ctx->input(4)));
    NmsProblem p;
    p.batches = plan.batches;
    p.classes = plan.classes;
    p.boxes = plan.boxes;
    p.max_per_class = plan.max_per_class;
    p.iou_threshold = plan.iou_threshold;
    p.thresholded = plan.thresholded;
    p.score_threshold = plan.score_threshold;
    p.center = attrs().center;
    if (p.batches * p.classes * p.boxes == 0 || p.max_per_class == 0) {
      return ctx->allocate_output(0, Shape({0, 3})).status();
    }
    ASSIGN_OR_RETURN(size_t bytes, NmsScratchBytes(p));
    ASSIGN_OR_RETURN(Tensor scratch,
                     ctx->allocate_temp(DT_UINT8, Shape({static_cast<int64_t>(bytes)})));
    RETURN_IF_ERROR(LaunchNmsSelect(boxes.data<float>(), scores.data<float>(), p,
                                    scratch.raw_data(), bytes, gpu.stream));
    ASSIGN_OR_RETURN(const int64_t* total, NmsTotal(p, scratch.raw_data()));
    ASSIGN_OR_RETURN(uint64_t rows, ReadDeviceFlag(gpu, total));
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(
                                     0, Shape({static_cast<int64_t>(rows), 3})));
    if (rows == 0) return absl::OkStatus();
    return LaunchNmsWrite(p, scratch.raw_data(), y->data<int64_t>(), gpu.stream);
  }
};

// Enum values the launchers' copies must share.
static_assert(static_cast<int>(PadMode::kWrap) ==
              static_cast<int>(GpuPadMode::kWrap));
}  // namespace

void RegisterVisionKernels(KernelRegistry* registry) {
  RegisterGpu(registry, "Resize",
              {{"T", GpuTypesWhere(HasResizeKernel, GpuIntFloatTypes())}},
              MakeKernel<ResizeKernel>, /*host_memory_inputs=*/{1, 2, 3});
  RegisterGpu(registry, "Pad", {{"T", GpuAllTypes()}}, MakeKernel<PadKernel>,
              /*host_memory_inputs=*/{1, 2, 3}, RanksAtMost(kMaxGpuDims));
  const std::vector<DataType> pool_types =
      GpuTypesWhere(HasPoolKernel, GpuAllTypes());
  RegisterGpu(registry, "PoolND", {{"T", pool_types}},
              MakeKernel<PoolNdKernel>, {}, PoolNdKernel::Supports);
  RegisterGpu(registry, "MaxPoolWithIndices", {{"T", pool_types}},
              MakeKernel<PoolNdKernel>, {}, PoolNdKernel::Supports);
  RegisterGpu(registry, "GridSample",
              {{"T", GpuTypesWhere(HasGridSampleKernel, GpuFloatTypes())}},
              MakeKernel<GridSampleKernel>, {}, RanksAtMost(kMaxGpuDims));
  RegisterGpu(registry, "AffineGrid",
              {{"T", GpuTypesWhere(HasGridSampleKernel, GpuFloatTypes())}},
              MakeKernel<AffineGridKernel>, /*host_memory_inputs=*/{1});
  RegisterGpu(registry, "MaxUnpool", {{"T", GpuAllTypes()}},
              MakeKernel<MaxUnpoolKernel>, /*host_memory_inputs=*/{1, 2});
  RegisterGpu(registry, "RoiAlign",
              {{"T", GpuTypesWhere(HasGridSampleKernel, GpuFloatTypes())}},
              MakeKernel<RoiAlignKernel>, /*host_memory_inputs=*/{2});
  KernelDef nms = GpuKernelDef("NonMaxSuppression", {}, MakeKernel<NmsKernel>,
                               /*host_memory_inputs=*/{2, 3, 4});
  nms.sizes_outputs_from_gpu_values = true;
  registry->Register(std::move(nms));
}

}  // namespace sluice::cuda

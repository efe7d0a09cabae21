// CUDA OpKernels for Softmax, LayerNorm, RMSNorm, the reductions, Conv2D,
// FusedConv2D and the pools. Conv2D runs on cuDNN where it can (cudnn_conv.h), else on the
// direct kernels (conv_pool.h for float32, conv_nd.h for the other floats).
// NHWC nodes (data_format) run on cuDNN with NHWC descriptors, on
// conv_pool.h's direct float32 kernel and pools in NHWC, and on conv_nd.h's
// NCHW kernels between permutations for the other floats.
#include <algorithm>
#include <array>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/data_format.h"
#include "graph/runtime_params.h"
#include "graph/shape_fns.h"
#include "kernels/cuda/bias_activation.h"
#include "kernels/cuda/conv_nd.h"
#include "kernels/cuda/conv_pool.h"
#include "kernels/cuda/copy.h"
#include "kernels/cuda/cuda_kernel_util.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/cudnn_conv.h"
#include "kernels/cuda/normalization.h"
#include "kernels/cuda/reduce.h"
#include "kernels/launch_kernel.h"
#include "kernels/reduce_params.h"
#include "kernels/normalization_params.h"

namespace sluice::cuda {
namespace {

// The launches of Softmax, LayerNorm and RMSNorm on the GPU; their setup is
// kernels/normalization_params.h.
class SoftmaxKernel final
    : public LaunchKernel<SoftmaxAttrs, ParseSoftmaxAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu));
    const Tensor& x = ctx->input(0);
    ASSIGN_OR_RETURN(SoftmaxPlan p, PlanSoftmax(attrs(), x.shape()));
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, p.out_shape, x.dtype()));
    return LaunchSoftmax(ToGpuDtype(x.dtype()), x.raw_data(), y->raw_data(),
                         p.outer, p.n, p.inner, gpu.stream);
  }
};

// LayerNorm (kBias) and RMSNorm.
template <bool kBias>
class NormKernel final : public LaunchKernel<NormAttrs, ParseNormAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu));
    const Tensor& x = ctx->input(0);
    const Tensor& scale = ctx->input(1);
    NormPlan p;
    if constexpr (kBias) {
      ASSIGN_OR_RETURN(p, PlanLayerNorm(attrs(), x, scale, ctx->input(2)));
    } else {
      ASSIGN_OR_RETURN(p, PlanRmsNorm(attrs(), x, scale));
    }
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, p.out_shape, x.dtype()));
    if constexpr (kBias) {
      return LaunchLayerNorm(ToGpuDtype(x.dtype()), x.raw_data(),
                             scale.raw_data(), ctx->input(2).raw_data(),
                             y->raw_data(), p.rows, p.n, attrs().epsilon,
                             gpu.stream);
    } else {
      return LaunchRMSNorm(ToGpuDtype(x.dtype()), x.raw_data(),
                           scale.raw_data(), y->raw_data(), p.rows, p.n,
                           attrs().epsilon, gpu.stream);
    }
  }
};

// Builds the map for reducing `axes` (normalised, any order) of `in`.
ReduceMap MakeReduceMap(const Shape& in, const std::vector<bool>& reduced) {
  std::vector<int64_t> strides = RowMajorStrides(in);
  ReduceMap map;
  map.kept.num_elements = 1;
  map.reduced.num_elements = 1;
  for (int d = 0; d < in.rank(); ++d) {
    IndexMap& m = reduced[d] ? map.reduced : map.kept;
    m.num_elements *= in.dim(d);
    if (in.dim(d) == 1) continue;
    if (m.rank > 0 && m.strides[0][m.rank - 1] == strides[d] * in.dim(d)) {
      m.dims[m.rank - 1] *= in.dim(d);  // contiguous with the previous one
      m.strides[0][m.rank - 1] = strides[d];
    } else {
      m.dims[m.rank] = in.dim(d);
      m.strides[0][m.rank] = strides[d];
      ++m.rank;
    }
  }
  return map;
}

// Runs of reduced (which) or kept (!which) dimensions, skipping size-1
// ones. An unknown (-1) dimension counts as larger than 1, which can only
// overstate the runs.
int CountRuns(const Shape& in, const std::vector<bool>& reduced, bool which) {
  int runs = 0;
  bool prev = !which;
  for (int d = 0; d < in.rank(); ++d) {
    if (in.dim(d) == 1) continue;
    if (reduced[d] == which && prev != which) ++runs;
    prev = reduced[d];
  }
  return runs;
}

// ReduceSum/Mean/Max/Min/Prod, and their Dynamic forms, whose axes arrive in host
// memory as input 1 (empty with noop_with_empty_axes: the input as is).
class ReduceKernel final : public OpKernel {
 public:
  using Attrs = ReduceAttrs;
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    return ParseReduceAttrs(node);
  }
  ReduceKernel(const Node& node, ReduceOp op, Attrs attrs)
      : OpKernel(node), op_(op), attrs_(std::move(attrs)) {}

  // The reduce launcher indexes at most kMaxGpuDims runs of reduced and of
  // kept dimensions.
  static absl::Status Supports(const Node& node) {
    ASSIGN_OR_RETURN(Attrs attrs, ParseAttrs(node));
    const Shape& x = node.input_shape(0);
    if (x.unknown_rank() || attrs.dynamic) return absl::OkStatus();
    std::vector<bool> reduced(x.rank(), attrs.axes.empty());
    absl::StatusOr<std::vector<int>> norm = NormalizeAxes(attrs.axes, x.rank());
    if (!norm.ok()) return absl::OkStatus();  // Compute reports it
    for (int a : *norm) reduced[a] = true;
    const int runs = std::max(CountRuns(x, reduced, true),
                              CountRuns(x, reduced, false));
    if (runs > kMaxGpuDims) {
      return absl::UnimplementedError(absl::StrCat(
          "reducing axes of ", x.DebugString(), " leaves ", runs,
          " runs of dimensions > ", kMaxGpuDims));
    }
    return absl::OkStatus();
  }

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    const Tensor& x = ctx->input(0);
    if (attrs_.dynamic) {
      RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu, {1}));
    } else {
      RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu));
    }
    ASSIGN_OR_RETURN(ReducePlanning p,
                     PlanReduce(attrs_, x, attrs_.dynamic ? &ctx->input(1) : nullptr));
    if (p.pass_through) {
      ctx->set_output(0, x);
      return absl::OkStatus();
    }
    return Run(ctx, gpu, x, p.out_shape, p.reduced, op_);
  }

  static absl::Status Run(OpKernelContext* ctx, const GpuContext& gpu,
                          const Tensor& x, const Shape& out,
                          const std::vector<bool>& reduced, ReduceOp op) {
    if (CountRuns(x.shape(), reduced, true) > kMaxGpuDims ||
        CountRuns(x.shape(), reduced, false) > kMaxGpuDims) {
      return absl::UnimplementedError("reduction pattern has too many dimensions");
    }
    // Empty reductions give the identity, as on the CPU (PlanReduce refuses
    // integer means of nothing).
    ReduceMap map = MakeReduceMap(x.shape(), reduced);
    ASSIGN_OR_RETURN(Tensor* y, ctx->allocate_output(0, out, x.dtype()));
    return LaunchReduce(op, ToGpuDtype(x.dtype()), x.raw_data(), y->raw_data(),
                        map, gpu.stream);
  }

 private:
  const ReduceOp op_;
  const Attrs attrs_;
};

class GlobalAvgPoolKernel final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu));
    const Tensor& x = ctx->input(0);
    if (x.rank() != 4) {
      return absl::InvalidArgumentError(absl::StrCat(
          "GlobalAvgPool needs [N,C,H,W], got ", x.shape().DebugString()));
    }
    return ReduceKernel::Run(ctx, gpu, x, Shape({x.dim(0), x.dim(1), 1, 1}),
                             {false, false, true, true}, ReduceOp::kMean);
  }
};

absl::StatusOr<Conv2DParams> ReadWindow(const Node& node, bool conv) {
  Conv2DParams p;
  ASSIGN_OR_RETURN(p.strides, node.attrs().GetIntList("strides"));
  ASSIGN_OR_RETURN(p.pads, node.attrs().GetIntList("pads"));
  if (conv) {
    ASSIGN_OR_RETURN(p.dilations, node.attrs().GetIntList("dilations"));
    ASSIGN_OR_RETURN(p.group, node.attrs().GetInt("group"));
  }
  RETURN_IF_ERROR(CheckConv2DParams(p));
  return p;
}

// out = transpose(in, perm) on `stream` (rank 4, any dtype; out allocated
// with the permuted shape).
absl::Status Permute4(const Tensor& in, const std::array<int64_t, 4>& perm,
                      const Tensor& out, cudaStream_t stream) {
  const std::vector<int64_t> in_strides = RowMajorStrides(in.shape());
  std::vector<int64_t> dims(4), src(4);
  for (int i = 0; i < 4; ++i) {
    dims[i] = in.dim(static_cast<int>(perm[i]));
    src[i] = in_strides[perm[i]];
  }
  ASSIGN_OR_RETURN(IndexMap map, CopyMap(dims, src, RowMajorStrides(out.shape())));
  return LaunchStridedCopy(static_cast<int>(DataTypeSize(in.dtype())),
                           in.raw_data(), 0, out.raw_data(), 0, map, stream);
}

// A new temporary of ctx holding transpose(t, perm), enqueued on `stream`.
absl::StatusOr<Tensor> PermutedTemp(OpKernelContext* ctx, const Tensor& t,
                                    const std::array<int64_t, 4>& perm,
                                    cudaStream_t stream) {
  const Shape s({t.dim(static_cast<int>(perm[0])), t.dim(static_cast<int>(perm[1])),
                 t.dim(static_cast<int>(perm[2])), t.dim(static_cast<int>(perm[3]))});
  ASSIGN_OR_RETURN(Tensor out, ctx->allocate_temp(t.dtype(), s));
  RETURN_IF_ERROR(Permute4(t, perm, out, stream));
  return out;
}

ConvGeometry Geometry(const Shape& in, const Shape& out, int64_t kh,
                      int64_t kw, const Conv2DParams& p) {
  ConvGeometry g;
  g.n = in.dim(0); g.c = in.dim(1); g.h = in.dim(2); g.w = in.dim(3);
  g.o = out.dim(1); g.oh = out.dim(2); g.ow = out.dim(3);
  g.kh = kh; g.kw = kw;
  g.stride_h = p.strides[0]; g.stride_w = p.strides[1];
  g.pad_top = p.pads[0]; g.pad_left = p.pads[1];
  g.dilation_h = p.dilations[0]; g.dilation_w = p.dilations[1];
  g.group = p.group;
  return g;
}

struct ConvAttrs {
  Conv2DParams conv;
  bool nhwc = false;
  bool relu = false;   // FusedConv2D
  bool relu6 = false;  // FusedConv2D: relu clipped at 6
};

absl::StatusOr<ConvAttrs> ReadConvAttrs(const Node& node) {
  ConvAttrs a;
  ASSIGN_OR_RETURN(a.conv, ReadWindow(node, /*conv=*/true));
  ASSIGN_OR_RETURN(DataFormat format, GetDataFormat(node.attrs()));
  a.nhwc = format == DataFormat::kNhwc;
  return a;
}

// The output's shape in the node's layout.
absl::StatusOr<Shape> ConvOutputShape(const Shape& x, const Shape& f,
                                      const ConvAttrs& a) {
  if (!a.nhwc) return Conv2DShape(x, f, a.conv);
  ASSIGN_OR_RETURN(Shape out, Conv2DShape(NhwcToNchw(x), NhwcToNchw(f), a.conv));
  return NchwToNhwc(out);
}

class Conv2DKernel final : public LaunchKernel<ConvAttrs, ReadConvAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu));
    return RunConv(ctx, gpu, attrs()).status();
  }

  // Conv2D of inputs 0 and 1 into a new output 0: on cuDNN where it can,
  // else on the direct kernels.
  // With `epilogue`, cuDNN may apply it too: `*epilogue_done` says.
  static absl::StatusOr<Tensor*> RunConv(OpKernelContext* ctx,
                                         const GpuContext& gpu,
                                         const ConvAttrs& a,
                                         const CudnnEpilogue* epilogue = nullptr,
                                         bool* epilogue_done = nullptr) {
    if (epilogue_done != nullptr) *epilogue_done = false;
    const Conv2DParams& p = a.conv;
    const Tensor& x = ctx->input(0);
    const Tensor& f = ctx->input(1);
    if (f.dtype() != x.dtype()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Conv2D input is ", DataTypeName(x.dtype()), " but filter is ",
          DataTypeName(f.dtype())));
    }
    // Geometry in NCHW terms either way.
    const Shape xs = a.nhwc ? NhwcToNchw(x.shape()) : x.shape();
    const Shape fs = a.nhwc ? NhwcToNchw(f.shape()) : f.shape();
    ASSIGN_OR_RETURN(Shape out, Conv2DShape(xs, fs, p));
    ASSIGN_OR_RETURN(Tensor* y, ctx->allocate_output(
                                    0, a.nhwc ? NchwToNhwc(out) : out, x.dtype()));
    if (y->NumElements() == 0) return y;
    ConvGeometry g = Geometry(xs, out, fs.dim(2), fs.dim(3), p);
    CudnnConvProblem problem;
    problem.dtype = x.dtype();
    problem.batch = g.n;
    problem.in_channels = g.c;
    problem.out_channels = g.o;
    problem.group = g.group;
    problem.image = {g.h, g.w};
    problem.positions = {g.oh, g.ow};
    problem.kernel = {g.kh, g.kw};
    problem.strides = {g.stride_h, g.stride_w};
    problem.dilations = {g.dilation_h, g.dilation_w};
    problem.pad_begin = {g.pad_top, g.pad_left};
    problem.channels_last = a.nhwc;
    ASSIGN_OR_RETURN(bool ran,
                     RunCudnnConv(ctx, gpu.device, problem, x.raw_data(),
                                  f.raw_data(), y->raw_data(), nullptr,
                                  epilogue, epilogue_done));
    if (ran) return y;
    if (x.dtype() == DT_FLOAT) {
      g.channels_last = a.nhwc;
      RETURN_IF_ERROR(LaunchConv2D(g, x.data<float>(), f.data<float>(),
                                   y->data<float>(), gpu.stream));
      return y;
    }
    if (!a.nhwc) {
      RETURN_IF_ERROR(LaunchConvNd(ToGpuDtype(x.dtype()), WindowFor(g),
                                   x.raw_data(), f.raw_data(), y->raw_data(),
                                   gpu.stream));
      return y;
    }
    // The N-d direct kernels are NCHW: run one between permutations.
    ASSIGN_OR_RETURN(Tensor xt, PermutedTemp(ctx, x, kNhwcToNchw, gpu.stream));
    ASSIGN_OR_RETURN(Tensor ft, PermutedTemp(ctx, f, kNhwcToNchw, gpu.stream));
    ASSIGN_OR_RETURN(Tensor yt, ctx->allocate_temp(x.dtype(), out));
    RETURN_IF_ERROR(LaunchConvNd(ToGpuDtype(x.dtype()), WindowFor(g),
                                 xt.raw_data(), ft.raw_data(), yt.raw_data(),
                                 gpu.stream));
    RETURN_IF_ERROR(Permute4(yt, kNchwToNhwc, *y, gpu.stream));
    return y;
  }

 private:
  // Conv2D's geometry as the N-d direct kernels take it.
  static WindowGeometry WindowFor(const ConvGeometry& c) {
    WindowGeometry g;
    g.n = 2;
    g.batch = c.n;
    g.image[0] = c.h; g.image[1] = c.w;
    g.positions[0] = c.oh; g.positions[1] = c.ow;
    g.kernel[0] = c.kh; g.kernel[1] = c.kw;
    g.strides[0] = c.stride_h; g.strides[1] = c.stride_w;
    g.dilations[0] = c.dilation_h; g.dilations[1] = c.dilation_w;
    g.pad_begin[0] = c.pad_top; g.pad_begin[1] = c.pad_left;
    g.group = c.group;
    g.in_channels = c.c;
    g.out_channels = c.o;
    return g;
  }
};

// FusedConv2D: on cuDNN, one cudnnConvolutionBiasActivationForward call
// where cuDNN takes it (float32 with Relu); otherwise the convolution (cuDNN
// or direct), then the bias, side input and activation (Relu or ReLU6) in
// one pass over the output (bias_activation.h).
class FusedConv2DKernel final : public OpKernel {
 public:
  using Attrs = ConvAttrs;
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    ASSIGN_OR_RETURN(ConvAttrs a, ReadConvAttrs(node));
    ASSIGN_OR_RETURN(std::string act, node.attrs().GetString("activation"));
    if (act != "none" && act != "relu" && act != "relu6") {
      // The CPU provider's activations (hardswish, sigmoid...): the
      // optimizer fuses them only for a CPU target.
      return absl::UnimplementedError(absl::StrCat(
          "FusedConv2D activation \"", act, "\" has no CUDA kernel"));
    }
    a.relu = act == "relu";
    a.relu6 = act == "relu6";
    return a;
  }
  FusedConv2DKernel(const Node& node, Attrs attrs)
      : OpKernel(node), attrs_(std::move(attrs)) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu));
    const Tensor& bias = ctx->input(2);
    const Tensor* side = ctx->num_inputs() > 3 ? &ctx->input(3) : nullptr;
    // Checked before the convolution: cuDNN may read them in the same call.
    ASSIGN_OR_RETURN(Shape out, ConvOutputShape(ctx->input(0).shape(),
                                                ctx->input(1).shape(), attrs_));
    const DataType dtype = ctx->input(0).dtype();
    const int64_t channels = out.dim(attrs_.nhwc ? 3 : 1);
    if (bias.dtype() != dtype || bias.NumElements() != channels ||
        (side != nullptr &&
         (side->dtype() != dtype || !(side->shape() == out)))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "FusedConv2D: bias ", DataTypeName(bias.dtype()),
          bias.shape().DebugString(), " must be ", DataTypeName(dtype), "[",
          channels, "]", side == nullptr ? "" : " and the side input ",
          side == nullptr ? "" : side->shape().DebugString(),
          side == nullptr ? "" : " of the output's shape and dtype ",
          side == nullptr ? "" : out.DebugString()));
    }
    CudnnEpilogue epilogue;
    epilogue.bias = bias.raw_data();
    epilogue.side = side == nullptr ? nullptr : side->raw_data();
    epilogue.relu = attrs_.relu;
    bool done = false;
    // ReLU6: cuDNN's fused calls take Relu only, so the convolution runs
    // alone and the pass below adds the bias and clips.
    ASSIGN_OR_RETURN(Tensor * y,
                     Conv2DKernel::RunConv(ctx, gpu, attrs_,
                                           attrs_.relu6 ? nullptr : &epilogue,
                                           &done));
    if (done || y->NumElements() == 0) return absl::OkStatus();
    if (attrs_.nhwc) {  // one bias per column of [N*OH*OW, O]
      return LaunchRowBiasActivation(
          ToGpuDtype(y->dtype()), y->raw_data(), bias.raw_data(),
          side == nullptr ? nullptr : side->raw_data(),
          y->NumElements() / channels, channels,
          attrs_.relu6  ? RowActivation::kRelu6
          : attrs_.relu ? RowActivation::kRelu
                        : RowActivation::kNone,
          gpu.stream);
    }
    return LaunchBiasActivation(
        ToGpuDtype(y->dtype()), y->raw_data(), bias.raw_data(),
        side == nullptr ? nullptr : side->raw_data(),
        y->shape().dim(0) * channels, channels,
        y->shape().dim(2) * y->shape().dim(3), attrs_.relu || attrs_.relu6,
        gpu.stream, attrs_.relu6 ? 6.0f : INFINITY);
  }

 private:
  const Attrs attrs_;
};

class PoolKernel final : public OpKernel {
 public:
  struct Attrs {
    std::vector<int64_t> kernel_shape;
    Conv2DParams window;
    bool count_include_pad = false;
    bool nhwc = false;
  };
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    Attrs a;
    ASSIGN_OR_RETURN(a.kernel_shape, node.attrs().GetIntList("kernel_shape"));
    ASSIGN_OR_RETURN(a.window, ReadWindow(node, /*conv=*/false));
    ASSIGN_OR_RETURN(DataFormat format, GetDataFormat(node.attrs()));
    a.nhwc = format == DataFormat::kNhwc;
    if (node.attrs().Has("count_include_pad")) {
      ASSIGN_OR_RETURN(a.count_include_pad,
                       node.attrs().GetBool("count_include_pad"));
    }
    return a;
  }
  PoolKernel(const Node& node, bool max, Attrs attrs)
      : OpKernel(node), max_(max), attrs_(std::move(attrs)) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu));
    const Tensor& x = ctx->input(0);
    const std::vector<int64_t>& k = attrs_.kernel_shape;
    const Conv2DParams& p = attrs_.window;
    const Shape xs = attrs_.nhwc ? NhwcToNchw(x.shape()) : x.shape();
    ASSIGN_OR_RETURN(Shape out, PoolShape(xs, k, p));
    ASSIGN_OR_RETURN(Tensor* y, ctx->allocate_output(
                                    0, attrs_.nhwc ? NchwToNhwc(out) : out,
                                    x.dtype()));
    ConvGeometry g = Geometry(xs, out, k[0], k[1], p);
    g.channels_last = attrs_.nhwc;
    const GpuDtype dtype = ToGpuDtype(x.dtype());
    if (max_) {
      return LaunchMaxPool(g, dtype, x.raw_data(), y->raw_data(), gpu.stream);
    }
    return LaunchAvgPool(g, attrs_.count_include_pad, dtype, x.raw_data(),
                         y->raw_data(), gpu.stream);
  }

 private:
  const bool max_;
  const Attrs attrs_;
};

// The factory for a kernel class K whose constructor takes (node, extra,
// attrs): the attributes are parsed once, here.
template <typename K, typename Extra>
KernelFactory FactoryWith(Extra extra) {
  return [extra](const Node& node) -> absl::StatusOr<std::unique_ptr<OpKernel>> {
    ASSIGN_OR_RETURN(typename K::Attrs attrs, K::ParseAttrs(node));
    return std::unique_ptr<OpKernel>(new K(node, extra, std::move(attrs)));
  };
}

}  // namespace

void RegisterNnKernels(KernelRegistry* registry) {
  RegisterGpu(registry, "Softmax", {{"T", GpuFloatTypes()}},
              MakeKernel<SoftmaxKernel>);
  RegisterGpu(registry, "LayerNorm", {{"T", GpuFloatTypes()}},
              MakeKernel<NormKernel<true>>);
  RegisterGpu(registry, "RMSNorm", {{"T", GpuFloatTypes()}},
              MakeKernel<NormKernel<false>>);
  const struct { const char* name; ReduceOp op; } reductions[] = {
      {"ReduceSum", ReduceOp::kSum},   {"ReduceMean", ReduceOp::kMean},
      {"ReduceMax", ReduceOp::kMax},   {"ReduceMin", ReduceOp::kMin},
      {"ReduceProd", ReduceOp::kProd},
  };
  for (const auto& r : reductions) {
    const ReduceOp op = r.op;
    std::vector<DataType> types;
    for (DataType t : GpuAllTypes()) {
      if (HasReduceKernel(op, ToGpuDtype(t))) types.push_back(t);
    }
    RegisterGpu(registry, r.name, {{"T", types}},
                FactoryWith<ReduceKernel>(op), {}, ReduceKernel::Supports);
    RegisterGpu(registry, absl::StrCat("Dynamic", r.name), {{"T", types}},
                FactoryWith<ReduceKernel>(op),
                /*host_memory_inputs=*/{1}, ReduceKernel::Supports);
  }
  // The mean reduction's kernel: the float dtypes it has.
  std::vector<DataType> mean_types;
  for (DataType t : GpuFloatTypes()) {
    if (HasReduceKernel(ReduceOp::kMean, ToGpuDtype(t))) mean_types.push_back(t);
  }
  RegisterGpu(registry, "GlobalAvgPool", {{"T", mean_types}},
              MakeKernel<GlobalAvgPoolKernel>);
  RegisterGpu(registry, "Conv2D", {{"T", GpuFloatTypes()}},
              MakeKernel<Conv2DKernel>);
  RegisterGpu(registry, "FusedConv2D", {{"T", GpuFloatTypes()}},
              MakeKernel<FusedConv2DKernel>);
  RegisterGpu(registry, "MaxPool", {{"T", GpuFloatTypes()}},
              FactoryWith<PoolKernel>(true));
  RegisterGpu(registry, "AvgPool", {{"T", GpuFloatTypes()}},
              FactoryWith<PoolKernel>(false));
}

}  // namespace sluice::cuda

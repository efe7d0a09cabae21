// ConvND, ConvTranspose and Col2Im over any number of spatial dims, float32,
// [N, C, spatial...]. ConvND: per image and group, im2col then one GEMM.
// ConvTranspose: per image and group, one GEMM (filter^T x input) into
// columns, then col2im into the zeroed output. Col2Im is that last step on
// its own.
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/runtime_params.h"
#include "graph/shape_fns.h"
#include "graph/vision_shapes.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/window_nd.h"
#include "kernels/vision_attrs.h"

namespace sluice::cpu {
namespace {

// Checks x [N, C, s...] and f [O or C, ..., k...] against the attributes.
absl::Status CheckConvInputs(const Tensor& x, const Tensor& f,
                             const ConvAttrs& a, bool transpose) {
  RETURN_IF_ERROR(CheckDtype(x, DT_FLOAT, "input"));
  RETURN_IF_ERROR(CheckDtype(f, DT_FLOAT, "filter"));
  const int rank = static_cast<int>(a.strides.size()) + 2;
  RETURN_IF_ERROR(CheckRank(x, rank, "input"));
  RETURN_IF_ERROR(CheckRank(f, rank, "filter"));
  const int64_t g = a.group;
  const bool ok = transpose ? (f.dim(0) == x.dim(1) && x.dim(1) % g == 0)
                            : (x.dim(1) == f.dim(1) * g && f.dim(0) % g == 0);
  if (!ok) {
    return absl::InvalidArgumentError(absl::StrCat(
        "channels do not match: input ", x.shape().DebugString(),
        ", filter ", f.shape().DebugString(), ", group ", g));
  }
  return absl::OkStatus();
}

class ConvNdKernel final : public OpKernel {
 public:
  using Attrs = ConvAttrs;
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    return ParseConvAttrs(node, false);
  }
  ConvNdKernel(const Node& node, Attrs attrs)
      : OpKernel(node), a_(std::move(attrs)) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    const Tensor& f = ctx->input(1);
    RETURN_IF_ERROR(CheckConvInputs(x, f, a_, false));
    const size_t n = a_.strides.size();
    WindowNd g;
    g.channels = x.dim(1) / a_.group;
    g.strides = a_.strides;
    g.dilations = a_.dilations;
    g.pad_begin.assign(a_.pads.begin(), a_.pads.begin() + n);
    std::vector<int64_t> dims = {x.dim(0), f.dim(0)};
    for (size_t i = 0; i < n; ++i) {
      g.in.push_back(x.dim(2 + i));
      g.kernel.push_back(f.dim(2 + i));
      ASSIGN_OR_RETURN(int64_t o,
                       ConvOutputSize(x.dim(2 + i), f.dim(2 + i),
                                      a_.strides[i], a_.pads[i],
                                      a_.pads[n + i], a_.dilations[i]));
      g.out.push_back(o);
      dims.push_back(o);
    }
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, Shape(dims)));
    if (y->NumElements() == 0) return absl::OkStatus();
    const int64_t k = g.channels * g.KernelSize(), spatial = g.OutSize();
    const int64_t og = f.dim(0) / a_.group, in_size = g.InSize();
    ASSIGN_OR_RETURN(Tensor col,
                     ctx->allocate_temp(DT_FLOAT, Shape({k, spatial})));
    const auto* pool = ctx->device()->eigen_cpu_device();
    for (int64_t b = 0; b < x.dim(0); ++b) {
      for (int64_t gi = 0; gi < a_.group; ++gi) {
        Im2ColNd(g,
                 x.data<float>() + (b * x.dim(1) + gi * g.channels) * in_size,
                 col.data<float>());
        Gemm<float>(pool, f.data<float>() + gi * og * k, col.data<float>(),
                    y->data<float>() + (b * f.dim(0) + gi * og) * spatial, og,
                    spatial, k, false, false);
      }
    }
    return absl::OkStatus();
  }

 private:
  const ConvAttrs a_;
};

class ConvTransposeKernel final : public OpKernel {
 public:
  using Attrs = ConvAttrs;
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    return ParseConvAttrs(node, true);
  }
  ConvTransposeKernel(const Node& node, Attrs attrs)
      : OpKernel(node), a_(std::move(attrs)) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    const Tensor& f = ctx->input(1);
    RETURN_IF_ERROR(CheckConvInputs(x, f, a_, true));
    const size_t n = a_.strides.size();
    // The output is the "image" of a window whose positions are the input.
    WindowNd g;
    g.channels = f.dim(1);  // output channels per group
    g.strides = a_.strides;
    g.dilations = a_.dilations;
    g.pad_begin.assign(a_.pads.begin(), a_.pads.begin() + n);
    std::vector<int64_t> dims = {x.dim(0), f.dim(1) * a_.group};
    for (size_t i = 0; i < n; ++i) {
      g.out.push_back(x.dim(2 + i));
      g.kernel.push_back(f.dim(2 + i));
      ASSIGN_OR_RETURN(int64_t o, ConvTransposeOutputSize(
                                      x.dim(2 + i), f.dim(2 + i),
                                      a_.strides[i], a_.pads[i],
                                      a_.pads[n + i], a_.dilations[i],
                                      a_.output_padding[i]));
      g.in.push_back(o);
      dims.push_back(o);
    }
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, Shape(dims)));
    float* out = y->data<float>();
    for (int64_t i = 0; i < y->NumElements(); ++i) out[i] = 0;
    if (y->NumElements() == 0 || x.NumElements() == 0) {
      return absl::OkStatus();
    }
    const int64_t cg = x.dim(1) / a_.group;
    const int64_t rows = g.channels * g.KernelSize(), cols_n = g.OutSize();
    const int64_t out_size = g.InSize();
    ASSIGN_OR_RETURN(Tensor cols,
                     ctx->allocate_temp(DT_FLOAT, Shape({rows, cols_n})));
    const auto* pool = ctx->device()->eigen_cpu_device();
    for (int64_t b = 0; b < x.dim(0); ++b) {
      for (int64_t gi = 0; gi < a_.group; ++gi) {
        // cols [M/g * K, IN] = W_g^T ([C/g, M/g * K]^T) x X_g [C/g, IN].
        Gemm<float>(pool, f.data<float>() + gi * cg * rows,
                    x.data<float>() + (b * x.dim(1) + gi * cg) * cols_n,
                    cols.data<float>(), rows, cols_n, cg, true, false);
        Col2ImNd(g, cols.data<float>(),
                 out + (b * dims[1] + gi * g.channels) * out_size);
      }
    }
    return absl::OkStatus();
  }

 private:
  const ConvAttrs a_;
};

class Col2ImKernel final : public OpKernel {
 public:
  struct Attrs {
    std::vector<int64_t> strides, pads, dilations;
  };
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    const AttrMap& m = node.attrs();
    Attrs a;
    ASSIGN_OR_RETURN(a.strides, m.GetIntList("strides"));
    ASSIGN_OR_RETURN(a.pads, m.GetIntList("pads"));
    ASSIGN_OR_RETURN(a.dilations, m.GetIntList("dilations"));
    return a;
  }
  Col2ImKernel(const Node& node, Attrs attrs)
      : OpKernel(node), a_(std::move(attrs)) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    RETURN_IF_ERROR(CheckDtype(x, DT_FLOAT, "input"));
    RETURN_IF_ERROR(CheckRank(x, 3, "Col2Im input"));
    ASSIGN_OR_RETURN(std::vector<int64_t> image,
                     IntParamValues(ctx->input(1), "image_shape"));
    ASSIGN_OR_RETURN(std::vector<int64_t> block,
                     IntParamValues(ctx->input(2), "block_shape"));
    const size_t n = image.size();
    if (block.size() != n) {
      return absl::InvalidArgumentError(absl::StrCat(
          "image_shape has ", n, " dims and block_shape ", block.size()));
    }
    WindowNd g;
    g.in = image;
    g.kernel = block;
    g.strides = a_.strides.empty() ? std::vector<int64_t>(n, 1) : a_.strides;
    g.dilations =
        a_.dilations.empty() ? std::vector<int64_t>(n, 1) : a_.dilations;
    std::vector<int64_t> pads =
        a_.pads.empty() ? std::vector<int64_t>(2 * n, 0) : a_.pads;
    RETURN_IF_ERROR(
        CheckWindowAttrs(n, block, g.strides, pads, g.dilations));
    g.pad_begin.assign(pads.begin(), pads.begin() + n);
    for (size_t i = 0; i < n; ++i) {
      ASSIGN_OR_RETURN(int64_t o,
                       ConvOutputSize(image[i], block[i], g.strides[i],
                                      pads[i], pads[n + i], g.dilations[i]));
      g.out.push_back(o);
    }
    const int64_t k = g.KernelSize();
    if (x.dim(1) % k != 0 || x.dim(2) != g.OutSize()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Col2Im input ", x.shape().DebugString(), " does not match ", k,
          " block elements and ", g.OutSize(), " blocks"));
    }
    g.channels = x.dim(1) / k;
    std::vector<int64_t> dims = {x.dim(0), g.channels};
    dims.insert(dims.end(), image.begin(), image.end());
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, Shape(dims)));
    float* out = y->data<float>();
    for (int64_t i = 0; i < y->NumElements(); ++i) out[i] = 0;
    const int64_t per_in = x.dim(1) * x.dim(2), per_out = g.channels * g.InSize();
    for (int64_t b = 0; b < x.dim(0); ++b) {
      Col2ImNd(g, x.data<float>() + b * per_in, out + b * per_out);
    }
    return absl::OkStatus();
  }

 private:
  const Attrs a_;
};

}  // namespace

void RegisterConvNdKernels(KernelRegistry* r) {
  r->Register(CpuKernel("ConvND", {{"T", CpuNnTypes()}},
                        MakeKernel<ConvNdKernel>));
  r->Register(CpuKernel("ConvTranspose", {{"T", CpuNnTypes()}},
                        MakeKernel<ConvTransposeKernel>));
  r->Register(CpuKernel("Col2Im", {{"T", CpuNnTypes()}},
                        MakeKernel<Col2ImKernel>));
}

}  // namespace sluice::cpu

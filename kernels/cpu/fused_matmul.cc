// FusedMatMul on the CPU, the reference the CUDA kernel is checked
// against: a [..., M, K] flattened to [rows, K] times the matrix b (one
// Gemm over the intra-op pool, gemm.h), with y = act(y + bias[n]
// (+ residual)) applied to each tile of the product on the thread that
// computed it, while the tile is in cache. float32; float16 and bfloat16
// run through float32_fallback.cc.
#include <algorithm>
#include <string>

#include "Eigen/Core"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/shape_fns.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/kernel_util.h"

namespace sluice::cpu {
namespace {

enum class MatMulActivation { kNone, kRelu, kGeluTanh };

absl::StatusOr<MatMulActivation> ParseActivation(const std::string& s) {
  if (s == "none") return MatMulActivation::kNone;
  if (s == "relu") return MatMulActivation::kRelu;
  if (s == "gelu_tanh") return MatMulActivation::kGeluTanh;
  return absl::InvalidArgumentError(absl::StrCat(
      "FusedMatMul: activation must be \"none\", \"relu\" or \"gelu_tanh\", "
      "got \"", s, "\""));
}

constexpr int64_t kGeluChunk = 256;  // floats
constexpr int64_t kPad = 16;         // floats: a whole number of packets

// y = act(y + bias (+ residual)) over one row of a tile, in Eigen's
// packets: GELU's tanh is Eigen's vectorised one, as the Gelu kernel's
// (elementwise_unary.cc); std::tanh an element at a time took 4.5 of the
// 7.5 ms of GPT-2's [128, 768] x [768, 3072] projection at two threads.
void Epilogue(float* y, const float* bias, const float* residual, int64_t n,
              MatMulActivation act) {
  using Row = Eigen::Map<Eigen::ArrayXf>;
  using ConstRow = Eigen::Map<const Eigen::ArrayXf>;
  Row v(y, n);
  v += ConstRow(bias, n);
  if (residual != nullptr) v += ConstRow(residual, n);
  if (act == MatMulActivation::kRelu) {
    v = v.max(0.0f);
  } else if (act == MatMulActivation::kGeluTanh) {
    // Through an aligned buffer padded to whole packets, so that every
    // value takes Eigen's packet tanh: on the row in place, where the
    // output happened to be aligned decided which values took the scalar
    // path instead, and results differed from step to step.
    alignas(64) float buf[kGeluChunk];
    using Chunk = Eigen::Map<Eigen::ArrayXf, Eigen::Aligned64>;
    for (int64_t c = 0; c < n; c += kGeluChunk) {
      const int64_t len = std::min(kGeluChunk, n - c);
      const int64_t padded = (len + kPad - 1) / kPad * kPad;
      std::copy(y + c, y + c + len, buf);
      std::fill(buf + len, buf + padded, 0.0f);
      Chunk g(buf, padded);
      // 0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3))).
      constexpr float kSqrt2OverPi = 0.7978845608028654f;
      g = g * (0.5f + 0.5f * (kSqrt2OverPi * (g + 0.044715f * g.cube())).tanh());
      std::copy(buf, buf + len, y + c);
    }
  }
}

class FusedMatMulKernel final : public OpKernel {
 public:
  struct Attrs {
    bool transpose_b = false;
    MatMulActivation activation = MatMulActivation::kNone;
  };
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    Attrs a;
    if (node.attrs().Has("transpose_b")) {
      ASSIGN_OR_RETURN(a.transpose_b, node.attrs().GetBool("transpose_b"));
    }
    std::string act = "none";
    if (node.attrs().Has("activation")) {
      ASSIGN_OR_RETURN(act, node.attrs().GetString("activation"));
    }
    ASSIGN_OR_RETURN(a.activation, ParseActivation(act));
    return a;
  }
  FusedMatMulKernel(const Node& node, Attrs attrs)
      : OpKernel(node), attrs_(attrs) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& a = ctx->input(0);
    const Tensor& b = ctx->input(1);
    const Tensor& bias = ctx->input(2);
    const Tensor* residual = ctx->num_inputs() > 3 ? &ctx->input(3) : nullptr;
    RETURN_IF_ERROR(CheckDtype(a, DT_FLOAT, "a"));
    RETURN_IF_ERROR(CheckDtype(b, DT_FLOAT, "b"));
    RETURN_IF_ERROR(CheckDtype(bias, DT_FLOAT, "bias"));
    if (residual != nullptr) {
      RETURN_IF_ERROR(CheckDtype(*residual, DT_FLOAT, "residual"));
    }
    RETURN_IF_ERROR(CheckRank(b, 2, "FusedMatMul b"));
    ASSIGN_OR_RETURN(Shape shape, MatMulShape(a.shape(), b.shape(), false,
                                              attrs_.transpose_b));
    const int64_t k = a.dim(a.rank() - 1);
    const int64_t n = shape.dim(shape.rank() - 1);
    if (bias.NumElements() != n ||
        (residual != nullptr && !(residual->shape() == shape))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "FusedMatMul: bias ", bias.shape().DebugString(), " must have ", n,
          " values", residual == nullptr ? "" : " and the residual ",
          residual == nullptr ? "" : residual->shape().DebugString(),
          residual == nullptr ? "" : " the output's shape ",
          residual == nullptr ? "" : shape.DebugString()));
    }
    ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, shape));
    if (out->NumElements() == 0) return absl::OkStatus();
    const int64_t rows = out->NumElements() / n;
    float* y = out->data<float>();
    const float* bv = bias.data<float>();
    const float* rv = residual == nullptr ? nullptr : residual->data<float>();
    const MatMulActivation act = attrs_.activation;
    Gemm<float>(ctx->device()->eigen_cpu_device(), a.data<float>(),
                b.data<float>(), y, rows, n, k, /*transpose_a=*/false,
                attrs_.transpose_b, [&](const GemmTile& t) {
                  const int64_t len = t.col_end - t.col_begin;
                  for (int64_t r = t.row_begin; r < t.row_end; ++r) {
                    const int64_t at = r * n + t.col_begin;
                    Epilogue(y + at, bv + t.col_begin,
                             rv == nullptr ? nullptr : rv + at, len, act);
                  }
                });
    return absl::OkStatus();
  }

 private:
  const Attrs attrs_;
};

}  // namespace

void RegisterFusedMatMulKernels(KernelRegistry* r) {
  r->Register(CpuKernel("FusedMatMul", {{"T", CpuNnTypes()}},
                        MakeKernel<FusedMatMulKernel>));
}

}  // namespace sluice::cpu

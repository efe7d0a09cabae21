// LayerNorm: normalises over dimensions [axis, rank) with population
// variance, then scales and shifts: y = (x - mean) / sqrt(var + eps) * scale
// + bias, where scale and bias have shape x.shape[axis:]. Statistics are
// accumulated in double; float16 and bfloat16 compute in float.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/kernel_util.h"

namespace sluice::cpu {
namespace {

template <typename T>
double Wide(T v) {
  return static_cast<double>(static_cast<typename ComputeType<T>::type>(v));
}

template <typename T>
void NormalizeRow(const T* x, const T* scale, const T* bias, float eps,
                  int64_t n, T* y) {
  using C = typename ComputeType<T>::type;
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += Wide(x[i]);
  const double mean = sum / static_cast<double>(n);
  double sq = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = Wide(x[i]) - mean;
    sq += d * d;
  }
  const double var = sq / static_cast<double>(n);
  const C inv = static_cast<C>(1.0 / std::sqrt(var + eps));
  const C m = static_cast<C>(mean);
  for (int64_t i = 0; i < n; ++i) {
    y[i] = static_cast<T>((static_cast<C>(x[i]) - m) * inv *
                              static_cast<C>(scale[i]) +
                          static_cast<C>(bias[i]));
  }
}

class LayerNormKernel final : public OpKernel {
 public:
  struct Attrs {
    DataType t = DT_INVALID;
    int64_t axis_attr = 0;
    float eps = 0;
  };
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    Attrs a;
    ASSIGN_OR_RETURN(a.t, node.attrs().GetType("T"));
    ASSIGN_OR_RETURN(a.axis_attr, node.attrs().GetInt("axis"));
    ASSIGN_OR_RETURN(a.eps, node.attrs().GetFloat("epsilon"));
    return a;
  }
  LayerNormKernel(const Node& node, Attrs attrs)
      : OpKernel(node), attrs_(std::move(attrs)) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    const Tensor& scale = ctx->input(1);
    const Tensor& bias = ctx->input(2);
    const DataType t = attrs_.t;
    RETURN_IF_ERROR(CheckDtype(x, t, "input x"));
    RETURN_IF_ERROR(CheckDtype(scale, t, "input scale"));
    RETURN_IF_ERROR(CheckDtype(bias, t, "input bias"));
    const int64_t axis_attr = attrs_.axis_attr;
    const float eps = attrs_.eps;
    if (x.rank() == 0) {
      return absl::InvalidArgumentError("LayerNorm needs a tensor of rank >= 1");
    }
    ASSIGN_OR_RETURN(int axis, NormalizeAxis(axis_attr, x.rank()));
    const Shape norm(absl::MakeConstSpan(x.shape().dims()).subspan(axis));
    if (scale.shape() != norm || bias.shape() != norm) {
      return absl::InvalidArgumentError(absl::StrCat(
          "LayerNorm scale ", scale.shape().DebugString(), " and bias ",
          bias.shape().DebugString(), " must have shape x.shape[axis:] = ",
          norm.DebugString(), " (x ", x.shape().DebugString(), ", axis ",
          axis_attr, ")"));
    }
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, x.shape()));
    const int64_t n = norm.num_elements();
    if (x.NumElements() == 0) return absl::OkStatus();
    const int64_t rows = x.NumElements() / n;
    return VisitFloat(t, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* in = x.data<T>();
      const T* sp = scale.data<T>();
      const T* bp = bias.data<T>();
      T* out = y->data<T>();
      ParallelFor(*ctx, rows, 8.0 * static_cast<double>(n),
                  [=](int64_t b, int64_t e) {
                    for (int64_t r = b; r < e; ++r) {
                      NormalizeRow(in + r * n, sp, bp, eps, n, out + r * n);
                    }
                  });
      return absl::OkStatus();
    });
  }

 private:
  const Attrs attrs_;
};

}  // namespace

void RegisterLayerNormKernels(KernelRegistry* r) {
  r->Register(CpuKernel("LayerNorm", {{"T", CpuFloatTypes()}},
                        MakeKernel<LayerNormKernel>));
}

}  // namespace sluice::cpu

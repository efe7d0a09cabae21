// RMSNorm: y = x / sqrt(mean(x^2 over dimensions [axis, rank)) + eps) *
// scale, where scale has shape x.shape[axis:]. The mean of squares is
// accumulated in double; float16 and bfloat16 compute in float.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/kernel_util.h"

namespace sluice::cpu {
namespace {

template <typename T>
void RmsNormalizeRow(const T* x, const T* scale, float eps, int64_t n, T* y) {
  using C = typename ComputeType<T>::type;
  double sq = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double v = static_cast<double>(static_cast<C>(x[i]));
    sq += v * v;
  }
  const double mean_sq = sq / static_cast<double>(n);
  const C inv = static_cast<C>(1.0 / std::sqrt(mean_sq + eps));
  for (int64_t i = 0; i < n; ++i) {
    y[i] = static_cast<T>(static_cast<C>(x[i]) * inv *
                          static_cast<C>(scale[i]));
  }
}

class RMSNormKernel final : public OpKernel {
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
  RMSNormKernel(const Node& node, Attrs attrs)
      : OpKernel(node), attrs_(std::move(attrs)) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    const Tensor& scale = ctx->input(1);
    const DataType t = attrs_.t;
    RETURN_IF_ERROR(CheckDtype(x, t, "input x"));
    RETURN_IF_ERROR(CheckDtype(scale, t, "input scale"));
    if (x.rank() == 0) {
      return absl::InvalidArgumentError("RMSNorm needs a tensor of rank >= 1");
    }
    ASSIGN_OR_RETURN(int axis, NormalizeAxis(attrs_.axis_attr, x.rank()));
    const Shape norm(absl::MakeConstSpan(x.shape().dims()).subspan(axis));
    if (scale.shape() != norm) {
      return absl::InvalidArgumentError(absl::StrCat(
          "RMSNorm scale ", scale.shape().DebugString(),
          " must have shape x.shape[axis:] = ", norm.DebugString(), " (x ",
          x.shape().DebugString(), ", axis ", attrs_.axis_attr, ")"));
    }
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, x.shape()));
    const int64_t n = norm.num_elements();
    if (x.NumElements() == 0) return absl::OkStatus();
    const int64_t rows = x.NumElements() / n;
    const float eps = attrs_.eps;
    return VisitFloat(t, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* in = x.data<T>();
      const T* sp = scale.data<T>();
      T* out = y->data<T>();
      ParallelFor(*ctx, rows, 5.0 * static_cast<double>(n),
                  [=](int64_t b, int64_t e) {
                    for (int64_t r = b; r < e; ++r) {
                      RmsNormalizeRow(in + r * n, sp, eps, n, out + r * n);
                    }
                  });
      return absl::OkStatus();
    });
  }

 private:
  const Attrs attrs_;
};

}  // namespace

void RegisterRMSNormKernels(KernelRegistry* r) {
  r->Register(CpuKernel("RMSNorm", {{"T", CpuFloatTypes()}},
                        MakeKernel<RMSNormKernel>));
}

}  // namespace sluice::cpu

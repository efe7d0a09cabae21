// Softmax along one axis, numerically stable (the maximum is subtracted
// before exponentiating). The tensor is viewed as [outer, n, inner].
#include <algorithm>
#include <cmath>

#include "core/status_macros.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/kernel_util.h"

namespace sluice::cpu {
namespace {

// One softmax over x[0], x[s], ..., x[(n-1)s].
void SoftmaxStrided(const float* x, float* y, int64_t n, int64_t s) {
  float mx = -INFINITY;
  for (int64_t i = 0; i < n; ++i) mx = std::max(mx, x[i * s]);
  float sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float e = std::exp(x[i * s] - mx);
    y[i * s] = e;
    sum += e;
  }
  const float inv = 1.0f / sum;
  for (int64_t i = 0; i < n; ++i) y[i * s] *= inv;
}

class SoftmaxKernel final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    RETURN_IF_ERROR(CheckDtype(x, DT_FLOAT, "input logits"));
    ASSIGN_OR_RETURN(int64_t axis_attr, node().attrs().GetInt("axis"));
    if (x.rank() == 0) {
      return absl::InvalidArgumentError("Softmax needs a tensor of rank >= 1");
    }
    ASSIGN_OR_RETURN(int axis, NormalizeAxis(axis_attr, x.rank()));
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, x.shape()));
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; ++d) outer *= x.dim(d);
    for (int d = axis + 1; d < x.rank(); ++d) inner *= x.dim(d);
    const int64_t n = x.dim(axis);
    if (x.NumElements() == 0) return absl::OkStatus();
    const float* in = x.data<float>();
    float* out = y->data<float>();
    // One unit of work: a softmax over n values at one (outer, inner) point.
    ParallelFor(*ctx, outer * inner, 25.0 * static_cast<double>(n),
                [=](int64_t b, int64_t e) {
                  for (int64_t u = b; u < e; ++u) {
                    const int64_t o = u / inner, i = u % inner;
                    const int64_t base = o * n * inner + i;
                    SoftmaxStrided(in + base, out + base, n, inner);
                  }
                });
    return absl::OkStatus();
  }
};

}  // namespace

void RegisterSoftmaxKernels(KernelRegistry* r) {
  r->Register(CpuKernel("Softmax", {{"T", CpuNnTypes()}},
                        MakeKernel<SoftmaxKernel>));
}

}  // namespace sluice::cpu

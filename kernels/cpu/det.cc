// Det: the determinant of each innermost M x M matrix, by LU decomposition
// with partial pivoting in double (Eigen's PartialPivLU).
#include <vector>

#include "Eigen/LU"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/kernel_util.h"

namespace sluice::cpu {
namespace {

class DetKernel final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    const int r = x.rank();
    if (r < 2 || x.dim(r - 1) != x.dim(r - 2)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Det needs square matrices [..., M, M], got ",
          x.shape().DebugString()));
    }
    const int64_t m = x.dim(r - 1);
    Shape out_shape;
    for (int d = 0; d < r - 2; ++d) out_shape.AddDim(x.dim(d));
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, out_shape));
    const int64_t count = out_shape.num_elements();
    return VisitFloat(x.dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      const T* in = x.data<T>();
      T* out = y->data<T>();
      ParallelFor(*ctx, count, static_cast<double>(m * m * m),
                  [&](int64_t b, int64_t e) {
        Eigen::MatrixXd a(m, m);
        for (int64_t i = b; i < e; ++i) {
          const T* p = in + i * m * m;
          for (int64_t row = 0; row < m; ++row) {
            for (int64_t col = 0; col < m; ++col) {
              a(row, col) = static_cast<double>(
                  static_cast<typename ComputeType<T>::type>(p[row * m + col]));
            }
          }
          out[i] = static_cast<T>(m == 0 ? 1.0 : a.partialPivLu().determinant());
        }
      });
      return absl::OkStatus();
    });
  }
};

}  // namespace

void RegisterDetKernels(KernelRegistry* r) {
  r->Register(CpuKernel("Det", {{"T", CpuFloatTypes()}}, MakeKernel<DetKernel>));
}

}  // namespace sluice::cpu

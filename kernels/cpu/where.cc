// Where(condition, x, y): x where condition else y, with three-way NumPy
// broadcasting. Any dtype: values are moved by element size.
#include "core/status_macros.h"
#include "kernels/cpu/broadcast.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/kernel_util.h"

namespace sluice::cpu {
namespace {

class WhereKernel final : public OpKernel {
 public:
  struct Attrs {
    DataType t = DT_INVALID;
  };
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    Attrs a;
    ASSIGN_OR_RETURN(a.t, node.attrs().GetType("T"));
    return a;
  }
  WhereKernel(const Node& node, Attrs attrs)
      : OpKernel(node), attrs_(std::move(attrs)) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& c = ctx->input(0);
    const Tensor& x = ctx->input(1);
    const Tensor& y = ctx->input(2);
    const DataType t = attrs_.t;
    RETURN_IF_ERROR(CheckDtype(c, DT_BOOL, "input condition"));
    RETURN_IF_ERROR(CheckDtype(x, t, "input x"));
    RETURN_IF_ERROR(CheckDtype(y, t, "input y"));
    ASSIGN_OR_RETURN(Shape shape,
                     BroadcastShapes({&c.shape(), &x.shape(), &y.shape()}));
    ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(0, shape));
    if (out->NumElements() == 0) return absl::OkStatus();
    return VisitBySize(t, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const bool* cp = c.data<bool>();
      const T* xp = x.data<T>();
      const T* yp = y.data<T>();
      T* op = out->data<T>();
      BroadcastPlan<3> plan(shape, {&c.shape(), &x.shape(), &y.shape()});
      const int64_t n = plan.inner();
      const int64_t sc = plan.inner_stride(0), sx = plan.inner_stride(1),
                    sy = plan.inner_stride(2);
      ParallelFor(*ctx, plan.rows(), static_cast<double>(n),
                  [&](int64_t b, int64_t e) {
                    plan.ForEachRow(b, e, [&](int64_t o, const int64_t* in) {
                      const bool* cr = cp + in[0];
                      const T* xr = xp + in[1];
                      const T* yr = yp + in[2];
                      for (int64_t j = 0; j < n; ++j) {
                        op[o + j] = cr[j * sc] ? xr[j * sx] : yr[j * sy];
                      }
                    });
                  });
      return absl::OkStatus();
    });
  }

 private:
  const Attrs attrs_;
};

}  // namespace

void RegisterWhereKernels(KernelRegistry* r) {
  r->Register(CpuKernel("Where", {{"T", CpuAllTypes()}},
                        MakeKernel<WhereKernel>));
}

}  // namespace sluice::cpu

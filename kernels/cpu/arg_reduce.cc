// ArgMax and ArgMin: the int64 index of the largest (smallest) element along
// one axis; the first one on ties, or the last with select_last_index.
#include <memory>

#include "core/status_macros.h"
#include "graph/shape_fns.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/kernel_util.h"

namespace sluice::cpu {
namespace {

template <bool kMax>
class ArgReduceKernel final : public OpKernel {
 public:
  struct Attrs {
    int64_t axis = 0;
    bool keepdims = true;
    bool select_last_index = false;
  };
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    Attrs a;
    ASSIGN_OR_RETURN(a.axis, node.attrs().GetInt("axis"));
    ASSIGN_OR_RETURN(a.keepdims, node.attrs().GetBool("keepdims"));
    ASSIGN_OR_RETURN(a.select_last_index,
                     node.attrs().GetBool("select_last_index"));
    return a;
  }
  ArgReduceKernel(const Node& node, Attrs attrs)
      : OpKernel(node), attrs_(attrs) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    const Shape& shape = x.shape();
    ASSIGN_OR_RETURN(int axis, NormalizeAxis(attrs_.axis, shape.rank()));
    if (shape.dim(axis) == 0) {
      return absl::InvalidArgumentError(
          "ArgMax/ArgMin over an empty dimension");
    }
    ASSIGN_OR_RETURN(Shape out_shape,
                     ReduceShape(shape, {axis}, attrs_.keepdims));
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, out_shape));
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < axis; ++i) outer *= shape.dim(i);
    for (int i = axis + 1; i < shape.rank(); ++i) inner *= shape.dim(i);
    const int64_t n = shape.dim(axis);
    const bool last = attrs_.select_last_index;
    int64_t* out = y->data<int64_t>();
    return VisitArith(x.dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      using C = typename ComputeType<T>::type;
      const T* in = x.data<T>();
      ParallelFor(*ctx, outer * inner, static_cast<double>(n),
                  [=](int64_t b, int64_t e) {
                    for (int64_t r = b; r < e; ++r) {
                      const T* p = in + (r / inner) * n * inner + r % inner;
                      C best = C(p[0]);
                      int64_t best_i = 0;
                      for (int64_t i = 1; i < n; ++i) {
                        const C v = C(p[i * inner]);
                        const bool better = kMax ? (last ? v >= best : v > best)
                                                 : (last ? v <= best : v < best);
                        if (better) {
                          best = v;
                          best_i = i;
                        }
                      }
                      out[r] = best_i;
                    }
                  });
      return absl::OkStatus();
    });
  }

 private:
  const Attrs attrs_;
};

}  // namespace

void RegisterArgReduceKernels(KernelRegistry* r) {
  r->Register(CpuKernel("ArgMax", {{"T", CpuArithTypes()}},
                        MakeKernel<ArgReduceKernel<true>>));
  r->Register(CpuKernel("ArgMin", {{"T", CpuArithTypes()}},
                        MakeKernel<ArgReduceKernel<false>>));
}

}  // namespace sluice::cpu

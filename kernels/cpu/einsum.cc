// Einsum: each output element is the sum, over every value of the labels
// not in the output, of the product of the inputs' elements those labels
// pick. Each input gets one stride per label (summed where a label repeats
// in one term: a diagonal; 0 where an ellipsis dim of 1 stretches), so the
// walk is a plain odometer (kernels/einsum_loop.h). Floats accumulate in
// double, integers wrap.
#include <type_traits>
#include <vector>

#include "core/status_macros.h"
#include "graph/einsum_equation.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/type_visit.h"
#include "kernels/einsum_loop.h"
#include "kernels/launch_kernel.h"

namespace sluice::cpu {
namespace {

template <typename T>
using Accum = std::conditional_t<kIsStdInteger<T>,
                                 std::make_unsigned_t<std::conditional_t<
                                     kIsStdInteger<T>, T, int>>,
                                 double>;

template <typename T>
void RunEinsum(const OpKernelContext& ctx, const EinsumLoop& l,
               const std::vector<const Tensor*>& inputs, Tensor* y) {
  using A = Accum<T>;
  const size_t n_in = inputs.size();
  std::vector<const T*> data;
  for (const Tensor* t : inputs) data.push_back(t->data<T>());
  int64_t sum_count = 1;
  for (int64_t s : l.sum_sizes) sum_count *= s;
  T* out = y->data<T>();
  const int n_out = static_cast<int>(l.out_sizes.size());
  const int n_sum = static_cast<int>(l.sum_sizes.size());
  ParallelFor(ctx, y->NumElements(), static_cast<double>(sum_count * n_in),
              [&](int64_t b, int64_t e) {
    std::vector<int64_t> base(n_in), off(n_in), idx(n_sum);
    for (int64_t o = b; o < e; ++o) {
      std::fill(base.begin(), base.end(), 0);
      int64_t rest = o;
      for (int p = n_out - 1; p >= 0; --p) {
        const int64_t i = rest % l.out_sizes[p];
        rest /= l.out_sizes[p];
        for (size_t k = 0; k < n_in; ++k) base[k] += i * l.out_strides[k][p];
      }
      off = base;
      std::fill(idx.begin(), idx.end(), 0);
      A acc = A(0);
      for (int64_t s = 0; s < sum_count; ++s) {
        A prod = A(1);
        for (size_t k = 0; k < n_in; ++k) {
          prod = static_cast<A>(prod * static_cast<A>(data[k][off[k]]));
        }
        acc = static_cast<A>(acc + prod);
        for (int p = n_sum - 1; p >= 0; --p) {  // next summed index
          for (size_t k = 0; k < n_in; ++k) off[k] += l.sum_strides[k][p];
          if (++idx[p] < l.sum_sizes[p]) break;
          for (size_t k = 0; k < n_in; ++k) {
            off[k] -= idx[p] * l.sum_strides[k][p];
          }
          idx[p] = 0;
        }
      }
      out[o] = static_cast<T>(acc);
    }
  });
}

class EinsumKernel final : public LaunchKernel<EinsumAttrs, ParseEinsumAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    std::vector<const Tensor*> inputs;
    for (int i = 0; i < ctx->num_inputs(); ++i) inputs.push_back(&ctx->input(i));
    ASSIGN_OR_RETURN(EinsumPlan plan, PlanEinsum(attrs().equation, inputs));
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, plan.out_shape));
    const EinsumLoop& loop = plan.loop;
    return VisitOrdered(inputs[0]->dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      RunEinsum<T>(*ctx, loop, inputs, y);
      return absl::OkStatus();
    });
  }
};

}  // namespace

void RegisterEinsumKernels(KernelRegistry* r) {
  r->Register(
      CpuKernel("Einsum", {{"T", OrderedTypes()}}, MakeKernel<EinsumKernel>));
}

}  // namespace sluice::cpu

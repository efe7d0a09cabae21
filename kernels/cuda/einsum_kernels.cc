// CUDA OpKernel for Einsum: the equation is parsed and the loop built on
// the host as on the CPU (graph/einsum_equation.h, kernels/einsum_loop.h),
// then one launch walks it (einsum.h).
#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/einsum_equation.h"
#include "kernels/cuda/cuda_kernel_util.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/einsum.h"
#include "kernels/einsum_loop.h"
#include "kernels/launch_kernel.h"

namespace sluice::cuda {
namespace {

// UNIMPLEMENTED when a loop of these counts does not fit EinsumParams.
absl::Status CheckFits(size_t inputs, size_t n_out, size_t n_sum) {
  if (inputs > static_cast<size_t>(kMaxEinsumInputs) ||
      n_out > static_cast<size_t>(kMaxEinsumLabels) ||
      n_sum > static_cast<size_t>(kMaxEinsumLabels)) {
    return absl::UnimplementedError(absl::StrCat(
        "CUDA Einsum takes at most ", kMaxEinsumInputs, " inputs and ",
        kMaxEinsumLabels, " output and summed labels; got ", inputs, ", ",
        n_out, " and ", n_sum));
  }
  return absl::OkStatus();
}

class EinsumKernel final : public LaunchKernel<EinsumAttrs, ParseEinsumAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  // Too many inputs or labels for EinsumParams: the CPU takes the node.
  static absl::Status Supports(const Node& node) {
    if (node.num_inputs() > kMaxEinsumInputs) {
      return absl::UnimplementedError(absl::StrCat(
          "CUDA Einsum takes at most ", kMaxEinsumInputs, " inputs, got ",
          node.num_inputs()));
    }
    ASSIGN_OR_RETURN(Attrs attrs, ParseAttrs(node));
    std::vector<int> ranks;
    for (int i = 0; i < node.num_inputs(); ++i) {
      const Shape& s = node.input_shape(i);
      if (s.unknown_rank()) return absl::OkStatus();  // Compute checks
      ranks.push_back(s.rank());
    }
    absl::StatusOr<EinsumEquation> eq = ParseEinsum(attrs.equation, ranks);
    if (!eq.ok()) return absl::OkStatus();  // Compute reports it
    // The label counts need only the equation and the ranks.
    std::vector<bool> in_output(eq->num_labels, false);
    size_t n_out = 0, n_sum = 0;
    for (int id : eq->output) {
      in_output[id] = true;
      ++n_out;
    }
    std::vector<bool> seen(eq->num_labels, false);
    for (const auto& term : eq->inputs) {
      for (int id : term) {
        if (!in_output[id] && !seen[id]) ++n_sum;
        seen[id] = true;
      }
    }
    return CheckFits(ranks.size(), n_out, n_sum);
  }

  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(GpuContext gpu, GetGpu(ctx));
    RETURN_IF_ERROR(CheckGpuInputs(*ctx, gpu));
    std::vector<const Tensor*> inputs;
    for (int i = 0; i < ctx->num_inputs(); ++i) inputs.push_back(&ctx->input(i));
    const DataType t = ctx->input(0).dtype();
    ASSIGN_OR_RETURN(EinsumPlan plan, PlanEinsum(attrs().equation, inputs));
    const EinsumLoop& loop = plan.loop;
    RETURN_IF_ERROR(CheckFits(inputs.size(), loop.out_sizes.size(),
                              loop.sum_sizes.size()));
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, plan.out_shape, t));
    EinsumParams p;
    p.n_in = static_cast<int>(inputs.size());
    p.n_out = static_cast<int>(loop.out_sizes.size());
    p.n_sum = static_cast<int>(loop.sum_sizes.size());
    for (int d = 0; d < p.n_out; ++d) p.out_sizes[d] = loop.out_sizes[d];
    for (int d = 0; d < p.n_sum; ++d) p.sum_sizes[d] = loop.sum_sizes[d];
    for (int k = 0; k < p.n_in; ++k) {
      p.data[k] = ctx->input(k).raw_data();
      for (int d = 0; d < p.n_out; ++d) p.out_strides[k][d] = loop.out_strides[k][d];
      for (int d = 0; d < p.n_sum; ++d) p.sum_strides[k][d] = loop.sum_strides[k][d];
    }
    return LaunchEinsum(ToGpuDtype(t), p, y->raw_data(), y->NumElements(),
                        gpu.stream);
  }
};

}  // namespace

void RegisterEinsumKernels(KernelRegistry* registry) {
  RegisterGpu(registry, "Einsum",
              {{"T", GpuTypesWhere(HasEinsumKernel, GpuAllTypes())}}, MakeKernel<EinsumKernel>,
              {}, EinsumKernel::Supports);
}

}  // namespace sluice::cuda

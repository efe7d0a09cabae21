// SubgraphKernel: a kernel that runs subgraphs (If's branches, Loop's and
// Scan's body). Kernels cannot compile graphs themselves (the plan compiler
// lives in executor/, above kernels/), so the plan compiler hands each
// such kernel a SubgraphCompiler once, right after making it, and the
// kernel compiles its subgraphs then; Compute only runs them.
//
//   absl::Status CompileSubgraphs(const SubgraphCompiler& compile) override {
//     ASSIGN_OR_RETURN(body_, compile(*node().subgraph("body")));
//     return absl::OkStatus();
//   }
//   ... in Compute: ASSIGN_OR_RETURN(std::vector<Tensor> outs,
//                                    body_->Run(std::move(inputs),
//                                               ctx->step_limits()));
//
// A CompiledSubgraph is immutable once made; Run may be called from several
// threads at once.
#ifndef SLUICE_KERNELS_SUBGRAPH_KERNEL_H_
#define SLUICE_KERNELS_SUBGRAPH_KERNEL_H_

#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "graph/graph.h"
#include "kernels/kernel.h"

namespace sluice {

// One subgraph, compiled for the device of the kernel that holds it.
class CompiledSubgraph {
 public:
  virtual ~CompiledSubgraph() = default;
  // `inputs` in the order of the subgraph's signature inputs; returns its
  // outputs in signature order. A node's error names that node. `limits`
  // (borrowed; null: none) are the limits of the step that runs the
  // subgraph (OpKernelContext::step_limits): the subgraph stops before any
  // of its nodes once the step's deadline has passed or it is cancelled,
  // with DEADLINE_EXCEEDED or CANCELLED naming that node, and the step's
  // fault injector sees the subgraph's calls.
  virtual absl::StatusOr<std::vector<Tensor>> Run(
      std::vector<Tensor> inputs, const StepLimits* limits) const = 0;
};

// Compiles a validated subgraph (Node::subgraph) for the kernel's device.
// The graph must outlive the result.
using SubgraphCompiler =
    std::function<absl::StatusOr<std::unique_ptr<CompiledSubgraph>>(
        const Graph& graph)>;

class SubgraphKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  // Called once, before the first Compute. Until it succeeds Compute fails.
  virtual absl::Status CompileSubgraphs(const SubgraphCompiler& compile) = 0;
};

}  // namespace sluice

#endif  // SLUICE_KERNELS_SUBGRAPH_KERNEL_H_

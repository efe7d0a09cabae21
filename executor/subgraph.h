// CompileSubgraph: compiles a control-flow node's subgraph (If's branches,
// Loop's and Scan's body) into a plan on one device, with the same plan
// compiler and step runner a session uses (executor/plan.h, executor.h).
// CompilePlan hands it to every SubgraphKernel (kernels/subgraph_kernel.h)
// it makes, bound to that kernel's device, so nested subgraphs compile
// when their parent does, once per plan.
//
//   ASSIGN_OR_RETURN(std::unique_ptr<CompiledSubgraph> body,
//                    CompileSubgraph(*node.subgraph("body"), gpu, host));
//   ASSIGN_OR_RETURN(std::vector<Tensor> outs,
//                    body->Run(std::move(ins), ctx->step_limits()));
//
// Every node of the subgraph runs on `device`, the device of the
// control-flow node. On a GPU the subgraph's inputs and outputs are in that
// GPU's memory, its constants are copied there once, and the inputs its
// kernels read in host memory (a Reshape's runtime shape) are copied to
// `host`, the session's CPU. The GPU control-flow kernels take only
// subgraphs whose every node has a GPU kernel (kernels/cuda/
// control_flow_kernels.cc). The result is immutable; Run is thread-safe and
// runs the nodes in order on the calling thread, each checked against the
// calling step's limits first (a deadline, a cancellation: the subgraph
// stops before the node, as a step does) and with its fault injector.
#ifndef SLUICE_EXECUTOR_SUBGRAPH_H_
#define SLUICE_EXECUTOR_SUBGRAPH_H_

#include <memory>

#include "absl/status/statusor.h"
#include "device/device.h"
#include "graph/graph.h"
#include "kernels/subgraph_kernel.h"

namespace sluice {

// Feeds are the graph's signature inputs, fetches its signature outputs.
// `graph`, `device` and `host` are borrowed and must outlive the result
// (`host` is used only when `device` is a GPU). Errors: CompilePlan's (a
// node with no kernel on the device names the node).
absl::StatusOr<std::unique_ptr<CompiledSubgraph>> CompileSubgraph(
    const Graph& graph, Device* device, Device* host);

}  // namespace sluice

#endif  // SLUICE_EXECUTOR_SUBGRAPH_H_

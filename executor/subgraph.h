// CompileSubgraph: compiles a control-flow node's subgraph (If's branches,
// Loop's and Scan's body) into a plan on one device, with the same plan
// compiler and step runner a session uses (executor/plan.h, executor.h).
// CompilePlan hands it to every SubgraphKernel (kernels/subgraph_kernel.h)
// it makes, bound to that kernel's device, so nested subgraphs compile
// when their parent does, once per plan.
//
//   ASSIGN_OR_RETURN(std::unique_ptr<CompiledSubgraph> body,
//                    CompileSubgraph(*node.subgraph("body"), cpu));
//   ASSIGN_OR_RETURN(std::vector<Tensor> outs, body->Run(std::move(ins)));
//
// Every node of the subgraph runs on `device` (today always a CPU: the
// control-flow kernels exist only there). The result is immutable; Run is
// thread-safe and runs the nodes in order on the calling thread.
#ifndef SLUICE_EXECUTOR_SUBGRAPH_H_
#define SLUICE_EXECUTOR_SUBGRAPH_H_

#include <memory>

#include "absl/status/statusor.h"
#include "device/device.h"
#include "graph/graph.h"
#include "kernels/subgraph_kernel.h"

namespace sluice {

// Feeds are the graph's signature inputs, fetches its signature outputs.
// `graph` and `device` are borrowed and must outlive the result. Errors:
// CompilePlan's (a node with no kernel on the device names the node).
absl::StatusOr<std::unique_ptr<CompiledSubgraph>> CompileSubgraph(
    const Graph& graph, Device* device);

}  // namespace sluice

#endif  // SLUICE_EXECUTOR_SUBGRAPH_H_

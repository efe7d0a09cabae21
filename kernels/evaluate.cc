// The one constant folder (kernels/evaluate.h).
#include "kernels/evaluate.h"

#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "device/cpu_device.h"
#include "graph/attr_map.h"
#include "graph/loader.h"
#include "kernels/kernel.h"
#include "kernels/kernel_registry.h"

namespace sluice {

absl::StatusOr<std::vector<Tensor>> EvaluateOnCpu(
    const Node& node, const std::vector<Tensor>& inputs) {
  ASSIGN_OR_RETURN(std::unique_ptr<OpKernel> kernel,
                   KernelRegistry::Global()->Create(node, DeviceType::kCpu));
  // One thread, no memory limit, the CPU provider's defaults.
  CpuDevice device(0, /*memory_limit=*/0, /*intra_op_threads=*/1);
  std::vector<Tensor> outputs(node.num_outputs());
  OpKernelContext ctx(&node, &device, inputs, absl::MakeSpan(outputs));
  RETURN_IF_ERROR(kernel->Compute(&ctx));
  for (Tensor& out : outputs) {
    if (!out.valid() || !out.on_host()) {
      return absl::InternalError(absl::StrCat(
          node.DebugName(), ": the CPU kernel set no host output"));
    }
    // The device's allocator dies with it: copy what it allocated.
    if (out.allocator() == CpuAllocator()) continue;
    ASSIGN_OR_RETURN(Tensor copy, Tensor::Create(out.dtype(), out.shape()));
    if (copy.bytes() > 0) {
      std::memcpy(copy.raw_data(), out.raw_data(), copy.bytes());
    }
    out = std::move(copy);
  }
  return outputs;
}

absl::StatusOr<std::vector<Tensor>> EvaluateOpOnCpu(
    const std::string& op, const std::map<std::string, AttrValue>& attrs,
    const std::vector<Tensor>& inputs) {
  GraphDef def;
  NodeDef node;
  node.set_name("op");
  node.set_op(op);
  for (size_t i = 0; i < inputs.size(); ++i) {
    NodeDef* in = def.add_node();
    in->set_name(absl::StrCat("in", i));
    in->set_op("Input");
    (*in->mutable_attr())["dtype"] = MakeTypeAttr(inputs[i].dtype());
    (*in->mutable_attr())["shape"] = MakeShapeAttr(inputs[i].shape());
    node.add_input(in->name());
  }
  for (const auto& [name, value] : attrs) (*node.mutable_attr())[name] = value;
  *def.add_node() = std::move(node);
  ASSIGN_OR_RETURN(std::unique_ptr<const Graph> graph, BuildGraph(def));
  const Node* n = graph->FindNode("op");
  if (n == nullptr) return absl::InternalError("EvaluateOpOnCpu lost its node");
  return EvaluateOnCpu(*n, inputs);
}

}  // namespace sluice

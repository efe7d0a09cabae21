// KernelRegistry: which kernels exist, per (op, device type, dtypes), and
// whether a kernel can run a given node (its capability check looks at the
// node's attributes and inferred shapes). The placer asks it, through
// KernelCapabilityQuery(), which devices can run a node; the executor asks
// it to make the kernel.
//
//   KernelRegistry::Global()->Register({
//       .op = "Relu", .device = DeviceType::kCpu,
//       .type_constraints = {{"T", {DT_FLOAT, DT_FLOAT16}}},
//       .factory = MakeKernel<ReluKernel>});
//   RETURN_IF_ERROR(KernelRegistry::Global()->Supports(node, DeviceType::kGpu));
//   ASSIGN_OR_RETURN(std::unique_ptr<OpKernel> k,
//                    KernelRegistry::Global()->Create(node, DeviceType::kCpu));
//
// Registration happens once, before Global() returns; lookups are
// thread-safe.
#ifndef SLUICE_KERNELS_KERNEL_REGISTRY_H_
#define SLUICE_KERNELS_KERNEL_REGISTRY_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/status_macros.h"
#include "device/device.h"
#include "kernels/kernel.h"

namespace sluice {

using KernelFactory =
    std::function<absl::StatusOr<std::unique_ptr<OpKernel>>(const Node&)>;

// The factory for kernel class K. A kernel with attributes declares
//   struct Attrs {...};
//   static absl::StatusOr<Attrs> ParseAttrs(const Node& node);
//   K(const Node& node, Attrs attrs);
// and MakeKernel parses them once, here, returning ParseAttrs's error (which
// names the attribute; the caller adds the node). A kernel without
// attributes has only K(const Node&).
template <typename K>
absl::StatusOr<std::unique_ptr<OpKernel>> MakeKernel(const Node& node) {
  if constexpr (requires { K::ParseAttrs(node); }) {
    ASSIGN_OR_RETURN(typename K::Attrs attrs, K::ParseAttrs(node));
    return std::unique_ptr<OpKernel>(new K(node, std::move(attrs)));
  } else {
    return std::unique_ptr<OpKernel>(new K(node));
  }
}

// A kernel's capability check: OK when it can run `node` (its attributes,
// and the dtypes and possibly partial shapes inference gave its inputs and
// outputs: Node::input_shape, Node::output_shape; a dimension of -1 is
// unknown and must be accepted unless the rank alone rules it out).
// Otherwise UNIMPLEMENTED (or FAILED_PRECONDITION) with the reason, such as
// "rank 9 > 8", without the node's name.
using KernelSupports = std::function<absl::Status(const Node& node)>;

struct KernelDef {
  std::string op;
  DeviceType device = DeviceType::kCpu;
  // Type attribute -> dtypes this kernel accepts for it. Attributes not
  // listed are unconstrained.
  std::map<std::string, std::vector<DataType>> type_constraints;
  KernelFactory factory;
  // Empty: every node matching type_constraints. Register() makes `factory`
  // run it first, so no kernel is made for a node it refuses.
  KernelSupports supports;
  // Inputs this kernel reads from host memory even on a GPU (shapes,
  // indices it needs on the host).
  std::vector<int> host_memory_inputs;
  // Of host_memory_inputs, those the kernel also reads in the GPU's memory
  // while a step is being recorded as a CUDA graph, checking them there
  // with no wait for the GPU (device/gpu_graph.h's RecordErrorWord): a
  // replayed step copies fed values of these into GPU buffers of its own
  // (executor/gpu_graph_runner.h). Gather's indices.
  std::vector<int> stageable_host_inputs;
  // The kernel reads values computed on the GPU back to the host to size
  // its outputs (NonZero, NonMaxSuppression: output sizes that depend on
  // the data), so it waits for the GPU inside the step and a recorded CUDA
  // graph could not replay it (executor/gpu_graph_runner.h says why not).
  bool sizes_outputs_from_gpu_values = false;
};

class KernelRegistry {
 public:
  static const KernelRegistry* Global();

  void Register(KernelDef def);
  // The kernel for this node on this device type, or NOT_FOUND naming the
  // op, the node's dtypes and the dtypes that are registered.
  absl::StatusOr<const KernelDef*> Find(const Node& node,
                                        DeviceType device) const;
  // OK when the kernel Find returns can run this node (its capability
  // check, KernelDef::supports); Find's NOT_FOUND; or the check's code with
  // "the GPU kernel for Softmax cannot run it: <reason>".
  absl::Status Supports(const Node& node, DeviceType device) const;
  bool Has(const Node& node, DeviceType device) const {
    return Supports(node, device).ok();
  }
  // Find, the capability check, then the factory (attributes are parsed
  // here). A refusal or attribute error is prefixed with the node's
  // DebugName() and the device type.
  absl::StatusOr<std::unique_ptr<OpKernel>> Create(const Node& node,
                                                   DeviceType device) const;
  // All definitions for an op (any device).
  std::vector<const KernelDef*> KernelsFor(const std::string& op) const;

 private:
  std::multimap<std::string, KernelDef, std::less<>> kernels_;
};

// Global()->Supports as a function: the placer's kernel query
// (placer/constraints.h KernelQuery, PlacerOptions::has_kernel), which
// sessions and `sluice place` pass so the placer links no kernels.
std::function<absl::Status(const Node& node, DeviceType type)>
KernelCapabilityQuery();

// Built-in kernel sets; Global() calls each that was compiled in.
void RegisterCpuKernels(KernelRegistry* registry);   // kernels/cpu/
void RegisterCudaKernels(KernelRegistry* registry);  // kernels/cuda/ (CUDA
                                                     // builds only)

}  // namespace sluice

#endif  // SLUICE_KERNELS_KERNEL_REGISTRY_H_

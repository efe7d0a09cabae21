// KernelRegistry: which kernels exist, per (op, device type, dtypes). The
// placer asks it which devices can run a node; the executor asks it to make
// the kernel.
//
//   KernelRegistry::Global()->Register({
//       .op = "Relu", .device = DeviceType::kCpu,
//       .type_constraints = {{"T", {DT_FLOAT, DT_FLOAT16}}},
//       .factory = MakeKernel<ReluKernel>});
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

#include "absl/status/statusor.h"
#include "device/device.h"
#include "kernels/kernel.h"

namespace sluice {

using KernelFactory =
    std::function<absl::StatusOr<std::unique_ptr<OpKernel>>(const Node&)>;

template <typename K>
absl::StatusOr<std::unique_ptr<OpKernel>> MakeKernel(const Node& node) {
  return std::unique_ptr<OpKernel>(new K(node));
}

struct KernelDef {
  std::string op;
  DeviceType device = DeviceType::kCpu;
  // Type attribute -> dtypes this kernel accepts for it. Attributes not
  // listed are unconstrained.
  std::map<std::string, std::vector<DataType>> type_constraints;
  KernelFactory factory;
  // Inputs this kernel reads from host memory even on a GPU (shapes,
  // indices it needs on the host).
  std::vector<int> host_memory_inputs;
};

class KernelRegistry {
 public:
  static const KernelRegistry* Global();

  void Register(KernelDef def);
  // The kernel for this node on this device type, or NOT_FOUND naming the
  // op, the node's dtypes and the dtypes that are registered.
  absl::StatusOr<const KernelDef*> Find(const Node& node,
                                        DeviceType device) const;
  bool Has(const Node& node, DeviceType device) const {
    return Find(node, device).ok();
  }
  absl::StatusOr<std::unique_ptr<OpKernel>> Create(const Node& node,
                                                   DeviceType device) const;
  // All definitions for an op (any device).
  std::vector<const KernelDef*> KernelsFor(const std::string& op) const;

 private:
  std::multimap<std::string, KernelDef, std::less<>> kernels_;
};

// Built-in kernel sets; Global() calls each that was compiled in.
void RegisterCpuKernels(KernelRegistry* registry);   // kernels/cpu/
void RegisterCudaKernels(KernelRegistry* registry);  // kernels/cuda/ (CUDA
                                                     // builds only)

}  // namespace sluice

#endif  // SLUICE_KERNELS_KERNEL_REGISTRY_H_

// The execution provider interface (kernels/execution_provider.h).
#include "kernels/execution_provider.h"

#include "kernels/kernel_registry.h"

namespace sluice {

absl::Status ExecutionProvider::Supports(const Node& node) const {
  return KernelRegistry::Global()->Supports(node, device_type());
}

}  // namespace sluice

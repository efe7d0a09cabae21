// RegisterCpuKernels: every CPU kernel family, registered once.
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/kernel_registry.h"

namespace sluice {

void RegisterCpuKernels(KernelRegistry* registry) {
  cpu::RegisterSourceKernels(registry);
  cpu::RegisterIdentityKernels(registry);
}

}  // namespace sluice

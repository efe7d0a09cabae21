// ProviderSet: the execution providers (kernels/execution_provider.h) one
// session, or one plan, runs on: the CPU's always, the CUDA GPUs' when it
// has GPUs. The session asks the providers it placed on; the optimizer is
// told compute().Target(), it does not look at the machine.
//
//   ProviderSet providers = ProvidersForMachine(config);   // a session
//   ProviderSet planned = ProvidersForPlan(config, /*gpus=*/true);  // place
//   PassOptions options =
//       PassOptionsFromConfig(config, providers.compute().Target());
//
// Immutable after construction; thread-safe. Devices that point to its
// providers (Device::set_provider) must not outlive it.
#ifndef SLUICE_KERNELS_PROVIDERS_H_
#define SLUICE_KERNELS_PROVIDERS_H_

#include <functional>
#include <memory>

#include "absl/status/status.h"
#include "kernels/cpu/cpu_provider.h"
#include "kernels/cuda/cuda_provider.h"
#include "proto/config.pb.h"

namespace sluice {

class ProviderSet {
 public:
  // The CPU's provider, and the GPUs' when `cuda` is set; `gpus_compute`
  // false keeps the optimizer on the CPU's preferences even so (a session
  // that places its nodes on the CPU, ComputeOnGpus).
  ProviderSet(CpuProviderOptions cpu,
              std::unique_ptr<const CudaProviderOptions> cuda,
              bool gpus_compute = true);

  const CpuProvider& cpu() const { return *cpu_; }
  // Null when the set has no GPUs.
  const CudaProvider* cuda() const { return cuda_.get(); }
  // The provider of a device type; null for GPUs in a set without them.
  const ExecutionProvider* Get(DeviceType type) const;
  // The provider whose preferences the optimizer follows: the GPUs' when
  // there are any and they compute (they run the compute-heavy nodes), else
  // the CPU's.
  const ExecutionProvider& compute() const;

  // The placer's kernel query (PlacerOptions::has_kernel) over these
  // providers: a device type without one here has no kernel.
  std::function<absl::Status(const Node& node, DeviceType type)>
  CapabilityQuery() const;

 private:
  std::unique_ptr<const CpuProvider> cpu_;
  std::unique_ptr<const CudaProvider> cuda_;
  bool gpus_compute_ = true;
};

// Whether a session with `config` computes on its GPUs, when it has any:
// false when it places by hand with a CPU as the default device (`sluice
// run --device cpu:0`), so that its passes follow the CPU's preferences
// (layout, weight order) on a machine with GPUs as on one without.
bool ComputeOnGpus(const RuntimeConfig& config);

// The providers a session with `config` gets on this machine: the GPUs'
// when use_gpu (unset is true) and DiscoverDevices() finds a usable GPU,
// with cuDNN probed (device/cudnn_info.h).
ProviderSet ProvidersForMachine(const RuntimeConfig& config);

// The providers of a plan for devices that need not be here (`sluice place
// --devices`): the GPUs' when `gpus`, their libraries assumed present.
ProviderSet ProvidersForPlan(const RuntimeConfig& config, bool gpus);

}  // namespace sluice

#endif  // SLUICE_KERNELS_PROVIDERS_H_

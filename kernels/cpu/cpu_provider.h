// CpuProvider: the CPU's execution provider (kernels/execution_provider.h):
// the loops and Eigen kernels of kernels/cpu/, oneDNN's convolution and
// sgemm where sluice is built with it (Debian's libdnnl-dev), and their
// settings. Its kernels read the settings of the provider of the device
// they run on (CpuProviderOf).
//
//   CpuProvider cpu({.convolutions = CpuConvPath::kLoops});
//   CpuDevice device(0, 0, 4);
//   device.set_provider(&cpu);   // kernels on `device` use the loops
//
// Immutable after construction; thread-safe.
#ifndef SLUICE_KERNELS_CPU_CPU_PROVIDER_H_
#define SLUICE_KERNELS_CPU_CPU_PROVIDER_H_

#include "kernels/execution_provider.h"
#include "proto/config.pb.h"

namespace sluice {

// Which path float32 Conv2D and FusedConv2D take (RuntimeConfig's
// cpu_convolutions).
enum class CpuConvPath {
  // oneDNN where it measured faster than the loops (cpu::PreferOneDnn for
  // NCHW; every problem it takes channels last), else the loops.
  kAuto,
  // oneDNN wherever it takes the problem (for measuring, and tests).
  kOneDnn,
  // sluice's own loops, the reference.
  kLoops,
};

struct CpuProviderOptions {
  CpuConvPath convolutions = CpuConvPath::kAuto;
  // The CPU devices' intra-op thread count (RuntimeConfig's, 0 there meaning
  // every core); 0 here: not known (a provider no session made).
  int intra_op_threads = 0;
};

// The options a config asks for.
CpuProviderOptions CpuProviderOptionsFromConfig(const RuntimeConfig& config);

class CpuProvider final : public ExecutionProvider {
 public:
  explicit CpuProvider(CpuProviderOptions options = {});

  // The provider with default options: the one a device that no session
  // set up (tests, constant folding) stands for.
  static const CpuProvider& Default();

  const CpuProviderOptions& options() const { return options_; }

  // Whether float32 convolutions channels last run on oneDNN here: built
  // with it, and the settings allow it. conv_layout AUTO is NHWC for the
  // CPU exactly then (ResNet-50 batch 1 on 16 cores ran its convolutions
  // 1.9x faster so: docs/design.md decision 32).
  bool RunsNhwcConvolutionsOnOneDnn() const;

  std::string_view name() const override { return "cpu"; }
  DeviceType device_type() const override { return DeviceType::kCpu; }
  OptimizationTarget Target() const override;
  std::vector<LibraryReport> Libraries() const override;
  // True when `nodes` hold a node that takes every core on an OpenMP team
  // of the intra-op thread count: any node, where that count's parallel
  // regions all run on OpenMP teams (kLeastThreadsForTeamRegions, design
  // decision 66), else a convolution channels last on oneDNN. Teams started
  // from several inter-op threads at once would share the cores (ResNet-50
  // batch 1 on 16 cores: 10.6 ms with 16 inter-op threads, 7.3-9.3 ms
  // with one), and each inter-op thread would keep a team of its own.
  bool RunsNodesOneAtATime(const Graph& graph,
                           absl::Span<const int> nodes) const override;

 private:
  const CpuProviderOptions options_;
};

// The CPU provider of `device` (its provider(), or Default() when it has
// none). REQUIRES: device is a CPU device or null.
const CpuProvider& CpuProviderOf(const Device* device);

}  // namespace sluice

#endif  // SLUICE_KERNELS_CPU_CPU_PROVIDER_H_

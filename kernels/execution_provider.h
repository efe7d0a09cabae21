// ExecutionProvider: one backend's home, as onnxruntime's execution
// providers are. A provider owns the kernels of one device type and their
// registration, the libraries they load, what they can run (the capability
// query the placer asks), the layout its convolutions want (what the
// optimizer is told), what it needs from the session's threads, and its
// tunable settings (RuntimeConfig fields, never environment variables).
// A session makes one provider per device type (kernels/providers.h);
// every device of that type points to it (Device::provider()), and kernels
// read their provider's settings from the device they run on.
//
//   ASSIGN_OR_RETURN(ProviderSet providers, ProvidersForMachine(config));
//   const ExecutionProvider& cpu = providers.cpu();
//   OptimizationTarget target = providers.compute().Target();
//   bool serial = cpu.RunsNodesOneAtATime(graph, nodes_on_the_cpu);
//
// Immutable after construction; every method is thread-safe.
#ifndef SLUICE_KERNELS_EXECUTION_PROVIDER_H_
#define SLUICE_KERNELS_EXECUTION_PROVIDER_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "device/device.h"
#include "graph/data_format.h"
#include "graph/graph.h"

namespace sluice {

class KernelRegistry;

// A library a provider loads or was built with, as `sluice devices` lists it.
struct LibraryReport {
  std::string name;        // "oneDNN", "cuDNN"
  bool available = false;  // built in, or loaded at run time
  std::string detail;      // its version, or why it is not there
};

// What the optimizer is told about the provider that will run a graph's
// compute (optimizer/pipeline.h resolves conv_layout AUTO with it): the
// optimizer decides nothing from the machine it runs on, so `sluice place`
// can plan for devices that are not present.
struct OptimizationTarget {
  std::string provider = "cpu";  // for messages
  // The layout convolutions run fastest in, by the precision they run in.
  DataFormat conv_layout_float32 = DataFormat::kNchw;
  DataFormat conv_layout_reduced = DataFormat::kNchw;  // float16, bfloat16
  // Whether a graph with a grouped or depthwise convolution stays NCHW when
  // the layout above is NHWC (cuDNN's channels-last depthwise kernels ran
  // slower: docs/design.md decision 31).
  bool grouped_convs_stay_nchw = false;
  // Whether a graph that AUTO's choice (NCHW above) leaves with more
  // Transposes than it would have channels last still runs channels last:
  // a model that permutes its activations to channels last itself
  // (ConvNeXt's LayerNorms and Linears), whose permutes then cancel. For
  // cuDNN (ConvNeXt-T on an H100, 2026-12-06: 1.30 ms NCHW, 1.14 ms
  // channels last).
  bool nhwc_where_fewer_transposes = false;
  // Whether its FusedConv2D applies hardswish, hardsigmoid, sigmoid and
  // silu itself, so the optimizer may fold them into the convolution
  // (docs/design.md decision 40); relu and relu6 every provider takes.
  bool convs_apply_smooth_activations = false;
  // Nonzero: its float32 GEMM runs faster on a weight stored transposed,
  // [n, k] with transpose_b, when a row of the [k, n] weight is a multiple
  // of this many bytes, so gemm_weight_layout stores such weights
  // transposed (docs/design.md decisions 47, 69). 0: weights stay as they
  // are.
  int64_t gemm_transposed_weight_row_bytes = 0;
};

class ExecutionProvider {
 public:
  virtual ~ExecutionProvider() = default;

  // "cpu", "cuda".
  virtual std::string_view name() const = 0;
  virtual DeviceType device_type() const = 0;

  // The optimizer's view of this provider (see OptimizationTarget).
  virtual OptimizationTarget Target() const = 0;

  // The libraries behind its kernels, loaded or not, with why not.
  virtual std::vector<LibraryReport> Libraries() const = 0;

  // Whether the session must run `nodes` (ids of `graph` placed on this
  // provider's devices) one at a time rather than on its inter-op threads:
  // a kernel that takes every core itself (an OpenMP team) would meet
  // others doing the same.
  virtual bool RunsNodesOneAtATime(const Graph& graph,
                                   absl::Span<const int> nodes) const {
    (void)graph, (void)nodes;
    return false;
  }

  // OK when a kernel of this provider can run `node`, else the registry's
  // reason (the placer's capability query).
  absl::Status Supports(const Node& node) const;
};

}  // namespace sluice

#endif  // SLUICE_KERNELS_EXECUTION_PROVIDER_H_

// libFuzzer target: arbitrary bytes as the device arguments of the command
// line: `sluice place --devices SPEC` (ParseDeviceSpecs, with and without
// GPU peer access), and for a spec that parses, the placer on those devices
// (AUTO and SINGLE) over a small two-branch graph with 4 MiB weights, so
// that tiny budgets, many devices and mixed CPUs and GPUs meet the memory
// checks; `run --device DEV` / default_device (ParseDeviceName); and the
// sizes and limits inside them (ParseByteSize, ParseMemoryLimit). Any crash,
// sanitizer report or abort is a bug.
//
//   build-asan/tests/fuzz/device_spec_fuzz -timeout=2 \
//     tests/fuzz/corpus/device_spec_fuzz
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "absl/strings/string_view.h"
#include "core/byte_size.h"
#include "device/device.h"
#include "executor/runtime_config.h"
#include "google/protobuf/text_format.h"
#include "graph/loader.h"
#include "placer/device_spec.h"
#include "placer/placer.h"

namespace {

// Two MatMul branches on one input, each with 2 MiB of weights.
constexpr char kGraph[] = R"pb(
  node {
    name: "x" op: "Input"
    attr { key: "dtype" value { type: DT_FLOAT } }
    attr { key: "shape" value { shape { dim: [ -1, 1024 ] } } }
  }
  node {
    name: "w1" op: "Const"
    attr { key: "value" value { tensor { dtype: DT_FLOAT
      shape { dim: [ 1024, 512 ] } float_val: [ 0.5 ] } } }
  }
  node {
    name: "w2" op: "Const"
    attr { key: "value" value { tensor { dtype: DT_FLOAT
      shape { dim: [ 1024, 512 ] } float_val: [ 0.25 ] } } }
  }
  node { name: "a" op: "MatMul" input: "x" input: "w1" }
  node { name: "b" op: "MatMul" input: "x" input: "w2" }
  node { name: "y" op: "Add" input: "a" input: "b" }
  signature {
    inputs { name: "x" dtype: DT_FLOAT shape { dim: [ -1, 1024 ] } }
    outputs { name: "y" dtype: DT_FLOAT shape { dim: [ -1, 512 ] } tensor: "y" }
  }
)pb";

const sluice::Graph& TestGraph() {
  static const sluice::Graph* graph = [] {
    sluice::GraphDef def;
    if (!google::protobuf::TextFormat::ParseFromString(kGraph, &def)) abort();
    absl::StatusOr<std::unique_ptr<const sluice::Graph>> g =
        sluice::BuildGraph(def);
    if (!g.ok()) abort();  // the harness's own graph must build
    return g->release();
  }();
  return *graph;
}

void Place(const sluice::DeviceTopology& topo) {
  for (sluice::PlacementStrategy strategy :
       {sluice::PLACEMENT_AUTO, sluice::PLACEMENT_SINGLE}) {
    sluice::PlacerOptions options;
    options.strategy = strategy;
    options.record_reasons = true;
    options.gpu_first = true;
    options.min_spread_gain = sluice::kRuntimeMinSpreadGain;
    // As in a CUDA build: every device type has a kernel for every node.
    options.has_kernel = [](const sluice::Node&, sluice::DeviceType) {
      return absl::OkStatus();
    };
    (void)sluice::PlaceGraph(TestGraph(), topo, options);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (bool peer : {true, false}) {
    absl::StatusOr<sluice::DeviceTopology> topo =
        sluice::ParseDeviceSpecs(text, peer);
    if (topo.ok()) Place(*topo);
  }
  (void)sluice::ParseDeviceName(text);
  (void)sluice::ParseByteSize(text);
  (void)sluice::ParseMemoryLimit(text);
  return 0;
}

// CostModel: what each node costs, from its op and inferred shapes: FLOPs,
// bytes moved, bytes of each output (activations) and of its weights (Const
// values), and from those an estimated time per node per device and per
// edge per device pair. Unknown dimensions count as `batch` (default 1).
//
//   CostModel cost(graph, {.batch = 32});
//   double t = cost.NodeSeconds(node_id, topo.devices[d]);
//   double c = topo.TransferSeconds(src, dst, cost.output_bytes(node_id, 0));
//
// Immutable after construction; thread-safe to read. Borrows nothing.
#ifndef SLUICE_PLACER_COST_MODEL_H_
#define SLUICE_PLACER_COST_MODEL_H_

#include <cstdint>
#include <vector>

#include "graph/graph.h"
#include "placer/device_spec.h"

namespace sluice {

struct CostModelOptions {
  // The value assumed for every unknown dimension (typically the batch).
  int64_t batch = 1;
};

class CostModel {
 public:
  CostModel(const Graph& graph, const CostModelOptions& options = {});

  int num_nodes() const { return static_cast<int>(flops_.size()); }
  // Arithmetic operations of one run of the node.
  double flops(int node) const { return flops_[node]; }
  // Bytes read and written in device memory by one run (0 for views such
  // as Reshape and for nodes that do not run).
  double bytes_moved(int node) const { return bytes_[node]; }
  // Whether the node runs a kernel each step (Const and Input do not).
  bool runs(int node) const { return runs_[node] != 0; }
  // Bytes of output `port`, unknown dimensions taken as `batch`.
  int64_t output_bytes(int node, int port) const {
    return output_bytes_[output_offset_[node] + port];
  }
  // Flat index of (node, port) over all outputs, and the total count.
  int output_index(int node, int port) const {
    return output_offset_[node] + port;
  }
  int num_outputs_total() const {
    return static_cast<int>(output_bytes_.size());
  }
  int64_t output_bytes_flat(int index) const { return output_bytes_[index]; }
  // Bytes of the node's weights: a Const's value; 0 for other nodes.
  int64_t weight_bytes(int node) const { return weights_[node]; }
  int64_t total_weight_bytes() const { return total_weights_; }

  // max(flops / rate, bytes / bandwidth) plus the device's launch overhead;
  // 0 for nodes that do not run.
  double NodeSeconds(int node, const DeviceSpec& device) const {
    if (!runs_[node]) return 0;
    double rate = half_[node] ? device.half_flops_per_s : device.flops_per_s;
    double compute = flops_[node] / rate;
    double memory = bytes_[node] / device.bytes_per_s;
    return device.launch_seconds + (compute > memory ? compute : memory);
  }

 private:
  std::vector<double> flops_;
  std::vector<double> bytes_;
  std::vector<char> runs_;
  std::vector<char> half_;  // float16 / bfloat16 GEMM or convolution
  std::vector<int> output_offset_;
  std::vector<int64_t> output_bytes_;
  std::vector<int64_t> weights_;
  int64_t total_weights_ = 0;
};

// Elements of `shape` with unknown dimensions taken as `batch` (and an
// unknown rank as a single element); saturates at kMaxElements.
int64_t EstimatedElements(const Shape& shape, int64_t batch);

}  // namespace sluice

#endif  // SLUICE_PLACER_COST_MODEL_H_

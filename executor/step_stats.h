// StepStats: where one step's time went, node by node. Filled by RunPlan
// when the caller asks (Session::RunWithStats); `sluice bench` aggregates it
// per op, per node and per link, and tools/trace.h writes it as a Chrome
// trace.
//
//   StepStats stats;
//   ASSIGN_OR_RETURN(auto out, session->RunWithStats(feeds, {}, &stats));
//   for (const NodeTiming& t : stats.nodes) ... t.seconds() ...
//
// Every node has a host slice: when a host thread ran its kernel (for a GPU
// node, the launch). A node whose work runs on a GPU stream (a GPU kernel, or
// a copy to, from or between GPUs) also has a GPU slice: when that stream ran
// it, timed with CUDA events (device/gpu_timeline.h) on the same clock. So a
// profiled step runs like a plain one, except that work on one GPU is
// enqueued by one thread at a time and each node costs two events.
// Filled by the step's threads under a mutex; read it after the step returns.
#ifndef SLUICE_EXECUTOR_STEP_STATS_H_
#define SLUICE_EXECUTOR_STEP_STATS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "device/device.h"
#include "device/gpu_device.h"
#include "graph/graph.h"

namespace sluice {

struct NodeTiming {
  const Node* node = nullptr;     // for copies: the producer of the value
  const Device* device = nullptr; // where it ran; for copies the destination
  bool is_copy = false;           // a transfer the plan inserted
  const Device* copy_source = nullptr;  // copies: where the value came from
  // The host slice, in seconds since the step started.
  double start_seconds = 0;
  double end_seconds = 0;
  size_t thread = 0;              // a hash of the host thread that ran it
  // The GPU slice (when gpu_timed): which GPU's stream ran it (for a copy,
  // the GPU that owns the stream: the destination's host-to-device stream,
  // the source's device-to-host or device-to-device stream), and when.
  bool gpu_timed = false;
  const Device* gpu = nullptr;
  GpuStream stream = GpuStream::kCompute;
  double gpu_start_seconds = 0;
  double gpu_end_seconds = 0;
  // Bytes of the node's outputs (for a copy: the bytes moved), and its
  // shapes, e.g. "float32[1,64,256], float32[256] -> float32[1,64,256]".
  int64_t bytes = 0;
  std::string shapes;
  // Marks on the GPU timeline; internal to the executor.
  int gpu_begin_mark = -1;
  int gpu_end_mark = -1;

  double host_seconds() const { return end_seconds - start_seconds; }
  // How long the node occupied its device: the GPU slice when there is one,
  // else the host slice.
  double seconds() const {
    return gpu_timed ? gpu_end_seconds - gpu_start_seconds : host_seconds();
  }
};

struct StepStats {
  absl::Mutex mu;
  std::vector<NodeTiming> nodes ABSL_GUARDED_BY(mu);
  double step_seconds = 0;  // wall time of the whole step
  // How far GPU slices may sit from the host clock (the largest over the
  // step's GPUs; see device/gpu_timeline.h).
  double gpu_alignment_error_seconds = 0;
};

}  // namespace sluice

#endif  // SLUICE_EXECUTOR_STEP_STATS_H_

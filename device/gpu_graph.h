// GpuGraph: a GPU's compute-stream work recorded once and replayed with one
// launch (a CUDA graph), so that a step of many small kernels costs one
// launch instead of one per kernel.
//
//   RETURN_IF_ERROR(BeginGpuCapture(gpu));
//   ... enqueue kernels on gpu->compute_stream() (they do not run yet) ...
//   ASSIGN_OR_RETURN(std::unique_ptr<GpuGraph> graph, EndGpuCapture(gpu));
//   RETURN_IF_ERROR(graph->Launch());   // runs them; repeat at will
//
// What is recorded are the kernels and the addresses they read and write:
// a replay reads and writes the same memory, so the caller keeps every
// tensor the captured work touches alive, and at the same address, for as
// long as the graph is replayed. While capturing, work is recorded, not
// run: a kernel that waits for the GPU or reads its results on the host
// makes the capture fail, and so does any copy through the GPU's copy
// streams (GpuDevice refuses them while its compute stream is capturing).
// After a failed capture, EndGpuCapture returns the error and the device is
// usable as before.
//
// Capture is in CUDA's relaxed mode from the calling thread: other threads'
// CUDA calls are unaffected. Launch is thread-safe; a graph is used by one
// step at a time (it always writes the same memory).
#ifndef SLUICE_DEVICE_GPU_GRAPH_H_
#define SLUICE_DEVICE_GPU_GRAPH_H_

#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "device/gpu_device.h"

namespace sluice {

class GpuGraph {
 public:
  virtual ~GpuGraph() = default;
  // Enqueues the recorded work on the device's compute stream.
  virtual absl::Status Launch() = 0;
  // How many kernels and other operations the graph holds.
  virtual int num_nodes() const = 0;
};

#ifdef SLUICE_WITH_CUDA
// Starts recording `gpu`'s compute stream.
absl::Status BeginGpuCapture(GpuDevice* gpu);
// Stops recording and instantiates the graph. Errors: whatever made the
// capture fail (FAILED_PRECONDITION when nothing was recorded).
absl::StatusOr<std::unique_ptr<GpuGraph>> EndGpuCapture(GpuDevice* gpu);
// Whether `gpu`'s compute stream is being recorded now.
bool IsCapturing(const GpuDevice* gpu);
#else
inline absl::Status BeginGpuCapture(GpuDevice*) {
  return absl::UnimplementedError("this build of sluice has no CUDA support");
}
inline absl::StatusOr<std::unique_ptr<GpuGraph>> EndGpuCapture(GpuDevice*) {
  return absl::UnimplementedError("this build of sluice has no CUDA support");
}
inline bool IsCapturing(const GpuDevice*) { return false; }
#endif  // SLUICE_WITH_CUDA

}  // namespace sluice

#endif  // SLUICE_DEVICE_GPU_GRAPH_H_

// GpuGraph: a GPU's compute-stream work recorded once and replayed with one
// launch (a CUDA graph), so that a step of many small kernels costs one
// launch instead of one per kernel.
//
//   RETURN_IF_ERROR(BeginGpuCapture(gpu, workspace));  // a GPU tensor
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
// The recorded GEMMs use a cuBLAS workspace of the graph's own (the caller's
// `workspace` tensor, kept alive like the rest), never the device's: a
// launch is one operation on the compute stream, so it can land between the
// operations of a GEMM that another thread is enqueueing (a split-K partial
// product and its reduction, say), and with one shared workspace the graph's
// GEMMs would overwrite that GEMM's partial results. On the H200 that gave
// one wrong result in 16 when replays overlapped ordinary steps
// (2026-11-29).
//
// Capture is in CUDA's relaxed mode from the calling thread; it records the
// compute stream that every kernel on the device uses, and it points the
// device's cuBLAS handle at the graph's workspace until EndGpuCapture, so no
// other thread may launch kernels on the device in between (the caller
// sees to that). Copies from other threads wait for the capture to end
// (GpuDevice::capture_mutex()); copies from the capturing thread fail.
// Launch is thread-safe and may overlap other work on the device (other
// graphs included); a graph is used by one step at a time (it always writes
// the same memory). SetHostInputSource is not: it is called between a
// Wait() and the next Launch() by the one step that uses the graph.
#ifndef SLUICE_DEVICE_GPU_GRAPH_H_
#define SLUICE_DEVICE_GPU_GRAPH_H_

#include <cstdint>
#include <functional>
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
  // Waits for the last launch to finish (OK at once when none was made).
  virtual absl::Status Wait() = 0;
  // After a launch: waits for it to finish, then returns the error that the
  // first error word set in it reports (see RecordErrorWord), or OK.
  virtual absl::Status CheckErrors() = 0;
  // How many error words the graph holds.
  virtual int num_error_words() const = 0;
  // Points the recorded copy of host input `i` (the i-th RecordHostInput of
  // the recording, counted from 0) at `src`, page-locked host memory
  // (device/pinned_memory.h) of at least that input's bytes, for the
  // launches from now on: a caller's pinned feed is then read by the
  // graph's own DMA, with no copy into the graph's buffer. `src` null
  // points it back at the graph's buffer (OK at once when it reads it
  // already). Launches already enqueued are not affected
  // (cudaGraphExecMemcpyNodeSetParams1D). REQUIRES: `src` stays valid and
  // unchanged until the launches that read it are done (after Wait()).
  // Errors: UNIMPLEMENTED when the input's copy was not found among the
  // graph's nodes, or CUDA's refusal (memory of another context); the copy
  // then reads what it read before.
  virtual absl::Status SetHostInputSource(int i, const void* src) = 0;
};

// What an error word's value means: the error to report for it (a nonzero
// value the recorded work wrote).
using ErrorWordExplainer = std::function<absl::Status(uint64_t value)>;
// The most error words one recording may hold.
inline constexpr int kMaxErrorWords = 64;

#ifdef SLUICE_WITH_CUDA
// Starts recording `gpu`'s compute stream on the calling thread, with
// `cublas_workspace` (a tensor in gpu's memory; gpu->cublas_workspace_bytes()
// is the size the device's own has) as the recorded GEMMs' workspace. Waits
// for copies in flight on `gpu`. REQUIRES: no other thread launches work on
// `gpu` until EndGpuCapture; the same thread calls EndGpuCapture once this
// returns OK.
absl::Status BeginGpuCapture(GpuDevice* gpu, const Tensor& cublas_workspace);
// Stops recording, points the cuBLAS handle back at the device's own
// workspace, lets copies go on, and instantiates the graph. Errors: whatever
// made the capture fail (FAILED_PRECONDITION when nothing was recorded).
absl::StatusOr<std::unique_ptr<GpuGraph>> EndGpuCapture(GpuDevice* gpu);
// While the calling thread records `gpu`: a word of the graph's GPU memory
// that the work recorded after this call may set (nonzero) to report an
// error it found on the GPU, such as an index out of range, where an
// ordinary step would read a flag back and wait. Every launch zeroes the
// word at this point of the graph; GpuGraph::CheckErrors() reads the words
// after the launch and returns `explain(value)` for the first one set.
// FAILED_PRECONDITION when this thread is not recording `gpu`,
// RESOURCE_EXHAUSTED past kMaxErrorWords.
absl::StatusOr<unsigned long long*> RecordErrorWord(GpuDevice* gpu,
                                                    ErrorWordExplainer explain);
// While the calling thread records `gpu`: records a copy into `dst` (a
// tensor in gpu's memory) from a pinned host buffer of the graph's own, of
// dst's size, and returns that buffer. The caller writes the value there
// before each launch (after Wait(): the last launch may still be reading
// it), so a step's input travels inside the graph, at pinned speed.
absl::StatusOr<void*> RecordHostInput(GpuDevice* gpu, const Tensor& dst);
// Whether `gpu`'s compute stream is being recorded now.
bool IsCapturing(const GpuDevice* gpu);
// Whether the calling thread is recording `gpu`'s compute stream.
bool CapturingOnThisThread(const GpuDevice* gpu);
#else
inline absl::Status BeginGpuCapture(GpuDevice*, const Tensor&) {
  return absl::UnimplementedError("this build of sluice has no CUDA support");
}
inline absl::StatusOr<std::unique_ptr<GpuGraph>> EndGpuCapture(GpuDevice*) {
  return absl::UnimplementedError("this build of sluice has no CUDA support");
}
inline absl::StatusOr<unsigned long long*> RecordErrorWord(
    GpuDevice*, ErrorWordExplainer) {
  return absl::UnimplementedError("this build of sluice has no CUDA support");
}
inline absl::StatusOr<void*> RecordHostInput(GpuDevice*, const Tensor&) {
  return absl::UnimplementedError("this build of sluice has no CUDA support");
}
inline bool IsCapturing(const GpuDevice*) { return false; }
inline bool CapturingOnThisThread(const GpuDevice*) { return false; }
#endif  // SLUICE_WITH_CUDA

}  // namespace sluice

#endif  // SLUICE_DEVICE_GPU_GRAPH_H_

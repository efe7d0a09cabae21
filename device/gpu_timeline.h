// GpuTimeline: when one GPU's streams reached points in their work, on the
// host's clock. A profiled step (executor/step_stats.h) brackets each kernel
// and transfer with two marks on the stream it runs on and, after the step,
// reads back when the GPU passed each mark: the slice a kernel occupied on
// its stream, comparable with the host threads' slices.
//
//   ASSIGN_OR_RETURN(std::unique_ptr<GpuTimeline> tl, StartGpuTimeline(gpu));
//   ASSIGN_OR_RETURN(int begin, tl->Mark(GpuStream::kCompute));
//   ... enqueue a kernel on the compute stream ...
//   ASSIGN_OR_RETURN(int end, tl->Mark(GpuStream::kCompute));
//   ASSIGN_OR_RETURN(std::vector<double> at, tl->Resolve());   // waits
//   double kernel_seconds = at[end] - at[begin];
//
// Marks are CUDA events (timing enabled, about 0.5 us resolution). Times are
// seconds after start_time(), a host steady_clock instant: StartGpuTimeline
// waits until the device is idle, takes the host time, and records an anchor
// event that the idle GPU passes at once. The GPU reached the anchor between
// start_time() and start_time() + alignment_error_seconds() (a few
// microseconds), which bounds how far GPU and host slices may be misaligned.
//
// Thread-safe. Every mark is an event: Reserve them before the timed region.
#ifndef SLUICE_DEVICE_GPU_TIMELINE_H_
#define SLUICE_DEVICE_GPU_TIMELINE_H_

#include <chrono>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "device/gpu_device.h"

namespace sluice {

class GpuTimeline {
 public:
  virtual ~GpuTimeline() = default;

  // Creates events for `marks` more marks now, so that Mark only records
  // one (creating a CUDA event can stall the host; keep it out of the
  // timed region).
  virtual absl::Status Reserve(int marks) = 0;
  // Records a mark on `which` stream of the device, after the work enqueued
  // there so far; returns its id (0, 1, 2, ... in call order).
  virtual absl::StatusOr<int> Mark(GpuStream which) = 0;
  // Waits for every mark to be passed and returns, by id, the seconds from
  // start_time() at which the GPU passed it. Call after the last Mark.
  virtual absl::StatusOr<std::vector<double>> Resolve() = 0;

  std::chrono::steady_clock::time_point start_time() const { return start_; }
  double alignment_error_seconds() const { return alignment_error_; }

 protected:
  std::chrono::steady_clock::time_point start_;
  double alignment_error_ = 0;
};

#ifdef SLUICE_WITH_CUDA
// Synchronises `device` (returning any error its streams left behind) and
// starts a timeline on it.
absl::StatusOr<std::unique_ptr<GpuTimeline>> StartGpuTimeline(
    GpuDevice* device);
#else
inline absl::StatusOr<std::unique_ptr<GpuTimeline>> StartGpuTimeline(
    GpuDevice*) {
  return absl::UnimplementedError("this build of sluice has no CUDA support");
}
#endif  // SLUICE_WITH_CUDA

}  // namespace sluice

#endif  // SLUICE_DEVICE_GPU_TIMELINE_H_

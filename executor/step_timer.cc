#include "executor/step_timer.h"

#include <functional>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "executor/copy_kernel.h"

namespace sluice {
namespace {

GpuDevice* AsGpu(Device* d) {
  return d != nullptr && d->type() == DeviceType::kGpu
             ? static_cast<GpuDevice*>(d)
             : nullptr;
}

Device* CopySource(const PlanNode& pn) {
  return pn.is_copy ? static_cast<const CopyKernel*>(pn.kernel.get())->src()
                    : nullptr;
}

std::string ShapeOf(const Tensor& t) {
  if (!t.valid()) return "?";
  return absl::StrCat(DataTypeName(t.dtype()), t.shape().DebugString());
}

void AppendShapes(const std::vector<Tensor>& values, const std::vector<int>& slots,
                  std::string* out) {
  for (size_t i = 0; i < slots.size(); ++i) {
    absl::StrAppend(out, i > 0 ? ", " : "", ShapeOf(values[slots[i]]));
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<StepTimer>> StepTimer::Start(
    const ExecutionPlan& plan, StepStats* stats) {
  std::unique_ptr<StepTimer> timer(new StepTimer(stats));
  for (const PlanNode& pn : plan.nodes) {
    for (Device* d : {pn.device, CopySource(pn)}) {
      GpuDevice* gpu = AsGpu(d);
      if (gpu == nullptr) continue;
      bool known = false;
      for (const auto& t : timer->tracks_) known |= t->gpu == gpu;
      if (known) continue;
      auto track = std::make_unique<Track>();
      track->gpu = gpu;
      ASSIGN_OR_RETURN(track->timeline, StartGpuTimeline(gpu));
      timer->tracks_.push_back(std::move(track));
    }
  }
  // Two marks per node on each GPU, created now rather than in the step.
  for (const auto& track : timer->tracks_) {
    int marks = 0;
    for (const PlanNode& pn : plan.nodes) {
      GpuStream stream;
      marks += timer->TrackFor(pn, &stream) == track.get() ? 2 : 0;
    }
    RETURN_IF_ERROR(track->timeline->Reserve(marks));
  }
  timer->start_ = Clock::now();
  return timer;
}

double StepTimer::Now() const {
  return std::chrono::duration<double>(Clock::now() - start_).count();
}

StepTimer::Track* StepTimer::TrackFor(const PlanNode& pn, GpuStream* stream) {
  GpuDevice* gpu = nullptr;
  if (!pn.is_copy) {
    gpu = AsGpu(pn.device);
    *stream = GpuStream::kCompute;
  } else if (GpuDevice* src = AsGpu(CopySource(pn)); src != nullptr) {
    gpu = src;  // device-to-host and device-to-device run on the source
    *stream = AsGpu(pn.device) != nullptr ? GpuStream::kDeviceToDevice
                                          : GpuStream::kDeviceToHost;
  } else {
    gpu = AsGpu(pn.device);
    *stream = GpuStream::kHostToDevice;
  }
  if (gpu == nullptr) return nullptr;
  for (const auto& t : tracks_) {
    if (t->gpu == gpu) return t.get();
  }
  return nullptr;
}

absl::Status StepTimer::Time(const PlanNode& pn,
                             const std::vector<Tensor>& values,
                             absl::FunctionRef<absl::Status()> compute) {
  NodeTiming t;
  t.node = pn.node;
  t.device = pn.device;
  t.is_copy = pn.is_copy;
  t.copy_source = CopySource(pn);
  t.thread = std::hash<std::thread::id>()(std::this_thread::get_id());
  AppendShapes(values, pn.input_slots, &t.shapes);
  Track* track = TrackFor(pn, &t.stream);

  absl::Status status;
  {
    // The host slice starts once this thread may enqueue on the GPU, so it
    // shows the launch, not the wait for the profiler's lock.
    std::optional<absl::MutexLock> lock;
    if (track != nullptr) lock.emplace(&track->mu);
    t.start_seconds = Now();
    if (track != nullptr) {
      // A copy first waits for the compute stream; the slice starts after
      // that wait, so it holds only the transfer.
      if (pn.is_copy) {
        RETURN_IF_ERROR(track->gpu->StreamWait(t.stream, GpuStream::kCompute));
      }
      ASSIGN_OR_RETURN(t.gpu_begin_mark, track->timeline->Mark(t.stream));
    }
    status = compute();
    if (track != nullptr) {
      ASSIGN_OR_RETURN(t.gpu_end_mark, track->timeline->Mark(t.stream));
      t.gpu = track->gpu;
    }
    t.end_seconds = Now();
  }

  std::vector<int> outputs;
  for (int p = 0; p < pn.num_outputs; ++p) {
    const Tensor& out = values[pn.output_slot + p];
    if (out.valid()) t.bytes += static_cast<int64_t>(out.bytes());
    outputs.push_back(pn.output_slot + p);
  }
  absl::StrAppend(&t.shapes, " -> ");
  AppendShapes(values, outputs, &t.shapes);
  absl::MutexLock lock(&stats_->mu);
  stats_->nodes.push_back(std::move(t));
  return status;
}

absl::Status StepTimer::Finish() {
  stats_->step_seconds = Now();
  absl::MutexLock lock(&stats_->mu);
  for (const auto& track : tracks_) {
    ASSIGN_OR_RETURN(std::vector<double> at, track->timeline->Resolve());
    const double offset = std::chrono::duration<double>(
                              track->timeline->start_time() - start_)
                              .count();
    stats_->gpu_alignment_error_seconds =
        std::max(stats_->gpu_alignment_error_seconds,
                 track->timeline->alignment_error_seconds());
    for (NodeTiming& t : stats_->nodes) {
      if (t.gpu != track->gpu || t.gpu_begin_mark < 0) continue;
      t.gpu_timed = true;
      t.gpu_start_seconds = offset + at[t.gpu_begin_mark];
      t.gpu_end_seconds = offset + at[t.gpu_end_mark];
    }
  }
  return absl::OkStatus();
}

}  // namespace sluice

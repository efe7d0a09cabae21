// The first step's progress line (tools/first_step_progress.h).
#include "tools/first_step_progress.h"

#include "absl/strings/str_cat.h"

namespace sluice {

FirstStepProgress::FirstStepProgress(ProgressLine* line,
                                     std::chrono::milliseconds quiet_for,
                                     std::chrono::milliseconds every)
    : line_(line), start_(AlgorithmCache::ProcessActivity()) {
  if (line_ == nullptr || !line_->enabled()) return;
  line_->Restart();
  thread_ = std::thread([this, quiet_for, every] { Loop(quiet_for, every); });
}

FirstStepProgress::~FirstStepProgress() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  thread_.join();
  line_->Clear();
}

std::string FirstStepProgress::Text(const AlgorithmCache::Activity& start,
                                    const AlgorithmCache::Activity& now) {
  std::string text = "sluice: first step";
  const int64_t timed = now.problems_timed - start.problems_timed;
  if (!now.timing_now.empty()) {
    absl::StrAppend(&text, ", timing ", now.timing_now, " algorithms");
    if (timed > 0) {
      absl::StrAppend(&text, " (", timed, timed == 1 ? " problem" : " problems",
                      " timed)");
    }
  } else if (timed > 0) {
    absl::StrAppend(&text, " (", timed,
                    timed == 1 ? " problem's" : " problems'",
                    " algorithms timed)");
  }
  return text;
}

void FirstStepProgress::Loop(std::chrono::milliseconds quiet_for,
                             std::chrono::milliseconds every) {
  std::unique_lock<std::mutex> lock(mu_);
  if (stop_cv_.wait_for(lock, quiet_for, [this] { return stop_; })) return;
  while (true) {
    line_->Timed(Text(start_, AlgorithmCache::ProcessActivity()));
    if (stop_cv_.wait_for(lock, every, [this] { return stop_; })) return;
  }
}

}  // namespace sluice

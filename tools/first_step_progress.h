// FirstStepProgress: a progress line while a session's first step runs.
// That step loads kernels and, on a GPU, times cuDNN's and cuBLASLt's
// candidate algorithms for each new problem (kernels/algorithm_cache.h),
// which can take seconds for a large CNN. While the object lives, a thread
// rewrites the line every quarter second:
//
//   sluice: first step, timing cuDNN algorithms (12 problems timed), 3.4 s
//
// Nothing is written in the first half second, so a quick step leaves no
// trace, and the line is erased when the object goes. Nothing at all when
// the line is disabled (not a terminal, --json).
//
//   ProgressLine line = ProgressLine::ForStderr(!options.json);
//   {
//     FirstStepProgress progress(&line);
//     outputs = session->Run(feeds, fetches);
//   }
//
// The thread is the only writer of the line while the object lives.
#ifndef SLUICE_TOOLS_FIRST_STEP_PROGRESS_H_
#define SLUICE_TOOLS_FIRST_STEP_PROGRESS_H_

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "kernels/algorithm_cache.h"
#include "tools/progress_line.h"

namespace sluice {

class FirstStepProgress {
 public:
  // `line` (not owned) must outlive this object. `quiet_for`: how long
  // nothing is written; `every`: how often the line is rewritten after.
  explicit FirstStepProgress(
      ProgressLine* line,
      std::chrono::milliseconds quiet_for = std::chrono::milliseconds(500),
      std::chrono::milliseconds every = std::chrono::milliseconds(250));
  ~FirstStepProgress();
  FirstStepProgress(const FirstStepProgress&) = delete;
  FirstStepProgress& operator=(const FirstStepProgress&) = delete;

  // The line's text (without the time) for the timing done since the step
  // started: `start` is the activity then, `now` the activity now.
  static std::string Text(const AlgorithmCache::Activity& start,
                          const AlgorithmCache::Activity& now);

 private:
  void Loop(std::chrono::milliseconds quiet_for, std::chrono::milliseconds every);

  ProgressLine* const line_;
  const AlgorithmCache::Activity start_;
  std::mutex mu_;
  std::condition_variable stop_cv_;
  bool stop_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace sluice

#endif  // SLUICE_TOOLS_FIRST_STEP_PROGRESS_H_

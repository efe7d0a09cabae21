// ProgressLine: one line on a terminal that says how far long work is
// (session creation's stages and passes, the first step: tools/
// first_step_progress.h, bench's timed runs), rewritten in
// place and erased when the work is done, so that nothing of it stays in
// the output. Off when the stream is not a terminal or JSON is printed.
//
//   ProgressLine line(ProgressLine::ForStderr(!options.json));
//   CreateOptions create;
//   create.progress = line.CreationCallback();
//   ... Session::CreateFromFile(path, config, create) ...
//   line.Fraction(0.5);   // "[###############               ]  50%"
//   line.Clear();         // also on destruction
//
// Not thread-safe: one thread writes the line.
#ifndef SLUICE_TOOLS_PROGRESS_LINE_H_
#define SLUICE_TOOLS_PROGRESS_LINE_H_

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <functional>
#include <string>

#include "sluice/session.h"

namespace sluice {

class ProgressLine {
 public:
  // Writes to `out` when `enabled` (null or false: writes nothing).
  ProgressLine(std::FILE* out, bool enabled);
  // stderr, enabled when `wanted` and stderr is a terminal.
  static ProgressLine ForStderr(bool wanted);
  ProgressLine(ProgressLine&& other) noexcept;
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;
  ~ProgressLine() { Clear(); }

  bool enabled() const { return out_ != nullptr; }
  // "sluice: optimizing: pass 3 of 21 (constant_folding), 1.4 s" (the time
  // since the line was made).
  void Stage(const CreationProgress& p);
  // A bar for a fraction from 0 to 1.
  void Fraction(double fraction);
  // "`text`, 1.4 s" (the time since the line was made or restarted).
  void Timed(const std::string& text);
  // Counts Timed's and Stage's time from now.
  void Restart() { start_ = std::chrono::steady_clock::now(); }
  // Erases the line (once; a later Stage or Fraction writes again).
  void Clear();
  // Calls Stage; valid while this line lives.
  std::function<void(const CreationProgress&)> CreationCallback();

  // The text Stage writes, without the elapsed time (for tests).
  static std::string StageText(const CreationProgress& p);

 private:
  void Write(const std::string& text);

  std::FILE* out_ = nullptr;
  std::chrono::steady_clock::time_point start_;
  size_t width_ = 0;  // of the last line written, to erase it
};

}  // namespace sluice

#endif  // SLUICE_TOOLS_PROGRESS_LINE_H_

// A progress line on a terminal (tools/progress_line.h).
#include "tools/progress_line.h"

#include <unistd.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace sluice {

ProgressLine::ProgressLine(std::FILE* out, bool enabled)
    : out_(enabled ? out : nullptr), start_(std::chrono::steady_clock::now()) {}

ProgressLine ProgressLine::ForStderr(bool wanted) {
  return ProgressLine(stderr, wanted && isatty(STDERR_FILENO) == 1);
}

ProgressLine::ProgressLine(ProgressLine&& other) noexcept
    : out_(other.out_), start_(other.start_), width_(other.width_) {
  other.out_ = nullptr;
  other.width_ = 0;
}

std::string ProgressLine::StageText(const CreationProgress& p) {
  std::string text = absl::StrCat("sluice: ", p.stage);
  if (p.total > 0) {
    absl::StrAppend(&text, ": pass ", p.done + 1, " of ", p.total);
  }
  if (!p.detail.empty()) absl::StrAppend(&text, " (", p.detail, ")");
  return text;
}

void ProgressLine::Stage(const CreationProgress& p) { Timed(StageText(p)); }

void ProgressLine::Timed(const std::string& text) {
  if (out_ == nullptr) return;
  const double s = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start_)
                       .count();
  Write(absl::StrFormat("%s, %.1f s", text, s));
}

void ProgressLine::Fraction(double fraction) {
  if (out_ == nullptr) return;
  const double f = std::clamp(fraction, 0.0, 1.0);
  const int filled = static_cast<int>(f * 30);
  Write(absl::StrFormat("[%-30s] %3d%%", std::string(filled, '#'),
                        static_cast<int>(f * 100)));
}

void ProgressLine::Clear() {
  if (out_ == nullptr || width_ == 0) return;
  std::fprintf(out_, "\r%*s\r", static_cast<int>(width_), "");
  std::fflush(out_);
  width_ = 0;
}

std::function<void(const CreationProgress&)> ProgressLine::CreationCallback() {
  if (out_ == nullptr) return nullptr;
  return [this](const CreationProgress& p) { Stage(p); };
}

void ProgressLine::Write(const std::string& text) {
  // Padded over what the last line left.
  std::fprintf(out_, "\r%-*s", static_cast<int>(std::max(width_, text.size())),
               text.c_str());
  std::fflush(out_);
  width_ = text.size();
}

}  // namespace sluice

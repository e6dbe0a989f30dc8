#include "harness/measure/progress.h"

#include <unistd.h>

#include <cmath>

#include <fmt/format.h>

#include "base/status_line.h"

namespace specsweep {

using Clock = std::chrono::steady_clock;

std::string Progress::Duration(double s) { return FormatDuration(s); }

Progress::Progress(std::FILE* f, int total_points, int resumed, long generations)
    : f_(f),
      tty_(f && isatty(fileno(f))),
      total_(total_points),
      done_(resumed),
      generations_(generations),
      start_(Clock::now()) {
  if (f_) ticker_ = std::thread([this] { Tick(); });
}

Progress::~Progress() { Finish(); }

void Progress::Set(const ProgressState& s) {
  std::lock_guard<std::mutex> l(mu_);
  if (!in_group_ || s.group != state_.group) {
    if (in_group_) measure_s_ += std::chrono::duration<double>(Clock::now() - group_start_).count();
    group_start_ = Clock::now();
    in_group_ = true;
  }
  state_ = s;
}

void Progress::GenerationDone() {
  std::lock_guard<std::mutex> l(mu_);
  ++generated_;
}

std::string Progress::StatusLocked() const {
  const auto now = Clock::now();
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double measuring = measure_s_ + (in_group_ ? std::chrono::duration<double>(now - group_start_).count() : 0.0);
  std::string s = fmt::format("group {}/{}", state_.group, state_.groups);
  if (state_.stage == "round")
    s += fmt::format(", round {}/{}", state_.round, state_.rounds);
  else if (!state_.stage.empty())
    s += ", " + state_.stage;
  if (!state_.point.empty()) s += ": " + state_.point;
  s += fmt::format("  [points {}/{}, elapsed {}", done_, total_, Duration(elapsed));
  // An ETA only from generations measured in this run, and only for work still to do.
  if (generated_ > 0 && generated_ < generations_)
    s += ", eta " + Duration(measuring / double(generated_) * double(generations_ - generated_));
  return s + "]";
}

void Progress::Tick() {
  // A terminal gets the status redrawn every second; a log a line every 5 seconds.
  const auto period = std::chrono::seconds(tty_ ? 1 : 5);
  std::unique_lock<std::mutex> l(mu_);
  while (!cv_.wait_for(l, period, [this] { return stop_; })) {
    if (!in_group_) continue;
    std::string line = StatusLocked();
    if (tty_ && line.size() > 150) line.resize(150);
    std::fprintf(f_, tty_ ? "\r\033[K%s" : "%s\n", line.c_str());
    std::fflush(f_);
  }
}

void Progress::Done(const std::string& name, const std::string& summary) {
  std::string line;
  {
    std::lock_guard<std::mutex> l(mu_);
    ++done_;
    const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
    line = fmt::format("[{}/{}] {}  {}  (elapsed {})", done_, total_, name, summary, Duration(elapsed));
  }
  Note(line);
}

void Progress::Note(const std::string& line) {
  if (!f_) return;
  std::lock_guard<std::mutex> l(mu_);
  std::fprintf(f_, "%s%s\n", tty_ ? "\r\033[K" : "", line.c_str());
  std::fflush(f_);
}

void Progress::Finish() {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (stop_) return;
    stop_ = true;
  }
  cv_.notify_all();
  if (ticker_.joinable()) ticker_.join();
  if (f_ && tty_) std::fputs("\r\033[K", f_);
}

}  // namespace specsweep

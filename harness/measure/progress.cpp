#include "harness/measure/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "base/status_line.h"

namespace specsweep {

std::string Progress::Duration(double s) { return FormatDuration(s); }

Progress::Progress(std::FILE* f, int total_points, int resumed, long generations, ProgressOptions o)
    : f_(f),
      log_(f, o.log),
      tty_(f && !log_.stamped()),
      total_(total_points),
      done_(resumed),
      generations_(generations),
      start_(log_.Now()),
      last_line_(start_) {
  if (f_ && o.ticker) ticker_ = std::thread([this] { Tick(); });
}

Progress::~Progress() { Finish(); }

void Progress::Set(const ProgressState& s) {
  std::lock_guard<std::mutex> l(mu_);
  if (!in_group_ || s.group != state_.group) {
    const auto now = log_.Now();
    if (in_group_) measure_s_ += std::chrono::duration<double>(now - group_start_).count();
    group_start_ = now;
    in_group_ = true;
  }
  state_ = s;
}

void Progress::GenerationDone() {
  std::lock_guard<std::mutex> l(mu_);
  ++generated_;
}

std::string Progress::StatusLocked() const {
  const auto now = log_.Now();
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double measuring = measure_s_ + (in_group_ ? std::chrono::duration<double>(now - group_start_).count() : 0.0);
  std::string s = fmt::format("group {}/{}", state_.group, state_.groups);
  if (state_.stage == "round")
    s += fmt::format(", round {}/{}", state_.round, state_.rounds);
  else if (!state_.stage.empty())
    s += ", " + state_.stage;
  if (!state_.point.empty()) s += ": " + state_.point;
  s += fmt::format("  [points {}/{}", done_, total_);
  // The run's share: generations measured of those this run measures (resumed groups excluded).
  if (generations_ > 0)
    s += fmt::format(", generations {}/{} ({}%)", generated_, generations_,
                     std::min(generated_, generations_) * 100 / generations_);
  s += ", elapsed " + Duration(elapsed);
  // An ETA only from generations measured in this run, and only for work still to do.
  if (generated_ > 0 && generated_ < generations_)
    s += ", eta " + Duration(measuring / double(generated_) * double(generations_ - generated_));
  return s + "]";
}

void Progress::Poll() {
  std::lock_guard<std::mutex> l(mu_);
  PollLocked();
}

void Progress::PollLocked() {
  if (!f_ || !in_group_ || stop_) return;
  if (tty_) {
    std::string line = StatusLocked();
    if (line.size() > 150) line.resize(150);
    std::fprintf(f_, "\r\033[K%s", line.c_str());
    std::fflush(f_);
  } else if (log_.Due(last_line_)) {
    log_.Print(StatusLocked());
  }
}

void Progress::Tick() {
  // Wakes every second: a terminal's status is redrawn, a log's line printed when due.
  std::unique_lock<std::mutex> l(mu_);
  while (!cv_.wait_for(l, std::chrono::seconds(1), [this] { return stop_; })) PollLocked();
}

void Progress::Done(const std::string& name, const std::string& summary) {
  std::string line;
  {
    std::lock_guard<std::mutex> l(mu_);
    ++done_;
    const double elapsed = std::chrono::duration<double>(log_.Now() - start_).count();
    line = fmt::format("[{}/{}] {}  {}  (elapsed {})", done_, total_, name, summary, Duration(elapsed));
  }
  Note(line);
}

void Progress::Note(const std::string& line) {
  if (!f_) return;
  std::lock_guard<std::mutex> l(mu_);
  if (tty_) std::fputs("\r\033[K", f_);
  log_.Print(line);  // stamped in a log, flushed at once
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

// A live status line for one long step of a command on a terminal: writing a synthetic
// model, loading or quantizing a large one, bench-forward's timings. Library code
// reports with ReportProgress from wherever it is (any thread, OpenMP workers too); the
// reports show only while a command holds a StatusLine on a terminal, so logs, pipes and
// tests see nothing extra: no line, no control characters.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <string_view>

namespace specsweep {

// "3s", "2m05s", "1h02m"; "?" when negative or not finite.
std::string FormatDuration(double seconds);

// "loading m.gguf: 112/226 MiB (50%), 3s, eta 3s". total <= 0: unknown, so no
// percentage and no ETA; the ETA (at the rate so far) only for work still to do.
std::string StatusText(std::string_view what, long done, long total, std::string_view unit, double elapsed_s);

// `done` of `total` `unit` of the step `what` are finished; a new `what` starts a new
// step (its clock starts at its first report), done == total ends it (the line is erased).
void ReportProgress(std::string_view what, long done, long total, std::string_view unit);
// ReportProgress in MiB (a step of less than one MiB is one).
void ReportBytes(std::string_view what, uint64_t done, uint64_t total);

class StatusLine {
 public:
  // Shows the reports on `f` when `f` is a terminal; otherwise, or while another
  // StatusLine is active, it shows nothing.
  explicit StatusLine(std::FILE* f = stderr);
  ~StatusLine();  // erases the line
  StatusLine(const StatusLine&) = delete;
  StatusLine& operator=(const StatusLine&) = delete;
  bool live() const { return live_; }

 private:
  using Clock = std::chrono::steady_clock;
  friend void ReportProgress(std::string_view, long, long, std::string_view);
  void Update(std::string_view what, long done, long total, std::string_view unit);
  void EraseLocked();

  std::FILE* f_;
  bool live_ = false;
  std::mutex mu_;
  std::string what_;
  Clock::time_point step_start_{}, last_draw_{};
  bool drawn_ = false;
};

}  // namespace specsweep

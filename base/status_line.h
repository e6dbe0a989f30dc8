// The progress of one long step of a command: writing a synthetic model, loading or
// quantizing a large one, bench-forward's timings. Library code reports with
// ReportProgress from wherever it is (any thread, OpenMP workers too); the reports show
// only while a command holds a StatusLine: on a terminal as one line redrawn in place
// (share and ETA when the total is known), elsewhere (a pipe, a log) as stamped lines
// (base/progress_log.h): a step's start, its share and ETA every 30 s, its end. In a log
// only large work is shown, so a small model's commands and errors stay one line.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "base/progress_log.h"

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
// A phase of the command starts ("synth: llama-2-7b, 6738M parameters, f16 to x.gguf"):
// one stamped line in a log; nothing on a terminal, where the status line shows the step.
void ReportPhase(std::string_view text);

struct StatusLineOptions {
  std::string prefix;      // the command: log lines read "synth: writing x.gguf (12.6 GiB)"
  long log_min_mib = 256;  // in a log, byte steps of this many MiB show, and other steps after one (0: all)
  bool terminal = true;    // false: nothing on a terminal (the caller draws its own line there)
  ProgressLogOptions log;  // the log's period and clock
};

class StatusLine {
 public:
  // Shows the reports on `f`: as a status line on a terminal, as lines elsewhere; while
  // another StatusLine is active, it shows nothing.
  explicit StatusLine(std::FILE* f = stderr, StatusLineOptions o = {});
  ~StatusLine();  // erases the line
  StatusLine(const StatusLine&) = delete;
  StatusLine& operator=(const StatusLine&) = delete;
  bool live() const { return live_; }               // reports are shown
  bool terminal() const { return live_ && !log_; }  // ... as a status line

 private:
  using Clock = SteadyClock;
  friend void ReportProgress(std::string_view, long, long, std::string_view);
  friend void ReportPhase(std::string_view);
  void Update(std::string_view what, long done, long total, std::string_view unit);
  void Draw(std::string_view what, long done, long total, std::string_view unit, Clock::time_point now);
  void Log(std::string_view what, long done, long total, std::string_view unit, Clock::time_point now, bool starts);
  void EraseLocked();

  std::FILE* f_;
  StatusLineOptions o_;
  std::unique_ptr<ProgressLog> log_;  // set when `f` is not a terminal
  bool live_ = false;
  std::mutex mu_;
  std::string what_, ended_;  // the step running; the step that ended last
  Clock::time_point step_start_{}, last_draw_{};
  bool drawn_ = false;
  bool large_ = false;   // a log shows this command's steps (a large step was reported)
  bool logged_ = false;  // the running step has lines in the log
};

}  // namespace specsweep

// Progress of a sweep on stderr, from the first second: a status (group i/N, round r/R,
// the point running, the run's share of generations done, elapsed, and an ETA from the
// generations measured so far) redrawn in place on a terminal every second, or printed
// as a line stamped with the UTC time every 30 s elsewhere (base/progress_log.h);
// finished points' one-line summaries and notes are printed above it as they are stored.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

#include "base/progress_log.h"

namespace specsweep {

// Where the measuring loop is (set by the runner and MeasureGroup).
struct ProgressState {
  int group = 0, groups = 0;  // 1-based group being measured, of the groups to measure
  int round = 0, rounds = 0;  // 1-based round of the group (0: warm-up or cost model)
  std::string stage;          // "warm-up", "cost model", "round"
  std::string point;          // the point generating now
};

struct ProgressOptions {
  ProgressLogOptions log;  // the period of the status lines in a log, and the clock
  bool ticker = true;      // false: no thread draws the status; the caller calls Poll (tests)
};

class Progress {
 public:
  // `generations`: generations this run will measure (rounds x points over the groups
  // not resumed); the ETA is the measured time per generation times those left.
  Progress(std::FILE* f, int total_points, int resumed, long generations, ProgressOptions o = {});
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void Set(const ProgressState& s);
  void GenerationDone();                                           // one measured generation finished
  void Done(const std::string& name, const std::string& summary);  // a point's record stored
  void Note(const std::string& line);                              // a line above the status
  void Finish();
  // Draws the status when it is due: on a terminal at every call, in a log once a period.
  void Poll();

  // "3s", "2m05s", "1h02m"; "?" when not finite.
  static std::string Duration(double s);

 private:
  using Clock = SteadyClock;
  std::string StatusLocked() const;
  void PollLocked();
  void Tick();
  std::FILE* f_;
  ProgressLog log_;
  bool tty_;
  int total_, done_;
  long generations_, generated_ = 0;
  Clock::time_point start_, last_line_;
  double measure_s_ = 0;  // time spent in groups being measured (excludes loading)
  Clock::time_point group_start_;
  bool in_group_ = false;
  ProgressState state_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread ticker_;
};

}  // namespace specsweep

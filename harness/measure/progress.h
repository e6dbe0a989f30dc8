// Progress of a sweep on stderr, from the first second: a status (group i/N, round r/R,
// the point running, elapsed, and an ETA from the generations measured so far) redrawn
// in place on a terminal every second, or printed as a line every few seconds
// elsewhere; finished points' one-line summaries and notes are printed above it.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

namespace specsweep {

// Where the measuring loop is (set by the runner and MeasureGroup).
struct ProgressState {
  int group = 0, groups = 0;  // 1-based group being measured, of the groups to measure
  int round = 0, rounds = 0;  // 1-based round of the group (0: warm-up or cost model)
  std::string stage;          // "warm-up", "cost model", "round"
  std::string point;          // the point generating now
};

class Progress {
 public:
  // `generations`: generations this run will measure (rounds x points over the groups
  // not resumed); the ETA is the measured time per generation times those left.
  Progress(std::FILE* f, int total_points, int resumed, long generations);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void Set(const ProgressState& s);
  void GenerationDone();                                           // one measured generation finished
  void Done(const std::string& name, const std::string& summary);  // a point's record stored
  void Note(const std::string& line);                              // a line above the status
  void Finish();

  // "3s", "2m05s", "1h02m"; "?" when not finite.
  static std::string Duration(double s);

 private:
  std::string StatusLocked() const;
  void Tick();
  std::FILE* f_;
  bool tty_;
  int total_, done_;
  long generations_, generated_ = 0;
  std::chrono::steady_clock::time_point start_;
  double measure_s_ = 0;  // time spent in groups being measured (excludes loading)
  std::chrono::steady_clock::time_point group_start_;
  bool in_group_ = false;
  ProgressState state_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread ticker_;
};

}  // namespace specsweep

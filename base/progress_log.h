// Progress in a log: when stderr is not a terminal (a pipe, `| tee log`, a file, a batch
// job) a long command writes whole lines stamped with the UTC time — one when a phase
// starts and ends, and a step's share done and ETA at most once a period (30 s) — so a
// 16-minute write shows it is alive without flooding the log. The status line of a
// terminal (base/status_line.h) and the sweep's progress (harness/measure/progress.h)
// both write their log lines through it.
#pragma once
#include <chrono>
#include <cstdio>
#include <ctime>
#include <functional>
#include <string>
#include <string_view>

namespace specsweep {

using SteadyClock = std::chrono::steady_clock;

struct ProgressLogOptions {
  std::chrono::milliseconds period = std::chrono::seconds(30);  // between two share lines of a step
  std::function<SteadyClock::time_point()> now;                 // unset: the steady clock (tests: a fake one)
};

// "[07:41:02]": the UTC time of day of `t`.
std::string UtcStamp(std::time_t t);

// "13.5 GiB", "58 MiB", "22 layers", "34 steps" (no unit: steps).
std::string AmountText(long n, std::string_view unit);

// "23% (3.1 of 13.5 GiB), eta 1m41s": the share of `total` done after `elapsed_s`, and
// the time left at the rate so far (no ETA before anything is done).
std::string ShareText(long done, long total, std::string_view unit, double elapsed_s);

class ProgressLog {
 public:
  // Lines go to `f` (nullptr: nowhere); stamped unless `f` is a terminal.
  explicit ProgressLog(std::FILE* f, ProgressLogOptions o = {});
  SteadyClock::time_point Now() const { return o_.now ? o_.now() : SteadyClock::now(); }
  bool stamped() const { return stamped_; }
  // Every line of `text`, each with the stamp of now when stamped, written at once and
  // flushed (a `| tee` shows it live).
  void Print(std::string_view text) const;
  // True, and `last` set to now, when a period has passed since `last`.
  bool Due(SteadyClock::time_point& last) const;

 private:
  std::FILE* f_;
  ProgressLogOptions o_;
  bool stamped_;
  SteadyClock::time_point steady0_;
  std::chrono::system_clock::time_point wall0_;
};

}  // namespace specsweep

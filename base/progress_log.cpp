#include "base/progress_log.h"

#include <unistd.h>

#include <algorithm>

#include <fmt/format.h>

#include "base/status_line.h"

namespace specsweep {

std::string UtcStamp(std::time_t t) {
  std::tm tm{};
  gmtime_r(&t, &tm);
  return fmt::format("[{:02d}:{:02d}:{:02d}]", tm.tm_hour, tm.tm_min, tm.tm_sec);
}

namespace {

// MiB shown in GiB from one GiB on, with one decimal.
bool InGiB(long mib) { return mib >= 1024; }
std::string MiBNumber(long mib, bool gib) { return gib ? fmt::format("{:.1f}", mib / 1024.0) : std::to_string(mib); }

}  // namespace

std::string AmountText(long n, std::string_view unit) {
  if (unit == "MiB") return fmt::format("{} {}", MiBNumber(n, InGiB(n)), InGiB(n) ? "GiB" : "MiB");
  return fmt::format("{} {}", n, unit.empty() ? "steps" : unit);
}

std::string ShareText(long done, long total, std::string_view unit, double elapsed_s) {
  done = std::clamp(done, 0L, std::max(total, 0L));
  std::string s;
  if (unit == "MiB") {
    const bool gib = InGiB(total);
    s = fmt::format("{}% ({} of {} {})", done * 100 / std::max(total, 1L), MiBNumber(done, gib), MiBNumber(total, gib),
                    gib ? "GiB" : "MiB");
  } else {
    s = fmt::format("{}% ({} of {}{}{})", done * 100 / std::max(total, 1L), done, total, unit.empty() ? "" : " ", unit);
  }
  if (done > 0 && done < total) s += ", eta " + FormatDuration(elapsed_s / double(done) * double(total - done));
  return s;
}

ProgressLog::ProgressLog(std::FILE* f, ProgressLogOptions o)
    : f_(f),
      o_(std::move(o)),
      stamped_(f && !isatty(fileno(f))),
      steady0_(Now()),
      wall0_(std::chrono::system_clock::now()) {}

void ProgressLog::Print(std::string_view text) const {
  if (!f_) return;
  // The wall time from the (possibly fake) steady clock: one clock for stamps and periods.
  const auto wall = wall0_ + std::chrono::duration_cast<std::chrono::system_clock::duration>(Now() - steady0_);
  const std::string stamp = stamped_ ? UtcStamp(std::chrono::system_clock::to_time_t(wall)) + " " : "";
  std::string out;
  for (size_t at = 0; at <= text.size();) {
    const size_t nl = std::min(text.find('\n', at), text.size());
    out += stamp;
    out.append(text.substr(at, nl - at));
    out += '\n';
    at = nl + 1;
  }
  std::fputs(out.c_str(), f_);
  std::fflush(f_);
}

bool ProgressLog::Due(SteadyClock::time_point& last) const {
  const auto now = Now();
  if (now - last < o_.period) return false;
  last = now;
  return true;
}

}  // namespace specsweep

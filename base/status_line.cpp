#include "base/status_line.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace specsweep {
namespace {

std::atomic<StatusLine*> g_active{nullptr};

}  // namespace

std::string FormatDuration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const long t = std::lround(s);
  if (t >= 3600) return fmt::format("{}h{:02d}m", t / 3600, (t / 60) % 60);
  if (t >= 60) return fmt::format("{}m{:02d}s", t / 60, t % 60);
  return fmt::format("{}s", t);
}

std::string StatusText(std::string_view what, long done, long total, std::string_view unit, double elapsed_s) {
  std::string s = fmt::format("{}: {}", what, done);
  if (total > 0) s += fmt::format("/{}", total);
  if (!unit.empty()) s += fmt::format(" {}", unit);
  if (total > 0) s += fmt::format(" ({}%)", std::min(100L, done * 100 / total));
  s += ", " + FormatDuration(elapsed_s);
  if (total > 0 && done > 0 && done < total)
    s += ", eta " + FormatDuration(elapsed_s / double(done) * double(total - done));
  return s;
}

void ReportProgress(std::string_view what, long done, long total, std::string_view unit) {
  if (StatusLine* s = g_active.load(std::memory_order_acquire)) s->Update(what, done, total, unit);
}

void ReportBytes(std::string_view what, uint64_t done, uint64_t total) {
  const long total_mib = long((total + (1u << 20) - 1) >> 20);
  ReportProgress(what, done >= total ? total_mib : long(done >> 20), total_mib, "MiB");
}

StatusLine::StatusLine(std::FILE* f) : f_(f) {
  if (!f_ || !isatty(fileno(f_))) return;
  StatusLine* none = nullptr;
  live_ = g_active.compare_exchange_strong(none, this, std::memory_order_acq_rel);
}

StatusLine::~StatusLine() {
  if (!live_) return;
  g_active.store(nullptr, std::memory_order_release);
  std::lock_guard<std::mutex> l(mu_);
  EraseLocked();
}

void StatusLine::EraseLocked() {
  if (!drawn_) return;
  std::fputs("\r\033[K", f_);
  std::fflush(f_);
  drawn_ = false;
}

void StatusLine::Update(std::string_view what, long done, long total, std::string_view unit) {
  std::lock_guard<std::mutex> l(mu_);
  const auto now = Clock::now();
  if (what != what_) what_ = what, step_start_ = now, last_draw_ = {};
  if (total > 0 && done >= total) {  // the step is over: its line goes
    EraseLocked();
    what_.clear();
    return;
  }
  // At most ten redraws a second, and none for a step shorter than a fifth of a second.
  if (now - step_start_ < std::chrono::milliseconds(200) || now - last_draw_ < std::chrono::milliseconds(100)) return;
  std::string line = StatusText(what, done, total, unit, std::chrono::duration<double>(now - step_start_).count());
  if (line.size() > 120) line.resize(120);  // one row of a narrow terminal: \r redraws it in place
  std::fprintf(f_, "\r\033[K%s", line.c_str());
  std::fflush(f_);
  drawn_ = true;
  last_draw_ = now;
}

}  // namespace specsweep

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

void ReportPhase(std::string_view text) {
  StatusLine* s = g_active.load(std::memory_order_acquire);
  if (!s || !s->log_) return;
  std::lock_guard<std::mutex> l(s->mu_);
  s->log_->Print(s->o_.prefix.empty() ? std::string(text) : s->o_.prefix + ": " + std::string(text));
}

StatusLine::StatusLine(std::FILE* f, StatusLineOptions o) : f_(f), o_(std::move(o)), large_(o_.log_min_mib <= 0) {
  if (!f_) return;
  if (!isatty(fileno(f_)))
    log_ = std::make_unique<ProgressLog>(f_, o_.log);
  else if (!o_.terminal)
    return;
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
  // A worker's report that arrives after another's ended the step is late, not a new step.
  if (what_.empty() && what == ended_ && done > 0) return;
  const auto now = log_ ? log_->Now() : Clock::now();
  const bool starts = what != what_;
  if (starts) what_ = what, ended_.clear(), step_start_ = now, last_draw_ = {};
  if (log_) {
    Log(what, done, total, unit, now, starts);
  } else {
    Draw(what, done, total, unit, now);
  }
  if (total > 0 && done >= total) ended_ = what_, what_.clear();  // the step is over
}

void StatusLine::Draw(std::string_view what, long done, long total, std::string_view unit, Clock::time_point now) {
  if (total > 0 && done >= total) return EraseLocked();  // the step is over: its line goes
  // At most ten redraws a second, and none for a step shorter than a fifth of a second.
  if (now - step_start_ < std::chrono::milliseconds(200) || now - last_draw_ < std::chrono::milliseconds(100)) return;
  std::string line = StatusText(what, done, total, unit, std::chrono::duration<double>(now - step_start_).count());
  if (line.size() > 120) line.resize(120);  // one row of a narrow terminal: \r redraws it in place
  std::fprintf(f_, "\r\033[K%s", line.c_str());
  std::fflush(f_);
  drawn_ = true;
  last_draw_ = now;
}

// A step of known size gets a line when it starts, its share and ETA once a period, and
// a line when it ends; small files, and other steps before a large file, none.
void StatusLine::Log(std::string_view what, long done, long total, std::string_view unit, Clock::time_point now,
                     bool starts) {
  const std::string name = o_.prefix.empty() ? std::string(what) : o_.prefix + ": " + std::string(what);
  if (starts) {
    last_draw_ = now;
    // Bytes show when they are many; other steps (layers, timings) once a large file was seen.
    logged_ = total > 0 && (unit == "MiB" ? total >= o_.log_min_mib : large_);
    large_ = large_ || logged_;
    if (logged_) log_->Print(fmt::format("{} ({})", name, AmountText(total, unit)));
  }
  if (!logged_) return;
  const double elapsed = std::chrono::duration<double>(now - step_start_).count();
  if (done >= total)
    log_->Print(fmt::format("{}: done in {}", name, FormatDuration(elapsed)));
  else if (log_->Due(last_draw_))
    log_->Print(fmt::format("{}: {}", name, ShareText(done, total, unit, elapsed)));
}

}  // namespace specsweep

#include "harness/measure/progress.h"

#include <unistd.h>

#include <cmath>

#include <fmt/format.h>

namespace specsweep {
namespace {

std::string FormatDuration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  int t = int(s + 0.5);
  if (t >= 3600) return fmt::format("{}h{:02d}m", t / 3600, (t / 60) % 60);
  if (t >= 60) return fmt::format("{}m{:02d}s", t / 60, t % 60);
  return fmt::format("{}s", t);
}

}  // namespace

Progress::Progress(std::FILE* f, int total, int resumed)
    : f_(f), tty_(f && isatty(fileno(f))), total_(total), done_(resumed), resumed_(resumed),
      start_(std::chrono::steady_clock::now()) {}

void Progress::Start(const std::string& name) {
  if (tty_) DrawBar(name);
}

void Progress::Done(const std::string& name, const std::string& summary) {
  ++done_;
  if (!f_) return;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const int measured = done_ - resumed_;
  const double eta = measured > 0 ? elapsed / measured * (total_ - done_) : NAN;
  Note(fmt::format("[{}/{}] {}  {}  (elapsed {}, eta {})", done_, total_, name, summary, FormatDuration(elapsed),
                   FormatDuration(eta)));
  if (tty_) DrawBar(name);
}

void Progress::Note(const std::string& line) {
  if (!f_) return;
  std::fprintf(f_, "%s%s\n", tty_ ? "\r\033[K" : "", line.c_str());
  std::fflush(f_);
}

void Progress::Finish() {
  if (f_ && tty_) std::fputs("\r\033[K", f_);
}

void Progress::DrawBar(const std::string& name) {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const int measured = done_ - resumed_;
  const double eta = measured > 0 ? elapsed / measured * (total_ - done_) : NAN;
  const int width = 24;
  const int fill = total_ ? done_ * width / total_ : width;
  std::string bar = std::string(fill, '#') + std::string(width - fill, '.');
  std::string line = fmt::format("[{}] {}/{} points  elapsed {}  eta {}  {}", bar, done_, total_,
                                 FormatDuration(elapsed), FormatDuration(eta), name);
  if (line.size() > 150) line.resize(150);
  std::fprintf(f_, "\r\033[K%s", line.c_str());
  std::fflush(f_);
}

}  // namespace specsweep

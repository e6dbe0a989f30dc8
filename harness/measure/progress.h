// Progress of a sweep on stderr: on a terminal a bar redrawn in place, with each
// finished point's one-line summary printed above it; elsewhere one line per point.
#pragma once
#include <chrono>
#include <cstdio>
#include <string>

namespace specsweep {

class Progress {
 public:
  Progress(std::FILE* f, int total, int resumed);
  void Start(const std::string& name);
  void Done(const std::string& name, const std::string& summary);
  // A line above the bar (warnings about the machine, intervals).
  void Note(const std::string& line);
  void Finish();

 private:
  void DrawBar(const std::string& name);
  std::FILE* f_;
  bool tty_;
  int total_, done_, resumed_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace specsweep

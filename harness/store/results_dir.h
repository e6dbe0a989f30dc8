// The output folder of a sweep: DIR/<name>.jsonl (raw records, appended as measured)
// and DIR/<name>.json (aggregated), held by one writer at a time. Opening it checks the
// folder is writable before anything is measured; every write error names the path and
// the system's reason.
#pragma once
#include <ctime>
#include <string>
#include <utility>
#include <vector>

namespace specsweep {

class ResultsDir {
 public:
  // Creates `dir` if needed, proves it writable and takes an exclusive lock on
  // DIR/.<name>.lock (flock, released when the process ends): one writer per results
  // name, so the shards of a sweep can share a folder. Error when another process holds
  // it, naming that process's pid.
  ResultsDir(const std::string& dir, const std::string& name);
  ~ResultsDir();
  ResultsDir(const ResultsDir&) = delete;
  ResultsDir& operator=(const ResultsDir&) = delete;

  const std::string& jsonl_path() const { return jsonl_; }
  const std::string& json_path() const { return json_; }

  // Appends lines to the .jsonl and forces them to disk before returning.
  void Append(const std::vector<std::string>& lines);
  // Replaces the .jsonl by these lines (write to a temporary file, fsync, rename).
  void RewriteJsonl(const std::vector<std::string>& lines);
  // Appends lines to <jsonl><suffix> (".corrupt", ".replaced"): set aside, never lost.
  void SetAside(const std::string& suffix, const std::vector<std::string>& lines);
  // Writes a whole file atomically.
  static void WriteAtomic(const std::string& path, const std::string& bytes);

 private:
  std::string dir_, jsonl_, json_, lock_path_;
  int lock_fd_ = -1;
};

// The folder of `run` without -o, outside the source tree: BASE/<name>-<UTC time>
// (YYYYMMDDTHHMMSSZ), BASE being $SPECSWEEP_RESULTS if set, else ./results.
std::string ResultsBase();
// BASE/<name>-<time of `now`>, not there yet (a second run within the same second gets
// a -2, -3, ... suffix).
std::string NewResultsFolder(const std::string& base, const std::string& name, std::time_t now);
// The newest BASE/<name>-<time>[-N] folder holding `file` (--resume without -o); "" when none.
std::string NewestResultsFolder(const std::string& base, const std::string& name, const std::string& file);

}  // namespace specsweep

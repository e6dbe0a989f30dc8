#include "harness/store/results_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <tuple>

#include "base/error.h"

namespace fs = std::filesystem;

namespace specsweep {
namespace {

std::string Reason() { return std::strerror(errno); }

// Writes all of data to fd, then fsyncs; Error naming `path` and errno.
void WriteAll(int fd, const std::string& data, const std::string& path) {
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = n < 0 ? Reason() : "no progress";
      ::close(fd);
      Fail("{}: write failed: {}", path, why);
    }
    off += size_t(n);
  }
  if (::fsync(fd) != 0) {
    const std::string why = Reason();
    ::close(fd);
    Fail("{}: fsync failed: {}", path, why);
  }
}

void AppendFile(const std::string& path, const std::string& data) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) Fail("{}: cannot open for appending: {}", path, Reason());
  WriteAll(fd, data, path);
  if (::close(fd) != 0) Fail("{}: close failed: {}", path, Reason());
}

std::string Lines(const std::vector<std::string>& lines) {
  std::string s;
  for (auto& l : lines) s += l + "\n";
  return s;
}

}  // namespace

ResultsDir::ResultsDir(const std::string& dir, const std::string& name)
    : dir_(dir),
      jsonl_((fs::path(dir) / (name + ".jsonl")).string()),
      json_((fs::path(dir) / (name + ".json")).string()),
      lock_path_((fs::path(dir) / ("." + name + ".lock")).string()) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) Fail("{}: cannot create the results folder: {}", dir, ec.message());
  lock_fd_ = ::open(lock_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd_ < 0) Fail("{}: the results folder is not writable: {}", dir, Reason());
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    const bool held = errno == EWOULDBLOCK;
    const std::string why = Reason();
    char pid[32] = {0};
    const ssize_t n = ::pread(lock_fd_, pid, sizeof pid - 1, 0);
    ::close(lock_fd_);
    lock_fd_ = -1;
    if (held)
      Fail("{}: another specsweep run (pid {}) is writing {} results to this folder; wait for it or use another -o",
           dir, n > 0 ? std::string(pid, size_t(n)) : "unknown", name);
    Fail("{}: cannot lock the results folder: {}", lock_path_, why);
  }
  const std::string me = std::to_string(::getpid());
  if (::ftruncate(lock_fd_, 0) != 0 || ::pwrite(lock_fd_, me.data(), me.size(), 0) != ssize_t(me.size()))
    Fail("{}: the results folder is not writable: {}", lock_path_, Reason());
}

ResultsDir::~ResultsDir() {
  if (lock_fd_ >= 0) ::close(lock_fd_);  // closing releases the flock
}

void ResultsDir::Append(const std::vector<std::string>& lines) { AppendFile(jsonl_, Lines(lines)); }

void ResultsDir::RewriteJsonl(const std::vector<std::string>& lines) { WriteAtomic(jsonl_, Lines(lines)); }

void ResultsDir::SetAside(const std::string& suffix, const std::vector<std::string>& lines) {
  if (!lines.empty()) AppendFile(jsonl_ + suffix, Lines(lines));
}

void ResultsDir::WriteAtomic(const std::string& path, const std::string& bytes) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) Fail("{}: cannot open for writing: {}", tmp, Reason());
  WriteAll(fd, bytes, tmp);
  if (::close(fd) != 0) Fail("{}: close failed: {}", tmp, Reason());
  if (::rename(tmp.c_str(), path.c_str()) != 0) Fail("{}: cannot rename to {}: {}", tmp, path, Reason());
}

namespace {

// The time and run of a folder name "<name>-YYYYMMDDTHHMMSSZ[-N]"; false for another name.
bool TimedFolder(const std::string& folder, const std::string& name, std::string& time, int& run) {
  if (!folder.starts_with(name + "-") || folder.size() < name.size() + 17) return false;
  time = folder.substr(name.size() + 1, 16);
  for (size_t i = 0; i < 16; ++i) {
    const bool want_digit = i != 8 && i != 15;
    if (want_digit != bool(std::isdigit(static_cast<unsigned char>(time[i])))) return false;
  }
  if (time[8] != 'T' || time[15] != 'Z') return false;
  const std::string rest = folder.substr(name.size() + 17);
  run = 1;
  if (rest.empty()) return true;
  if (rest.size() < 2 || rest.size() > 6 || rest[0] != '-' ||
      rest.find_first_not_of("0123456789", 1) != std::string::npos)
    return false;
  run = std::atoi(rest.c_str() + 1);
  return true;
}

}  // namespace

std::string ResultsBase() {
  const char* env = std::getenv("SPECSWEEP_RESULTS");
  return env && *env ? env : "results";
}

std::string NewResultsFolder(const std::string& base, const std::string& name, std::time_t now) {
  std::tm utc{};
  gmtime_r(&now, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &utc);
  const fs::path first = fs::path(base) / (name + "-" + stamp);
  fs::path dir = first;
  for (int n = 2; fs::exists(dir); ++n) dir = first.string() + "-" + std::to_string(n);
  return dir.string();
}

std::string NewestResultsFolder(const std::string& base, const std::string& name, const std::string& file) {
  std::error_code ec;
  std::tuple<std::string, int, std::string> newest;  // (time, run, path)
  for (const auto& entry : fs::directory_iterator(base, ec)) {
    std::string time;
    int run = 0;
    if (!entry.is_directory(ec) || !TimedFolder(entry.path().filename().string(), name, time, run)) continue;
    if (!fs::exists(entry.path() / file, ec)) continue;
    newest = std::max(newest, std::tuple{time, run, entry.path().string()});
  }
  return std::get<2>(newest);
}

}  // namespace specsweep

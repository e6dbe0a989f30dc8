// Error type of the whole library. Library code throws; only harness/cli/main.cpp turns
// an Error into a one-line message and a non-zero exit.
#pragma once
#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace specsweep {

// Message convention: "<file or object>: <field>: <what is wrong>".
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

// The command line asked for something impossible (a bad option value, options that
// exclude each other): main exits 2, as for CLI11's own parse errors.
class UsageError : public Error {
 public:
  using Error::Error;
};

// The user stopped the work (SIGINT, SIGTERM): main exits 130, as a shell reports a
// process a signal ended.
class InterruptedError : public Error {
 public:
  using Error::Error;
};

template <typename... Args>
[[noreturn]] void Fail(fmt::format_string<Args...> f, Args&&... args) {
  throw Error(fmt::format(f, std::forward<Args>(args)...));
}

template <typename... Args>
[[noreturn]] void FailUsage(fmt::format_string<Args...> f, Args&&... args) {
  throw UsageError(fmt::format(f, std::forward<Args>(args)...));
}

// Runs f, whose Errors are about the values of the command line's options: usage errors
// (exit 2), where a file or a model that fails is an input error (exit 1).
template <class F>
auto AsUsage(F&& f) {
  try {
    return f();
  } catch (const UsageError&) {
    throw;
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
}

template <typename... Args>
[[noreturn]] void FailInterrupted(fmt::format_string<Args...> f, Args&&... args) {
  throw InterruptedError(fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace specsweep

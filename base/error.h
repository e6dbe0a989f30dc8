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

template <typename... Args>
[[noreturn]] void Fail(fmt::format_string<Args...> f, Args&&... args) {
  throw Error(fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace specsweep

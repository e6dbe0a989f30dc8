// A record's file identity: (role, file name, sha256) of every model file (and of a REST
// corpus or replayed trace), never the directory it was read from, so the same weights
// match at any path.
#include "harness/store/results.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "base/error.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace specsweep {

ModelFiles ModelFilesFromJson(const json& j) {
  ModelFiles out;
  if (!j.is_object()) return out;
  if (j.contains("model_files")) {
    for (auto& f : j.at("model_files"))
      out.push_back(
          {f.at("role").get<std::string>(), f.at("file").get<std::string>(), f.at("sha256").get<std::string>()});
  } else if (j.contains("model_sha256")) {
    for (auto& [path, sha] : j.at("model_sha256").items())
      out.push_back({"", fs::path(path).filename().string(), sha.get<std::string>()});
  }
  std::sort(out.begin(), out.end());
  return out;
}

json ModelFilesToJson(const ModelFiles& m) {
  json out = json::array();
  for (auto& f : m) out.push_back(json{{"role", f.role}, {"file", f.file}, {"sha256", f.sha256}});
  return out;
}

std::string ModelFilesDifference(const ModelFiles& was_in, const ModelFiles& now_in) {
  auto roleless = [](const ModelFiles& m) {
    return std::any_of(m.begin(), m.end(), [](auto& f) { return f.role.empty(); });
  };
  const bool roles = !roleless(was_in) && !roleless(now_in);
  auto normal = [&](ModelFiles m) {
    if (!roles)
      for (auto& f : m) f.role.clear();
    std::sort(m.begin(), m.end());
    return m;
  };
  const ModelFiles was = normal(was_in), now = normal(now_in);
  if (was == now) return "";
  auto name = [](const ModelFile& f) { return f.role.empty() ? f.file : f.role + " " + f.file; };
  // A REST corpus or a replayed trace is one of the record's files too, not a model's.
  auto files = [](const ModelFile& f) { return f.role == "corpus" || f.role == "trace" ? "files" : "model files"; };
  auto list = [&](const ModelFiles& m) {
    std::string s;
    for (auto& f : m) s += fmt::format("{}{} (sha256 {}...)", s.empty() ? "" : ", ", name(f), f.sha256.substr(0, 12));
    return s.empty() ? std::string("none") : s;
  };
  for (auto& f : now) {
    auto same_name =
        std::find_if(was.begin(), was.end(), [&](auto& w) { return w.role == f.role && w.file == f.file; });
    if (same_name == was.end())
      return fmt::format("{}: {} (sha256 {}...) was not used by the results (they used {})", files(f), name(f),
                         f.sha256.substr(0, 12), list(was));
    if (same_name->sha256 != f.sha256)
      return fmt::format("{}: {} has sha256 {}..., the results were measured with {}...", files(f), name(f),
                         f.sha256.substr(0, 12), same_name->sha256.substr(0, 12));
  }
  return fmt::format("model files: the results used other files ({}; now {})", list(was), list(now));
}

}  // namespace specsweep

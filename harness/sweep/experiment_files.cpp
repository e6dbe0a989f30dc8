#include "harness/sweep/experiment_files.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/build_info.h"
#include "base/error.h"
#include "models/loader.h"

namespace fs = std::filesystem;

namespace specsweep {

ExperimentFile FindExperimentFile(const std::string& written, const std::string& exp_file,
                                  const std::string& models_dir) {
  ExperimentFile f;
  std::vector<fs::path> places;
  if (fs::path(written).is_absolute()) {
    places = {written};
  } else {
    places = {fs::path(exp_file).parent_path() / written, fs::path(SourceDir()) / "experiments" / written,
              fs::path(ResolveModelsDir(models_dir)).parent_path() / written};
  }
  for (const fs::path& p : places) {
    const std::string s = p.lexically_normal().string();
    if (std::find(f.tried.begin(), f.tried.end(), s) != f.tried.end()) continue;
    f.tried.push_back(s);
    std::error_code ec;
    if (fs::exists(p, ec)) {
      f.path = s;
      break;
    }
  }
  return f;
}

std::string FileNotFound(const std::string& written, const ExperimentFile& f, const std::string& exp_file,
                         const std::string& key) {
  return fmt::format("{}: {}: '{}' not found (tried {})", exp_file, key, written, fmt::join(f.tried, ", "));
}

std::string ResolveExperimentFile(const std::string& written, const std::string& exp_file,
                                  const std::string& models_dir, const std::string& key) {
  const ExperimentFile f = FindExperimentFile(written, exp_file, models_dir);
  if (f.path.empty()) throw Error(FileNotFound(written, f, exp_file, key));
  return f.path;
}

std::string ResolveTraceRef(const std::string& ref, const std::string& exp_file, const std::string& models_dir,
                            const std::string& key) {
  const size_t colon = ref.find(':');  // FILE[:POINT], as LoadAcceptanceTraces splits it
  fs::path file = ref.substr(0, colon);
  if (file.extension() == ".json") file.replace_extension(".jsonl");  // the raw records keep the runs
  return ResolveExperimentFile(file.string(), exp_file, models_dir, key) +
         (colon == std::string::npos ? "" : ref.substr(colon));
}

}  // namespace specsweep

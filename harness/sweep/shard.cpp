#include "harness/sweep/shard.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <map>
#include <numeric>

#include "harness/sweep/prompts.h"
#include "base/error.h"
#include "models/loader.h"
#include "models/synthetic.h"

namespace fs = std::filesystem;

namespace specsweep {

ShardSpec ParseShard(std::string_view text, std::string_view what) {
  auto slash = text.find('/');
  auto number = [&](std::string_view s, int& out) {
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return !s.empty() && ec == std::errc() && end == s.data() + s.size();
  };
  ShardSpec s;
  if (slash == std::string_view::npos || !number(text.substr(0, slash), s.index) ||
      !number(text.substr(slash + 1), s.count))
    Fail("{}: '{}' is not I/N (shard I of N, e.g. 0/4)", what, text);
  if (s.count < 1 || s.index < 0 || s.index >= s.count) Fail("{}: '{}': need N >= 1 and 0 <= I < N", what, text);
  return s;
}

std::string ShardStem(const std::string& name, const ShardSpec& s) {
  return fmt::format("{}.shard-{}-of-{}", name, s.index, s.count);
}

std::vector<std::vector<size_t>> BaselineGroups(const std::vector<Point>& points) {
  std::vector<std::vector<size_t>> groups;
  std::map<std::string, size_t> index;  // baseline key -> group
  for (size_t i = 0; i < points.size(); ++i) {
    auto [it, fresh] = index.emplace(points[i].Baseline().Key(), groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].push_back(i);
  }
  return groups;
}

std::vector<int> AssignGroups(const std::vector<double>& group_costs, int shard_count) {
  std::vector<size_t> order(group_costs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return group_costs[a] > group_costs[b]; });
  std::vector<double> load(size_t(std::max(shard_count, 1)), 0.0);
  std::vector<int> shard(group_costs.size(), 0);
  for (size_t g : order) {
    size_t best = size_t(std::min_element(load.begin(), load.end()) - load.begin());  // first minimum
    shard[g] = int(best);
    load[best] += group_costs[g];
  }
  return shard;
}

double PointCost(const Point& p, double model_bytes, int prompt_count, int repetitions, double prompt_tokens) {
  double input = p.input_length > 0 ? p.input_length : prompt_tokens;
  return model_bytes * double(prompt_count) * double(repetitions) * (input + p.options.max_new_tokens);
}

double PartCost(const Point& p, double model_bytes, const QuestionPart& part, int repetitions) {
  const double tokens = part.chars / 4.0 + double(part.ids.size()) + double(part.turns) * p.options.max_new_tokens;
  return model_bytes * double(repetitions) * tokens;
}

std::vector<Point> ShardPoints(const std::vector<Point>& points, const ShardSpec& s,
                               const std::function<double(const Point&)>& cost) {
  auto groups = BaselineGroups(points);
  std::vector<double> costs;
  for (auto& g : groups) {
    double c = 0;
    for (size_t i : g) c += cost(points[i]);
    costs.push_back(c);
  }
  std::vector<int> shard = AssignGroups(costs, s.count);
  std::vector<bool> take(points.size(), false);
  for (size_t g = 0; g < groups.size(); ++g)
    if (shard[g] == s.index)
      for (size_t i : groups[g]) take[i] = true;
  std::vector<Point> out;
  for (size_t i = 0; i < points.size(); ++i)
    if (take[i]) out.push_back(points[i]);
  return out;
}

namespace {
double PathBytes(const fs::path& p) {
  std::error_code ec;
  if (fs::is_regular_file(p, ec)) return double(fs::file_size(p, ec));
  double total = 0;
  if (fs::is_directory(p, ec))
    for (auto& f : fs::recursive_directory_iterator(p, ec))
      if (f.is_regular_file(ec)) total += double(f.file_size(ec));
  return total;
}
}  // namespace

std::function<double(const Point&)> FileCostModel(const Experiment& e) {
  const std::string dir = ResolveModelsDir(e.models_dir);
  auto bytes = std::make_shared<std::map<std::string, double>>();
  auto model_bytes = [dir, bytes](const std::string& name) {
    auto it = bytes->find(name);
    if (it != bytes->end()) return it->second;
    fs::path p = fs::exists(name) ? fs::path(name) : fs::path(dir) / name;
    // A synth-<shape>-<type>.gguf costs as its shape says, made or not: a shard is the
    // same part of the grid whether or not the other shards' models are on this machine.
    const double synth = SynthFileBytes(name);
    return (*bytes)[name] = synth > 0 ? synth : PathBytes(p);
  };
  double prompt_tokens = 0;
  bool uses_file = std::any_of(e.points.begin(), e.points.end(), [](const Point& p) { return p.input_length == 0; });
  if (uses_file && !e.prompts.file.empty() && e.prompts.count > 0) {
    double chars = 0;
    for (auto& line : ReadPromptLines(e.prompts.file, e.prompts.count)) chars += double(line.size());
    prompt_tokens = chars / e.prompts.count / 4.0 + 1.0;
  }
  int count = e.prompts.count, reps = e.repetitions;
  std::map<std::string, QuestionPart> parts;
  for (const QuestionPart& part : e.prompts.parts) parts.emplace(part.name, part);
  return [=](const Point& p) {
    double b = model_bytes(p.model) + (p.options.draft.model().empty() ? 0.0 : model_bytes(p.options.draft.model()));
    // A missing model costs as a 1-byte one: its group still lands somewhere, and the
    // run reports the missing model by name.
    if (auto it = parts.find(p.part); it != parts.end()) return PartCost(p, std::max(b, 1.0), it->second, reps);
    return PointCost(p, std::max(b, 1.0), count, reps, prompt_tokens);
  };
}

std::vector<Point> ShardPoints(const Experiment& e, const ShardSpec& s) {
  return ShardPoints(e.points, s, FileCostModel(e));
}

std::vector<double> ShardCosts(const Experiment& e, int count) {
  const auto cost = FileCostModel(e);
  const auto groups = BaselineGroups(e.points);
  std::vector<double> group_costs;
  for (auto& g : groups) {
    double c = 0;
    for (size_t i : g) c += cost(e.points[i]);
    group_costs.push_back(c);
  }
  const std::vector<int> shard = AssignGroups(group_costs, count);
  std::vector<double> load(size_t(std::max(count, 1)), 0.0);
  for (size_t g = 0; g < groups.size(); ++g) load[size_t(shard[g])] += group_costs[g];
  return load;
}

nlohmann::json ShardContext(const ShardSpec& s, size_t shard_points, size_t experiment_points) {
  return {
      {"shard",
       {{"index", s.index}, {"count", s.count}, {"points", shard_points}, {"experiment_points", experiment_points}}}};
}

}  // namespace specsweep

// How the test runs a documented command (tests/test_docs_commands.cpp): the command as
// written, its paths substituted, or with --list / fewer repetitions, or not at all (an
// exclusion rule of kExclusions).
//
// Substitutions (the command is otherwise as written; it runs in the source tree):
// - an output path (-o, --out, --json) goes below the test's folder (/tmp/tour ->
//   W/out/tmp/tour), so nothing is written into the source tree or /tmp;
// - `--models $M` / `--models DIR` is a models folder of the shared models plus a tiny
//   stand-in file for every other model the experiments name (the synth files), which is
//   all `run --list` reads, beside the shared prompts/ as in the shared folder;
// - a results file (table, plot, check; merge's folder) not in the source tree is one the
//   test made first: the shard merge of quick.yaml for quick.json, spec_bench_quick.yaml for
//   spec_bench*, tour.yaml for the rest, each at 1 repetition without warm-up (greedy: the
//   acceptance figures are those of the documented runs);
// - a model a documented command wrote (synth, quantize) is that command's output (the
//   same file name will do: `s134m.gguf` is what `synth -o /tmp/s134m.gguf` wrote);
// - `--file F` of a file not in the source tree is a short text the test writes;
// - `[--a | --b]` runs once without and once with each alternative;
// - `slurm --submit` gets a fake sbatch (no Slurm here).
// Changed, so their printed output is not compared: `run` gets --list (it checks the
// experiment file, the models and the grid, and measures nothing), except the README's
// tour (experiments/tour.yaml, 10-40 s), which runs as written; bench-forward gets --reps 1
// (and --rounds 1 with --compare).
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace specsweep::docs {

// The commands that do not run, each rule with its reason: keep this list short.
struct Exclusion {
  std::string rule, reason;
};
inline const std::vector<Exclusion>& Exclusions() {
  static const std::vector<Exclusion> x = {
      {"synth of a 1B+ shape", "writes a 2-13 GB model file in 1-16 minutes, and synth has no dry mode"},
      {"a model file of a 1B+ synth", "that file is what the excluded synth writes (the 134M one runs)"},
  };
  return x;
}

struct Workspace {
  std::string source, dir;                      // the source tree (cwd of every command), the test's folder
  std::string models, shared;                   // the stand-in models folder, the shared models folder
  std::string fake_sbatch;                      // answers like `sbatch --parsable`
  std::string fake_llama_bench;                 // answers like `llama-bench -o json`
  std::string text_file;                        // for `--file F`, the user's text
  std::string tour, quick, bench;               // results files made first (.json; .jsonl beside tour and bench)
  std::string shards;                           // quick.yaml's two shard results
  std::map<std::string, std::string> produced;  // documented output path -> the test's path
};

struct Plan {
  std::vector<std::string> args;                           // after `specsweep`
  std::string excluded;                                    // the Exclusions() rule when it does not run
  std::string changed;                                     // "" (as written, paths substituted) or what was changed
  std::vector<std::pair<std::string, std::string>> paths;  // documented -> substituted
};

// `[--a | --b]` and `[--c]` groups: the command without them, then with each alternative.
inline std::vector<std::string> ExpandOptional(const std::string& cmd) {
  static const std::regex group(R"(\s*\[(--[^\]]*)\])");
  std::smatch m;
  if (!std::regex_search(cmd, m, group)) return {cmd};
  const std::string before = m.prefix().str(), after = m.suffix().str();
  std::vector<std::string> out;
  for (auto& rest : ExpandOptional(before + after)) out.push_back(rest);
  std::string alts = m[1].str();
  for (size_t p = 0; p != std::string::npos;) {
    const size_t bar = alts.find('|', p);
    std::string alt =
        std::regex_replace(alts.substr(p, bar == std::string::npos ? bar : bar - p), std::regex(R"(^\s+|\s+$)"), "");
    p = bar == std::string::npos ? bar : bar + 1;
    for (auto& rest : ExpandOptional(before + " " + alt + after)) out.push_back(rest);
  }
  return out;
}

inline std::string OutputPath(Workspace& ws, Plan& p, const std::string& v) {
  const std::string mapped = ws.dir + "/out/" + (v.starts_with("/") ? v.substr(1) : v);
  ws.produced[v] = mapped;
  p.paths.push_back({v, mapped});
  return mapped;
}

// A results file (or merge's shard folder) the command reads.
inline std::string ResultsPath(const Workspace& ws, Plan& p, const std::string& v) {
  namespace fs = std::filesystem;
  if (fs::exists(fs::path(ws.source) / v)) return v;  // committed (results/baseline/...)
  const fs::path path(v);
  std::string mapped;
  if (path.extension() != ".json" && path.extension() != ".jsonl") {
    mapped = ws.shards;
  } else {
    const std::string stem = path.stem().string();
    mapped = stem == "quick" ? ws.quick : stem.find("spec_bench") != std::string::npos ? ws.bench : ws.tour;
    if (path.extension() == ".jsonl") mapped = fs::path(mapped).replace_extension(".jsonl").string();
  }
  p.paths.push_back({v, mapped});
  return mapped;
}

// A model the command reads: a shared model or file as written, one a documented command
// wrote, else the file of an excluded synth.
inline std::string ModelPath(const Workspace& ws, Plan& p, const std::string& v) {
  namespace fs = std::filesystem;
  for (auto& [doc, test] : ws.produced)  // the path as written, else the same file name
    if (doc == v || (fs::path(doc).filename() == fs::path(v).filename() && !ws.produced.count(v))) {
      p.paths.push_back({v, test});
      return test;
    }
  if (fs::exists(fs::path(ws.shared) / v) || fs::exists(fs::path(ws.source) / v)) return v;
  p.excluded = Exclusions()[1].rule;
  return v;
}

inline Plan PlanCommand(Workspace& ws, const std::string& cmd) {
  std::vector<std::string> w = SplitShell(cmd);
  Plan p;
  std::string sub;  // the command, after the global options
  size_t sub_at = 0;
  for (size_t i = 1; i < w.size(); ++i) {
    const std::string& a = w[i];
    const bool value = i + 1 < w.size(), first_arg = sub_at > 0 && i == sub_at + 1 && !a.starts_with("-");
    if (a == "--models" && value) {
      p.args.insert(p.args.end(), {a, ws.models});
      p.paths.push_back({w[++i], ws.models});
    } else if ((a == "-o" || a == "--out" || (a == "--json" && sub == "bench-forward")) && value) {
      p.args.insert(p.args.end(), {a, OutputPath(ws, p, w[++i])});
    } else if (a == "--file" && value && !std::filesystem::exists(std::filesystem::path(ws.source) / w[i + 1])) {
      p.args.insert(p.args.end(), {a, ws.text_file});  // the user's own text
      p.paths.push_back({w[++i], ws.text_file});
    } else if (a == "--compare-llama-bench" && value) {  // LABEL=PATH: the user's llama.cpp build
      const std::string& spec = w[++i];
      const std::string label = spec.substr(0, spec.find('='));
      p.args.insert(p.args.end(), {a, label + "=" + ws.fake_llama_bench});
      p.paths.push_back({spec.substr(label.size() + 1), ws.fake_llama_bench});
    } else if (a == "--model" && value) {
      p.args.insert(p.args.end(), {a, ModelPath(ws, p, w[++i])});
    } else if (sub.empty() && (a == "--threads" || a == "-t") && value) {
      p.args.insert(p.args.end(), {a, w[++i]});
    } else if (sub.empty() && !a.starts_with("-")) {
      p.args.push_back(sub = a), sub_at = i;
    } else if (first_arg && (sub == "table" || sub == "plot" || sub == "check" || sub == "merge")) {
      p.args.push_back(ResultsPath(ws, p, a));
    } else if (first_arg && sub == "bench-forward") {
      p.args.push_back(ModelPath(ws, p, a));
    } else {
      p.args.push_back(a);
    }
  }
  auto has = [&](const std::string& f) { return std::find(p.args.begin(), p.args.end(), f) != p.args.end(); };
  const auto shape = std::find(p.args.begin(), p.args.end(), "--shape");
  if (sub == "synth" && shape != p.args.end() && shape + 1 != p.args.end() && shape[1] != "134m" && shape[1] != "tiny")
    p.excluded = Exclusions()[0].rule;
  if (!p.excluded.empty()) {  // what it would write is not there
    for (auto& [doc, test] : p.paths) ws.produced.erase(doc);
  } else if (sub == "run" && !has("--list") && !has("experiments/tour.yaml")) {
    p.args.push_back("--list"), p.changed = "--list";
  } else if (sub == "bench-forward") {
    for (const std::string flag : {"--reps", "--rounds"}) {
      auto it = std::find(p.args.begin(), p.args.end(), flag);
      if (it != p.args.end() && it + 1 != p.args.end())
        it[1] = "1";
      else if (flag == "--reps" || has("--compare") || has("--compare-llama-bench"))
        p.args.insert(p.args.end(), {flag, "1"});
    }
    p.changed = "--reps 1";
  } else if (sub == "slurm" && has("--submit")) {
    p.args.insert(p.args.end(), {"--sbatch", ws.fake_sbatch});
  }
  return p;
}

}  // namespace specsweep::docs

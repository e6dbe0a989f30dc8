#include "harness/results.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <thread>

#include "models/build_info.h"
#include "models/error.h"
#include "models/forward.h"
#include "quant/matmul.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace specsweep {

// ---------------------------------------------------------------------------------
// Statistics

double Mean(std::span<const double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  double s = 0;
  for (double x : v) s += x;
  return s / double(v.size());
}

double Median(std::span<const double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::vector<double> s(v.begin(), v.end());
  std::sort(s.begin(), s.end());
  size_t n = s.size();
  return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

double StdDev(std::span<const double> v) {
  if (v.size() < 2) return 0.0;
  double m = Mean(v), ss = 0;
  for (double x : v) ss += (x - m) * (x - m);
  return std::sqrt(ss / double(v.size() - 1));
}

double PredictedSpeedup(double alpha, double k, double c) {
  double denom = c * k + 1.0;
  // (1 - a^(K+1)) / (1 - a) = 1 + a + ... + a^K, which is K + 1 at a = 1.
  double tokens = std::abs(1.0 - alpha) < 1e-12 ? k + 1.0
                                                 : (1.0 - std::pow(alpha, k + 1.0)) / (1.0 - alpha);
  return tokens / denom;
}

double EstimateAlpha(const GenerationStats& s) {
  // Position 0 is evaluated in every step that drafted one; position i only when
  // position i-1 was accepted (and the step drafted that far).
  double evaluated = 0, accepted = 0;
  size_t n = std::min(s.drafted_at_pos.size(), s.accepted_at_pos.size());
  for (size_t i = 0; i < n; ++i) {
    double e = double(s.drafted_at_pos[i]);
    if (i > 0) e = std::min(e, double(s.accepted_at_pos[i - 1]));
    evaluated += e;
    accepted += double(s.accepted_at_pos[i]);
  }
  return evaluated > 0 ? accepted / evaluated : 0.0;
}

// ---------------------------------------------------------------------------------
// JSON conversions

json StatsToJson(const GenerationStats& s) {
  return json{{"prompt_tokens", s.prompt_tokens},
              {"generated_tokens", s.generated_tokens},
              {"target_calls", s.target_calls},
              {"draft_calls", s.draft_calls},
              {"drafted", s.drafted},
              {"accepted", s.accepted},
              {"drafted_at_pos", s.drafted_at_pos},
              {"accepted_at_pos", s.accepted_at_pos},
              {"k_per_step", s.k_per_step},
              {"prefill_s", s.prefill_s},
              {"draft_s", s.draft_s},
              {"verify_s", s.verify_s},
              {"other_s", s.other_s},
              {"total_s", s.total_s},
              {"first_token_latency_s", s.first_token_latency_s},
              {"mean_next_token_latency_s", s.mean_next_token_latency_s},
              {"tokens_per_s", s.tokens_per_s}};
}

GenerationStats StatsFromJson(const json& j, const std::string& what) {
  GenerationStats s;
  try {
    s.prompt_tokens = j.at("prompt_tokens").get<int>();
    s.generated_tokens = j.at("generated_tokens").get<int>();
    s.target_calls = j.at("target_calls").get<int>();
    s.draft_calls = j.at("draft_calls").get<int>();
    s.drafted = j.at("drafted").get<int64_t>();
    s.accepted = j.at("accepted").get<int64_t>();
    s.drafted_at_pos = j.at("drafted_at_pos").get<std::vector<int64_t>>();
    s.accepted_at_pos = j.at("accepted_at_pos").get<std::vector<int64_t>>();
    s.k_per_step = j.at("k_per_step").get<std::vector<int>>();
    s.prefill_s = j.at("prefill_s").get<double>();
    s.draft_s = j.at("draft_s").get<double>();
    s.verify_s = j.at("verify_s").get<double>();
    s.other_s = j.at("other_s").get<double>();
    s.total_s = j.at("total_s").get<double>();
    s.first_token_latency_s = j.at("first_token_latency_s").get<double>();
    s.mean_next_token_latency_s = j.at("mean_next_token_latency_s").get<double>();
    s.tokens_per_s = j.at("tokens_per_s").get<double>();
  } catch (const json::exception& e) {
    Fail("{}: stats: {}", what, e.what());
  }
  return s;
}

json RawToJson(const RawRecord& r) {
  json runs = json::array();
  for (auto& run : r.runs)
    runs.push_back(json{{"prompt", run.prompt}, {"rep", run.rep}, {"output", run.output_hash},
                        {"stats", StatsToJson(run.stats)}});
  return json{{"key", r.key},
              {"baseline_key", r.baseline_key},
              {"name", r.name},
              {"params", r.params},
              {"repetitions", r.repetitions},
              {"warmup", r.warmup},
              {"threads_used", r.threads_used},
              {"prompt_tokens", r.prompt_tokens},
              {"runs", runs}};
}

RawRecord RawFromJson(const json& j, const std::string& what) {
  RawRecord r;
  try {
    r.key = j.at("key").get<std::string>();
    r.baseline_key = j.at("baseline_key").get<std::string>();
    r.name = j.at("name").get<std::string>();
    r.params = j.at("params");
    if (!r.params.is_object()) Fail("{}: params: expected an object", what);
    r.repetitions = j.at("repetitions").get<int>();
    r.warmup = j.at("warmup").get<int>();
    r.threads_used = j.at("threads_used").get<int>();
    r.prompt_tokens = j.at("prompt_tokens").get<std::vector<int>>();
    for (auto& run : j.at("runs")) {
      RawRun x;
      x.prompt = run.at("prompt").get<int>();
      x.rep = run.at("rep").get<int>();
      x.output_hash = run.at("output").get<std::string>();
      x.stats = StatsFromJson(run.at("stats"), what);
      if (x.prompt < 0 || x.prompt >= int(r.prompt_tokens.size()))
        Fail("{}: runs: prompt index {} out of range", what, x.prompt);
      r.runs.push_back(std::move(x));
    }
  } catch (const json::exception& e) {
    Fail("{}: {}", what, e.what());
  }
  return r;
}

// ---------------------------------------------------------------------------------
// Aggregation

namespace {

// Sums the counters and times of several runs (positions arrays element-wise).
GenerationStats Pool(const std::vector<const GenerationStats*>& runs) {
  GenerationStats p;
  for (auto* s : runs) {
    p.prompt_tokens += s->prompt_tokens;
    p.generated_tokens += s->generated_tokens;
    p.target_calls += s->target_calls;
    p.draft_calls += s->draft_calls;
    p.drafted += s->drafted;
    p.accepted += s->accepted;
    if (p.drafted_at_pos.size() < s->drafted_at_pos.size()) p.drafted_at_pos.resize(s->drafted_at_pos.size());
    if (p.accepted_at_pos.size() < s->accepted_at_pos.size()) p.accepted_at_pos.resize(s->accepted_at_pos.size());
    for (size_t i = 0; i < s->drafted_at_pos.size(); ++i) p.drafted_at_pos[i] += s->drafted_at_pos[i];
    for (size_t i = 0; i < s->accepted_at_pos.size(); ++i) p.accepted_at_pos[i] += s->accepted_at_pos[i];
    p.k_per_step.insert(p.k_per_step.end(), s->k_per_step.begin(), s->k_per_step.end());
    p.prefill_s += s->prefill_s;
    p.draft_s += s->draft_s;
    p.verify_s += s->verify_s;
    p.other_s += s->other_s;
    p.total_s += s->total_s;
  }
  return p;
}

double MeanK(const GenerationStats& s) {
  if (s.k_per_step.empty()) return 0.0;
  double t = 0;
  for (int k : s.k_per_step) t += k;
  return t / double(s.k_per_step.size());
}

// Statistics reported for every point: value of one run, and value of a group of runs
// (the prompts of one repetition). Ratios pool their counts over the group; the others
// average over prompts.
struct Metric {
  const char* name;
  double (*run)(const GenerationStats&);
  bool pooled;  // group value = run() of the pooled stats
};

const std::vector<Metric>& Metrics() {
  static const std::vector<Metric> m = {
      {"prompt_tokens", [](const GenerationStats& s) { return double(s.prompt_tokens); }, false},
      {"generated_tokens", [](const GenerationStats& s) { return double(s.generated_tokens); }, false},
      {"target_calls", [](const GenerationStats& s) { return double(s.target_calls); }, false},
      {"draft_calls", [](const GenerationStats& s) { return double(s.draft_calls); }, false},
      {"drafted", [](const GenerationStats& s) { return double(s.drafted); }, false},
      {"accepted", [](const GenerationStats& s) { return double(s.accepted); }, false},
      {"prefill_s", [](const GenerationStats& s) { return s.prefill_s; }, false},
      {"draft_s", [](const GenerationStats& s) { return s.draft_s; }, false},
      {"verify_s", [](const GenerationStats& s) { return s.verify_s; }, false},
      {"other_s", [](const GenerationStats& s) { return s.other_s; }, false},
      {"total_s", [](const GenerationStats& s) { return s.total_s; }, false},
      {"first_token_latency_s", [](const GenerationStats& s) { return s.first_token_latency_s; }, false},
      {"mean_next_token_latency_s", [](const GenerationStats& s) { return s.mean_next_token_latency_s; }, false},
      {"tokens_per_s", [](const GenerationStats& s) { return s.tokens_per_s; }, false},
      {"acceptance_rate", [](const GenerationStats& s) { return s.acceptance_rate(); }, true},
      {"mean_accepted_length", [](const GenerationStats& s) { return s.mean_accepted_length(); }, true},
      {"alpha", [](const GenerationStats& s) { return EstimateAlpha(s); }, true},
      {"mean_k", [](const GenerationStats& s) { return MeanK(s); }, true},
  };
  return m;
}

// Per-prompt means over repetitions of `f`.
std::vector<double> PerPrompt(const RawRecord& r, double (*f)(const GenerationStats&)) {
  size_t n = r.prompt_tokens.size();
  std::vector<double> sum(n, 0.0), cnt(n, 0.0);
  for (auto& run : r.runs) {
    sum[run.prompt] += f(run.stats);
    cnt[run.prompt] += 1;
  }
  for (size_t i = 0; i < n; ++i) sum[i] = cnt[i] > 0 ? sum[i] / cnt[i] : std::nan("");
  return sum;
}

double Tps(const GenerationStats& s) { return s.tokens_per_s; }
double Latency(const GenerationStats& s) { return s.mean_next_token_latency_s; }

// Target decode time per call of an AR record: its forward time over its calls.
double TargetTimePerCall(const RawRecord& base) {
  std::vector<const GenerationStats*> all;
  for (auto& run : base.runs) all.push_back(&run.stats);
  GenerationStats p = Pool(all);
  if (p.target_calls <= 0) return std::nan("");
  double t = p.verify_s > 0 ? p.verify_s : p.total_s - p.prefill_s;
  return t / p.target_calls;
}

json NumOrNull(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

}  // namespace

json Aggregate(const RawRecord& r, const RawRecord* baseline) {
  json out = r.params;
  out["name"] = r.name;
  out["run_name"] = r.name;
  out["run_type"] = "aggregate";
  out["key"] = r.key;
  out["baseline_key"] = r.baseline_key;
  out["repetitions"] = r.repetitions;
  out["warmup"] = r.warmup;
  out["threads_used"] = r.threads_used;
  out["prompts"] = int(r.prompt_tokens.size());
  out["iterations"] = int(r.runs.size());

  // Group runs by repetition; each group is the full prompt set.
  std::map<int, std::vector<const GenerationStats*>> reps;
  std::vector<const GenerationStats*> all;
  for (auto& run : r.runs) {
    reps[run.rep].push_back(&run.stats);
    all.push_back(&run.stats);
  }
  for (auto& m : Metrics()) {
    std::vector<double> per_rep;
    for (auto& [rep, runs] : reps) {
      if (m.pooled) {
        per_rep.push_back(m.run(Pool(runs)));
      } else {
        double s = 0;
        for (auto* st : runs) s += m.run(*st);
        per_rep.push_back(runs.empty() ? 0.0 : s / double(runs.size()));
      }
    }
    out[m.name] = NumOrNull(Mean(per_rep));
    out[std::string(m.name) + "_median"] = NumOrNull(Median(per_rep));
    out[std::string(m.name) + "_std"] = NumOrNull(StdDev(per_rep));
  }
  // Google Benchmark's time fields: mean wall time of one generation.
  out["real_time"] = NumOrNull(out["total_s"].is_number() ? out["total_s"].get<double>() * 1e3 : NAN);
  out["cpu_time"] = out["real_time"];
  out["time_unit"] = "ms";

  out["per_prompt_prompt_tokens"] = r.prompt_tokens;
  out["per_prompt_tokens_per_s"] = PerPrompt(r, Tps);
  out["per_prompt_mean_next_token_latency_s"] = PerPrompt(r, Latency);
  out["per_prompt_acceptance_rate"] = PerPrompt(r, [](const GenerationStats& s) { return s.acceptance_rate(); });
  out["per_prompt_mean_accepted_length"] =
      PerPrompt(r, [](const GenerationStats& s) { return s.mean_accepted_length(); });
  out["per_prompt_generated_tokens"] =
      PerPrompt(r, [](const GenerationStats& s) { return double(s.generated_tokens); });

  GenerationStats pooled = Pool(all);
  std::vector<double> acc_at_pos;
  for (size_t i = 0; i < pooled.drafted_at_pos.size(); ++i)
    acc_at_pos.push_back(pooled.drafted_at_pos[i] && i < pooled.accepted_at_pos.size()
                             ? double(pooled.accepted_at_pos[i]) / double(pooled.drafted_at_pos[i])
                             : 0.0);
  out["drafted_at_pos"] = pooled.drafted_at_pos;
  out["accepted_at_pos"] = pooled.accepted_at_pos;
  out["acceptance_at_pos"] = acc_at_pos;
  double draft_per_call = pooled.draft_calls ? pooled.draft_s / pooled.draft_calls : NAN;
  out["draft_time_per_call_s"] = NumOrNull(draft_per_call);

  double target_per_call = NAN, speedup = NAN, speedup_median = NAN, speedup_std = NAN;
  double latency_speedup = NAN, match = NAN;
  std::vector<double> per_prompt_speedup;
  if (baseline && baseline->prompt_tokens == r.prompt_tokens) {
    target_per_call = TargetTimePerCall(*baseline);
    // Spec-Bench: ratio of tokens/s per prompt, then the mean over prompts.
    std::vector<double> a = PerPrompt(r, Tps), b = PerPrompt(*baseline, Tps);
    for (size_t i = 0; i < a.size(); ++i) per_prompt_speedup.push_back(b[i] > 0 ? a[i] / b[i] : NAN);
    speedup = Mean(per_prompt_speedup);
    // Spread over repetitions: rep i of the point against rep i of the baseline.
    std::map<std::pair<int, int>, double> base_tps;
    for (auto& run : baseline->runs) base_tps[{run.prompt, run.rep}] = run.stats.tokens_per_s;
    std::map<int, std::vector<double>> rep_ratios;
    for (auto& run : r.runs) {
      auto it = base_tps.find({run.prompt, run.rep});
      if (it != base_tps.end() && it->second > 0)
        rep_ratios[run.rep].push_back(run.stats.tokens_per_s / it->second);
    }
    std::vector<double> per_rep;
    for (auto& [rep, v] : rep_ratios) per_rep.push_back(Mean(v));
    speedup_median = Median(per_rep);
    speedup_std = StdDev(per_rep);
    std::vector<double> la = PerPrompt(r, Latency), lb = PerPrompt(*baseline, Latency);
    std::vector<double> lr;
    for (size_t i = 0; i < la.size(); ++i) lr.push_back(la[i] > 0 ? lb[i] / la[i] : NAN);
    latency_speedup = Mean(lr);
    // Lossless check: identical outputs to the baseline for the same prompt and rep.
    std::map<std::pair<int, int>, std::string> base_out;
    for (auto& run : baseline->runs) base_out[{run.prompt, run.rep}] = run.output_hash;
    int same = 0, total = 0;
    for (auto& run : r.runs) {
      auto it = base_out.find({run.prompt, run.rep});
      if (it == base_out.end()) continue;
      ++total;
      same += it->second == run.output_hash;
    }
    match = total ? double(same) / total : NAN;
  }
  out["per_prompt_speedup"] = per_prompt_speedup;
  out["speedup"] = NumOrNull(speedup);
  out["speedup_median"] = NumOrNull(speedup_median);
  out["speedup_std"] = NumOrNull(speedup_std);
  out["latency_speedup"] = NumOrNull(latency_speedup);
  out["target_time_per_call_s"] = NumOrNull(target_per_call);
  out["outputs_match_baseline"] = NumOrNull(match);
  double c = draft_per_call / target_per_call;
  bool spec = !r.baseline_key.empty();
  out["cost_ratio"] = NumOrNull(spec ? c : NAN);
  double alpha = EstimateAlpha(pooled), k = MeanK(pooled);
  out["predicted_speedup"] = NumOrNull(spec && std::isfinite(c) ? PredictedSpeedup(alpha, k, c) : NAN);
  return out;
}

std::vector<json> AggregateAll(const std::vector<RawRecord>& raws) {
  std::map<std::string, const RawRecord*> by_key;
  for (auto& r : raws) by_key[r.key] = &r;
  std::vector<json> out;
  for (auto& r : raws) {
    const RawRecord* base = nullptr;
    if (!r.baseline_key.empty()) {
      auto it = by_key.find(r.baseline_key);
      if (it != by_key.end()) base = it->second;
    }
    out.push_back(Aggregate(r, base));
  }
  return out;
}

// ---------------------------------------------------------------------------------
// SHA-256 (FIPS 180-4), small and dependency-free.

namespace {
struct Sha256 {
  uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  uint8_t buf[64];  // pending bytes of the current block
  size_t buf_len = 0;
  uint64_t total = 0;

  static uint32_t Rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }
  void Block(const uint8_t* p) {
    static const uint32_t k[64] = {
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};
    uint32_t w[64];  // message schedule
    for (int i = 0; i < 16; ++i)
      w[i] = uint32_t(p[4 * i]) << 24 | uint32_t(p[4 * i + 1]) << 16 | uint32_t(p[4 * i + 2]) << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; ++i) {
      uint32_t s0 = Rotr(w[i - 15], 7) ^ Rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      uint32_t s1 = Rotr(w[i - 2], 17) ^ Rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int i = 0; i < 64; ++i) {
      uint32_t t1 = hh + (Rotr(e, 6) ^ Rotr(e, 11) ^ Rotr(e, 25)) + ((e & f) ^ (~e & g)) + k[i] + w[i];
      uint32_t t2 = (Rotr(a, 2) ^ Rotr(a, 13) ^ Rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
      hh = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
  }
  void Update(const uint8_t* p, size_t n) {
    total += n;
    while (n > 0) {
      size_t take = std::min(n, size_t(64) - buf_len);
      std::memcpy(buf + buf_len, p, take);
      buf_len += take;
      p += take;
      n -= take;
      if (buf_len == 64) {
        Block(buf);
        buf_len = 0;
      }
    }
  }
  std::string HexDigest() {
    uint64_t bits = total * 8;
    uint8_t pad = 0x80, zero = 0;
    Update(&pad, 1);
    while (buf_len != 56) Update(&zero, 1);
    uint8_t len[8];
    for (int i = 0; i < 8; ++i) len[i] = uint8_t(bits >> (56 - 8 * i));
    Update(len, 8);
    std::string hex;
    for (uint32_t x : h) hex += fmt::format("{:08x}", x);
    return hex;
  }
};
}  // namespace

std::string Sha256Hex(std::string_view bytes) {
  Sha256 s;
  s.Update(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  return s.HexDigest();
}

std::string Sha256File(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) Fail("{}: cannot open for hashing", path);
  Sha256 s;
  std::vector<char> buf(1 << 20);
  while (f) {
    f.read(buf.data(), std::streamsize(buf.size()));
    s.Update(reinterpret_cast<const uint8_t*>(buf.data()), size_t(f.gcount()));
  }
  return s.HexDigest();
}

// ---------------------------------------------------------------------------------
// Context

namespace {
std::string CpuInfoField(const std::string& field) {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind(field, 0) != 0) continue;
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string v = line.substr(colon + 1);
    v.erase(0, v.find_first_not_of(" \t"));
    return v;
  }
  return "";
}
}  // namespace

json ContextBlock(const std::string& experiment_name, const std::string& experiment_file,
                  const std::vector<std::string>& model_files) {
  json c;
  c["schema_version"] = kResultsSchemaVersion;
  std::time_t now = std::time(nullptr);
  char date[64];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S%z", std::localtime(&now));
  c["date"] = date;
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  c["host_name"] = host;
  struct utsname u;
  if (uname(&u) == 0) c["os"] = fmt::format("{} {} {}", u.sysname, u.release, u.machine);
  c["git_revision"] = GitRev();
  c["compiler"] = CompilerId();
#ifdef NDEBUG
  c["library_build_type"] = "release";
#else
  c["library_build_type"] = "debug";
#endif
  c["cpu_model"] = CpuInfoField("model name");
  c["cpu_flags"] = CpuInfoField("flags");
  c["num_cpus"] = int(std::thread::hardware_concurrency());
  c["threads"] = NumThreads();
  c["kernel_isa"] = ActiveKernelIsa();
  double load[3] = {0, 0, 0};
  if (getloadavg(load, 3) == 3) c["load_avg"] = {load[0], load[1], load[2]};
  AddRuntimeSettings(c);
  c["experiment"] = experiment_name;
  c["experiment_file"] = experiment_file;
  json files = json::array();
  for (auto& f : model_files) {
    std::error_code ec;
    auto size = fs::file_size(f, ec);
    files.push_back(json{{"path", f}, {"bytes", ec ? 0 : size}, {"sha256", Sha256File(f)}});
  }
  c["model_files"] = files;
  return c;
}

// ---------------------------------------------------------------------------------
// Reading results

std::vector<RawRecord> ReadJsonl(const std::string& path, size_t* valid_bytes) {
  std::vector<RawRecord> out;
  if (valid_bytes) *valid_bytes = 0;
  std::ifstream f(path, std::ios::binary);
  if (!f) return out;
  std::stringstream ss;
  ss << f.rdbuf();
  std::string all = ss.str();
  std::map<std::string, bool> seen;
  size_t pos = 0;
  int line_no = 0;
  while (pos < all.size()) {
    size_t nl = all.find('\n', pos);
    if (nl == std::string::npos) break;  // unterminated: cut by a crash
    ++line_no;
    std::string line = all.substr(pos, nl - pos);
    json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) break;
    RawRecord r;
    try {
      r = RawFromJson(j, fmt::format("{}:{}", path, line_no));
    } catch (const Error&) {
      break;
    }
    pos = nl + 1;
    if (valid_bytes) *valid_bytes = pos;
    if (seen[r.key]) continue;
    seen[r.key] = true;
    out.push_back(std::move(r));
  }
  return out;
}

Results LoadResults(const std::string& path) {
  Results res;
  res.path = path;
  if (!fs::exists(path)) Fail("{}: cannot open: no such file", path);
  std::string ext = fs::path(path).extension().string();
  if (ext == ".jsonl") {
    for (auto& r : AggregateAll(ReadJsonl(path))) res.records.push_back(r);
    return res;
  }
  if (ext != ".json") Fail("{}: unknown results file type '{}' (expected .json or .jsonl)", path, ext);
  std::ifstream f(path);
  json doc;
  try {
    doc = json::parse(f);
  } catch (const json::parse_error& e) {
    Fail("{}: json: {}", path, e.what());
  }
  if (!doc.is_object() || !doc.contains("benchmarks") || !doc["benchmarks"].is_array())
    Fail("{}: benchmarks: missing or not a list", path);
  if (doc.contains("context")) {
    res.context = doc["context"];
    if (res.context.value("schema_version", 0) != kResultsSchemaVersion)
      Fail("{}: context.schema_version: {} is not the supported version {}", path,
           res.context.value("schema_version", json(nullptr)).dump(), kResultsSchemaVersion);
  }
  size_t i = 0;
  for (auto& b : doc["benchmarks"]) {
    if (!b.is_object() || !b.contains("key") || !b["key"].is_string())
      Fail("{}: benchmarks[{}].key: missing", path, i);
    res.records.push_back(b);
    ++i;
  }
  return res;
}

void AddRuntimeSettings(json& c) {
  auto env = [](const char* name) {
    const char* v = std::getenv(name);
    return std::string(v ? v : "default");
  };
  c["omp_wait_policy"] = env("OMP_WAIT_POLICY");
  c["gomp_spincount"] = env("GOMP_SPINCOUNT");
  c["glibc_tunables"] = env("GLIBC_TUNABLES");
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");  // e.g. "always [madvise] never"
  std::string line;
  std::getline(f, line);
  const size_t a = line.find('['), b = line.find(']');
  c["transparent_hugepages"] = a != std::string::npos && b != std::string::npos && b > a ? line.substr(a + 1, b - a - 1)
                                                                                        : std::string("unknown");
}

std::string DumpJson(const json& j, int indent) {
  return j.dump(indent, ' ', false, json::error_handler_t::replace);
}

std::string FieldText(const json& rec, const std::string& field) {
  if (!rec.contains(field)) return "";
  const json& v = rec[field];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number_float()) return fmt::format("{}", v.get<double>());
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_null()) return "";
  return v.dump();
}

double FieldNumber(const json& rec, const std::string& field) {
  if (!rec.contains(field) || !rec[field].is_number()) return std::numeric_limits<double>::quiet_NaN();
  return rec[field].get<double>();
}

const std::vector<std::string>& ParamFields() {
  static const std::vector<std::string> f = {
      "model",     "target_quant", "decoder",      "draft_base",     "draft_quant", "k",
      "k_policy",  "draft_p_min",  "input_length", "max_new_tokens", "temperature", "top_k",
      "top_p",     "seed",         "threads",      "kv_type"};
  return f;
}

}  // namespace specsweep

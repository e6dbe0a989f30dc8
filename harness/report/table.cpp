#include "harness/report/table.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>
#include <set>

#include <fmt/ranges.h>

#include "harness/report/aggregate.h"
#include "harness/report/table_cells.h"
#include "harness/store/results.h"
#include "harness/report/statistics.h"
#include "base/error.h"
#include "base/suggest.h"
#include "quant/qtype.h"

using nlohmann::json;

namespace specsweep {

std::string FormatMetric(const std::string& metric, double v) {
  if (!std::isfinite(v)) return "-";
  if (metric.starts_with("tokens_per_s") || metric == "baseline_tokens_per_s") return fmt::format("{:.1f}", v);
  if (metric.starts_with("speedup") || metric == "predicted_speedup" || metric == "latency_speedup")
    return fmt::format("{:.2f}x", v);
  if (metric.ends_with("_s") || metric.ends_with("_s_median") || metric.ends_with("_s_std"))
    return fmt::format("{:.3f}", v * 1e3);  // shown in ms
  if (metric.starts_with("acceptance") || metric.starts_with("alpha") || metric == "outputs_match_baseline" ||
      metric.starts_with("cost_ratio"))
    return fmt::format("{:.3f}", v);
  if (metric.starts_with("mean_accepted_length") || metric.starts_with("mean_k")) return fmt::format("{:.2f}", v);
  if (metric.starts_with("tokens_per_s")) return fmt::format("{:.1f}", v);
  return fmt::format("{:.4g}", v);
}

static std::string MetricHeader(const std::string& m) {
  if (m.find("tokens_per_s") != std::string::npos) return m + " (tok/s)";
  if (m.ends_with("_s") || m.ends_with("_s_median") || m.ends_with("_s_std")) return m + " (ms)";
  return m;
}

// ---------------------------------------------------------------------------------
// Pivot

std::vector<AggregateRecord> Filter(const std::vector<AggregateRecord>& recs, const Filters& filters) {
  std::vector<AggregateRecord> out;
  for (auto& r : recs) {
    bool ok = true;
    for (auto& [f, v] : filters) ok = ok && FieldText(r, f) == v;
    if (ok) out.push_back(r);
  }
  return out;
}

void CheckFilters(const std::vector<AggregateRecord>& records, const Filters& filters) {
  for (auto& [field, value] : filters) {
    std::set<std::string> fields, values;
    for (auto& r : records) {
      for (auto& [k, v] : r.flat.items()) fields.insert(k);
      if (r.flat.contains(field)) values.insert(FieldText(r, field));
    }
    const std::vector<std::string> known(fields.begin(), fields.end());
    if (!fields.count(field))
      Fail("table: --where {}={}: no record has the field '{}'{} (parameter fields: {})", field, value, field,
           DidYouMean(field, known), fmt::join(ParamFields(), ", "));
    if (!values.count(value))
      Fail("table: --where {}={}: no record has that value (values of {}: {})", field, value, field,
           fmt::join(values, ", "));
  }
}

namespace {

// The row label or column key of a record: LabelText of each field.
std::vector<std::string> Values(const AggregateRecord& r, const std::vector<std::string>& fields) {
  std::vector<std::string> v;
  for (auto& f : fields) v.push_back(LabelText(r, f));
  return v;
}

}  // namespace

// Parameter fields taking more than one value among the records (a row label or
// column). The n-gram range of a lookup draft and its tokenizer (LabelText) are part of
// its draft label already.
std::vector<std::string> Varying(const std::vector<AggregateRecord>& recs, const std::vector<std::string>& exclude) {
  std::vector<std::string> out;
  for (auto& f : ParamFields()) {
    if (std::find(exclude.begin(), exclude.end(), f) != exclude.end()) continue;
    if (f == "max_ngram" || f == "min_ngram" || f == "draft_tokenizer") continue;
    std::set<std::string> vals;
    for (auto& r : recs) vals.insert(FieldText(r, f));
    if (vals.size() > 1) out.push_back(f);
  }
  return out;
}

namespace {

// Every row/col/metric field of `spec` must exist in some record.
void CheckPivotFields(const std::vector<AggregateRecord>& all, const PivotSpec& spec) {
  if (spec.metrics.empty()) Fail("table: --metric: no metric given");
  for (auto* list : {&spec.rows, &spec.cols, &spec.metrics})
    for (auto& f : *list) {
      bool found = false;
      for (auto& r : all) found = found || r.flat.contains(f);
      if (!found && !all.empty()) Fail("table: {}: no record has this field", f);
    }
}

// A speedup field (speedup, latency_speedup, predicted_speedup, ...): a ratio, so several
// points' values combine by their geometric mean, as the estimator combines rounds.
bool IsSpeedupField(const std::string& m) {
  return m.find("speedup") != std::string::npos && !m.ends_with("_n") && !m.ends_with("_std");
}

// The metrics of a pivot cell joined by " / ": one record's values, or the (for speedups
// geometric) mean of several marked "*" (`averaged`); a speedup with its interval, never
// averaging a suspect one.
std::string PivotCell(const std::vector<const AggregateRecord*>& cell, const std::vector<std::string>& metrics,
                      CellFlags& flags, bool& averaged) {
  std::string text;
  for (auto& m : metrics) {
    std::vector<double> v;
    for (auto* r : cell) v.push_back(FieldNumber(*r, m));
    const double combined = IsSpeedupField(m) ? GeometricMean(v) : Mean(v);
    std::string one = cell.size() == 1 && m == "speedup" ? SpeedupCell(*cell[0], flags) : FormatMetric(m, combined);
    if (cell.size() > 1 && m == "speedup")
      for (auto* r : cell)
        if (r->Suspect()) one = "suspect";  // never averaged into a result
    text += (text.empty() ? "" : " / ") + one;
  }
  if (cell.size() > 1) {
    text += "*";
    averaged = true;
  }
  return text;
}

}  // namespace

Table PivotTable(const std::vector<AggregateRecord>& all, const PivotSpec& spec) {
  std::vector<AggregateRecord> recs = Filter(all, spec.filters);
  CheckPivotFields(all, spec);
  const bool baseline_left_out = LeaveOutBaseline(recs, spec);
  std::vector<std::string> rows = spec.rows;
  if (rows.empty()) rows = Varying(recs, spec.cols);
  if (rows.empty()) rows = {"model"};
  // Never a mean over acceptance sources, nor a bridged draft unnamed: each gets its rows.
  ShowAcceptanceSource(recs, rows, spec.cols);
  const bool bridged = ShowBridgedDraft(recs, rows, spec.cols);

  std::vector<std::vector<std::string>> row_keys, col_keys;
  for (auto& r : recs) {
    auto rk = Values(r, rows), ck = Values(r, spec.cols);
    if (std::find(row_keys.begin(), row_keys.end(), rk) == row_keys.end()) row_keys.push_back(rk);
    if (std::find(col_keys.begin(), col_keys.end(), ck) == col_keys.end()) col_keys.push_back(ck);
  }
  std::sort(row_keys.begin(), row_keys.end(), [&](auto& a, auto& b) { return TupleLess(rows, a, b); });
  std::sort(col_keys.begin(), col_keys.end(), [&](auto& a, auto& b) { return TupleLess(spec.cols, a, b); });

  Table t;
  t.label_cols = rows.size();
  t.header = rows;
  std::string metric_names;
  for (auto& m : spec.metrics) metric_names += (metric_names.empty() ? "" : " / ") + MetricHeader(m);
  t.title = !spec.title.empty() ? spec.title
            : spec.cols.empty()
                ? fmt::format("{} by {}", metric_names, fmt::join(rows, ", "))
                : fmt::format("{} by {} and {}", metric_names, fmt::join(rows, ", "), fmt::join(spec.cols, ", "));
  t.kind = "pivot-" + fmt::format("{}", fmt::join(spec.rows.empty() ? rows : spec.rows, "+"));
  if (!spec.cols.empty()) t.kind += fmt::format("-by-{}", fmt::join(spec.cols, "+"));
  for (auto& ck : col_keys) {
    std::string h;
    // A K label says what K was ("k<=4 adaptive"); other fields read field=value.
    for (size_t i = 0; i < ck.size(); ++i)
      h += (i ? " " : "") + (spec.cols[i] == "k_label" ? "" : spec.cols[i] + "=") + ck[i];
    t.header.push_back(h.empty() ? metric_names : h);
  }
  bool averaged = false;
  CellFlags flags;
  PivotAverages averages;
  std::vector<std::string> shown = rows;
  shown.insert(shown.end(), spec.cols.begin(), spec.cols.end());
  for (auto& rk : row_keys) {
    std::vector<std::string> line;
    for (auto& ck : col_keys) {
      std::vector<const AggregateRecord*> cell;
      for (auto& r : recs)
        if (Values(r, rows) == rk && Values(r, spec.cols) == ck) cell.push_back(&r);
      line.push_back(cell.empty() ? "" : PivotCell(cell, spec.metrics, flags, averaged));
      averages.Add(cell, shown);
    }
    // The label cells as RowName says them ("replayed α=0.8"), from any record of the row.
    for (auto& r : recs)
      if (Values(r, rows) == rk) {
        const std::vector<std::string> label = RowCells(r, rows);
        line.insert(line.begin(), label.begin(), label.end());
        break;
      }
    t.rows.push_back(line);
  }
  if (!col_keys.empty() && !col_keys[0].empty()) t.notes.push_back("cells: " + metric_names);
  if (std::any_of(recs.begin(), recs.end(), [](const AggregateRecord& r) { return IsReplayed(r); }))
    t.notes.push_back(kReplayNote);
  if (std::find(spec.metrics.begin(), spec.metrics.end(), "speedup") != spec.metrics.end())
    t.notes.push_back(kSpeedupNote);
  if (averaged) t.notes.push_back(averages.Note());
  if (baseline_left_out) t.notes.push_back(kBaselineLeftOutNote);
  if (bridged) t.notes.push_back(kBridgedNote);
  AddFlagNotes(flags, t);
  return t;
}

// What a reader needs to judge the numbers: machine, kernels, threads, repetitions,
// prompts, baseline speed (how speedup was computed: kSpeedupNote, below it).
std::string Caption(const std::vector<AggregateRecord>& spec, const json& context) {
  auto ctx = [&](const char* f) { return context.is_object() ? FieldText(context, f) : std::string(); };
  std::set<std::string> isa, threads, reps, prompts, category;
  std::vector<double> base_tps;
  for (auto& r : spec) {
    isa.insert(KernelsLabel(r.flat));
    threads.insert(FieldText(r, "threads_used"));
    reps.insert(FieldText(r, "repetitions"));
    prompts.insert(FieldText(r, "prompts"));
    category.insert(FieldText(r, "prompt_category"));
    base_tps.push_back(FieldNumber(r, "baseline_tokens_per_s"));
  }
  auto join = [](const std::set<std::string>& v) {
    std::string s;
    for (auto& x : v) s += (s.empty() ? "" : "/") + (x.empty() ? "?" : x);
    return s;
  };
  std::sort(base_tps.begin(), base_tps.end());
  base_tps.erase(std::remove_if(base_tps.begin(), base_tps.end(), [](double x) { return !std::isfinite(x); }),
                 base_tps.end());
  std::string tps = base_tps.empty()                      ? "-"
                    : base_tps.front() == base_tps.back() ? FormatMetric("tokens_per_s", base_tps.front())
                                                          : FormatMetric("tokens_per_s", base_tps.front()) + "-" +
                                                                FormatMetric("tokens_per_s", base_tps.back());
  return fmt::format("{}{} kernels, {} threads, {} repetitions x {} prompts ({}), autoregressive baseline {} tokens/s",
                     ctx("cpu_model").empty() ? "" : ctx("cpu_model") + ", ", join(isa), join(threads), join(reps),
                     join(prompts), join(category), tps);
}

Table MainTable(const std::vector<AggregateRecord>& records, const Filters& filters, const json& context,
                const std::vector<std::string>& metrics) {
  std::vector<AggregateRecord> spec = SpeculativeRecords(records, filters);
  // Columns say what K was under each policy: "k=4", "k<=4 adaptive", "k0=4 heuristic".
  for (AggregateRecord& r : spec) r.flat["k_label"] = KLabelOf(r);
  PivotSpec p;
  p.cols = {"k_label"};
  p.rows = MainRowFields(spec);  // a point's row name (RowName) in every plot legend too
  p.metrics = metrics.empty() ? std::vector<std::string>{"speedup", "mean_accepted_length"} : metrics;
  p.title = metrics.empty() ? "Speedup over autoregressive decoding / mean accepted length (tokens per target call)"
                            : fmt::format("{} of the speculative points", fmt::join(p.metrics, " / "));
  Table t = PivotTable(spec, p);
  t.kind = metrics.empty() ? "main" : fmt::format("main-{}", fmt::join(p.metrics, "+"));
  t.notes.insert(t.notes.begin(), Caption(spec, context));
  return t;
}

Table MainTableLong(const std::vector<AggregateRecord>& records, const Filters& filters) {
  std::vector<AggregateRecord> spec = SpeculativeRecords(records, filters);
  std::vector<std::string> labels = Varying(spec, {"k"});
  for (const char* f : {"decoder", "model"})
    if (std::find(labels.begin(), labels.end(), f) == labels.end()) labels.insert(labels.begin(), f);
  ShowBridgedDraft(spec, labels);
  static const std::vector<std::string> numbers = {"k",
                                                   "speedup",
                                                   "speedup_ci_low",
                                                   "speedup_ci_high",
                                                   "speedup_n",
                                                   "spec_bench_speedup",
                                                   "speedup_bound",
                                                   "predicted_speedup",
                                                   "predicted_speedup_leviathan",
                                                   "predicted_over_measured",
                                                   "mean_accepted_length",
                                                   "acceptance_rate",
                                                   "cost_ratio",
                                                   "baseline_tokens_per_s",
                                                   "tokens_per_s"};
  Table t;
  t.label_cols = labels.size();
  t.header = labels;
  t.header.insert(t.header.end(), numbers.begin(), numbers.end());
  for (const char* f : {"suspect", "busy", "wide_ci"}) t.header.push_back(f);
  // Replayed points: declared vs realised (ReplayFiguresOf); absent when none is replayed.
  const bool replay = ReplayedAny(spec);
  if (replay) t.header.insert(t.header.end(), kReplayLongColumns.begin(), kReplayLongColumns.end());
  std::sort(spec.begin(), spec.end(), [&](const AggregateRecord& a, const AggregateRecord& b) {
    return TupleLess(labels, Values(a, labels), Values(b, labels)) ||
           (Values(a, labels) == Values(b, labels) && FieldNumber(a, "k") < FieldNumber(b, "k"));
  });
  for (auto& r : spec) {
    std::vector<std::string> line = Values(r, labels);
    const bool suspect = r.Suspect();
    for (auto& m : numbers) {
      const double v = FieldNumber(r, m);
      // A suspect point's speedup is no result: its cells stay empty.
      line.push_back(!std::isfinite(v) || (suspect && m.find("speedup") != std::string::npos && m != "speedup_bound" &&
                                           !m.starts_with("predicted"))
                         ? ""
                         : fmt::format("{:.6g}", v));
    }
    for (const bool flag : {r.Suspect(), r.Busy(), r.WideCi()}) line.push_back(flag ? "1" : "0");
    if (replay) AppendReplayLongCells(r, line);
    t.rows.push_back(line);
  }
  return t;
}

Table QuantTable(const std::vector<AggregateRecord>& records, const Filters& filters) {
  std::vector<AggregateRecord> spec = SpeculativeRecords(records, filters);
  PivotSpec p;
  p.cols = {"draft_quant"};
  p.rows = Varying(spec, {"draft_quant"});
  if (std::find(p.rows.begin(), p.rows.end(), "model") == p.rows.end()) p.rows.insert(p.rows.begin(), "model");
  p.metrics = {"acceptance_rate", "mean_accepted_length"};
  p.title = "Acceptance rate / mean accepted length vs draft quantization";
  Table t = PivotTable(spec, p);
  t.kind = "quant";
  return t;
}

namespace {

// The speculative record of decoder `kind` against baseline `key` with acceptance
// source `src` whose latency speedup is surely highest: the largest lower end of the
// interval, not the largest noisy mean. Suspect points are no candidates. Null if none.
const AggregateRecord* FastestConfiguration(const std::vector<AggregateRecord>& recs, const std::string& kind,
                                            const std::string& key, const std::string& src) {
  auto low = [](const AggregateRecord& r) {
    const double lo = FieldNumber(r, "latency_speedup_ci_low");
    return std::isfinite(lo) ? lo : FieldNumber(r, "latency_speedup");
  };
  const AggregateRecord* best = nullptr;
  for (auto& r : recs)
    if (FieldText(r, "decoder") == kind && FieldText(r, "baseline_key") == key &&
        FieldText(r, "acceptance_source") == src && !r.Suspect() && (!best || low(r) > low(*best)))
      best = &r;
  return best;
}

// The four cells of a decoder in a latency row: ms/token, configuration, its speedup as
// every table gives it (decode tokens/s) with interval and marks, and the reduction of
// next-token latency (the same estimator on the latency ratio) with its interval.
void AppendLatencyCells(const AggregateRecord& best, CellFlags& flags, std::vector<std::string>& line) {
  line.push_back(FormatMetric("mean_next_token_latency_s", FieldNumber(best, "mean_next_token_latency_s")));
  line.push_back(LabelText(best, "draft") + " " + KLabelOf(best));
  const double sp = FieldNumber(best, "speedup"), sp_lo = FieldNumber(best, "speedup_ci_low"),
               sp_hi = FieldNumber(best, "speedup_ci_high");
  line.push_back(FormatMetric("speedup", sp) + IntervalText(sp_lo, sp_hi) + PointMarks(best, &flags));
  // Reduction of next-token latency, 1 - 1/latency speedup, the ends of its interval mapped alike.
  const double ls = FieldNumber(best, "latency_speedup"), lo = FieldNumber(best, "latency_speedup_ci_low"),
               hi = FieldNumber(best, "latency_speedup_ci_high");
  auto red = [](double x) { return 100.0 * (1.0 - 1.0 / x); };
  std::string rc = std::isfinite(ls) ? fmt::format("{:.1f}%", red(ls)) : "-";
  if (std::isfinite(lo) && std::isfinite(hi) && lo > 0) rc += fmt::format(" [{:.1f}, {:.1f}]", red(lo), red(hi));
  line.push_back(rc);
}

// The acceptance sources of the points measured against baseline `key`, "" for none.
std::vector<std::string> SourcesOf(const std::vector<AggregateRecord>& recs, const std::string& key) {
  std::vector<std::string> sources;
  for (auto& r : recs)
    if (FieldText(r, "baseline_key") == key) {
      const std::string src = FieldText(r, "acceptance_source");
      if (std::find(sources.begin(), sources.end(), src) == sources.end()) sources.push_back(src);
    }
  std::sort(sources.begin(), sources.end(), NaturalLess);
  if (sources.empty()) sources.push_back("");
  return sources;
}

}  // namespace

Table LatencyTable(const std::vector<AggregateRecord>& all, const Filters& filters) {
  std::vector<AggregateRecord> recs = Filter(all, filters);
  std::vector<const AggregateRecord*> ar;
  std::set<std::string> kinds;
  for (auto& r : recs) {
    if (r.Speculative())
      kinds.insert(FieldText(r, "decoder"));
    else
      ar.push_back(&r);
  }
  if (ar.empty()) Fail("table: no autoregressive points in the results");
  std::vector<AggregateRecord> ar_copy;
  for (auto* r : ar) ar_copy.push_back(*r);
  std::vector<std::string> label =
      Varying(ar_copy, {"decoder", "k", "k_policy", "draft_base", "draft_quant", "draft_p_min", "acceptance_source"});
  if (std::find(label.begin(), label.end(), "model") == label.end()) label.insert(label.begin(), "model");
  std::sort(ar.begin(), ar.end(), [&](const AggregateRecord* a, const AggregateRecord* b) {
    return TupleLess(label, Values(*a, label), Values(*b, label));
  });
  // A row per baseline and acceptance source: replayed rates are not mixed with each
  // other nor with measured acceptance when picking the fastest configuration.
  const bool replay = std::any_of(recs.begin(), recs.end(), [](const AggregateRecord& r) { return IsReplayed(r); });

  Table t;
  t.kind = "latency";
  t.title =
      "Mean next-token latency (ms/token, greedy, batch 1): autoregressive vs the fastest speculative "
      "configuration of each decoder";
  t.label_cols = label.size() + (replay ? 1 : 0);
  t.header = label;
  if (replay) t.header.push_back("acceptance");
  t.header.push_back("ar ms/token");
  for (auto& k : kinds) {
    for (const char* column : {" ms/token", " config", " speedup", " reduction"}) t.header.push_back(k + column);
    if (replay)
      for (const std::string& column : kReplayLatencyColumns) t.header.push_back(k + " " + column);
  }
  CellFlags flags;
  bool bridged = false;  // a configuration shown has a bridged draft
  for (auto* a : ar) {
    const std::string key = FieldText(*a, "key");
    for (auto& src : SourcesOf(recs, key)) {
      std::vector<std::string> line = Values(*a, label);
      if (replay) line.push_back(AcceptanceCaption(src));
      line.push_back(FormatMetric("mean_next_token_latency_s", FieldNumber(*a, "mean_next_token_latency_s")));
      for (auto& k : kinds) {
        const AggregateRecord* best = FastestConfiguration(recs, k, key, src);
        if (best) {
          AppendLatencyCells(*best, flags, line);
          bridged = bridged || Bridged(*best);
        } else {
          line.insert(line.end(), {"", "", "", ""});
        }
        if (replay) AppendReplayLatencyCells(best, flags, line);
      }
      t.rows.push_back(line);
    }
  }
  t.notes.push_back(
      "ms/token: mean next-token latency of each point (mean over its runs); speedup: the point's speedup "
      "as every table gives it (decode tokens/s, geometric mean over rounds of the per-round ratio, 95% "
      "bootstrap interval [low, high] in log space); reduction: of next-token latency, 1 - 1/(the same "
      "estimator on the per-round ratio AR latency / speculative latency) [its interval], so it need not "
      "equal 1 - 1/speedup (latency leaves out the first token, tokens/s the prefill) nor follow from the "
      "two ms/token columns; the configuration shown has the highest lower end of that latency ratio's "
      "interval");
  if (replay) {
    t.notes.push_back(kReplayNote);
    t.notes.push_back(std::string(kTauNote) +
                      "; model reduction at declared: 1 - 1/(the cost model's predicted speedup with its tokens per "
                      "step scaled by τ expected / τ realised), on decode tokens/s");
  }
  if (bridged) t.notes.push_back(kBridgedNote);
  AddFlagNotes(flags, t);
  return t;
}

}  // namespace specsweep

#include "harness/table.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "harness/results.h"
#include "models/error.h"

using nlohmann::json;

namespace specsweep {

TableFormat ParseTableFormat(std::string_view s) {
  if (s == "md" || s == "markdown") return TableFormat::Markdown;
  if (s == "latex" || s == "tex") return TableFormat::Latex;
  if (s == "csv") return TableFormat::Csv;
  Fail("table: --format: unknown format '{}' (expected md, latex, csv)", s);
}

std::string FormatMetric(const std::string& metric, double v) {
  if (!std::isfinite(v)) return "-";
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
  if (m.ends_with("_s") || m.ends_with("_s_median") || m.ends_with("_s_std")) return m + " (ms)";
  return m;
}

// ---------------------------------------------------------------------------------
// Rendering

static std::string CsvQuote(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

static std::string LatexEscape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '_': case '%': case '&': case '#': case '$': case '{': case '}': o += '\\'; o += c; break;
      case '~': o += "\\textasciitilde{}"; break;
      case '^': o += "\\textasciicircum{}"; break;
      case '\\': o += "\\textbackslash{}"; break;
      default: o += c;
    }
  }
  return o;
}

std::string RenderTable(const Table& t, TableFormat f) {
  std::string out;
  size_t n = t.header.size();
  if (f == TableFormat::Csv) {
    for (size_t i = 0; i < n; ++i) out += (i ? "," : "") + CsvQuote(t.header[i]);
    out += "\n";
    for (auto& r : t.rows) {
      for (size_t i = 0; i < n; ++i) out += (i ? "," : "") + CsvQuote(i < r.size() ? r[i] : "");
      out += "\n";
    }
    return out;
  }
  if (f == TableFormat::Latex) {
    out += "\\begin{table}[t]\n\\centering\n";
    if (!t.title.empty()) out += "\\caption{" + LatexEscape(t.title) + "}\n";
    out += "\\begin{tabular}{";
    for (size_t i = 0; i < n; ++i) out += i < t.label_cols ? "l" : "r";
    out += "}\n\\toprule\n";
    for (size_t i = 0; i < n; ++i) out += (i ? " & " : "") + LatexEscape(t.header[i]);
    out += " \\\\\n\\midrule\n";
    for (auto& r : t.rows) {
      for (size_t i = 0; i < n; ++i) out += (i ? " & " : "") + LatexEscape(i < r.size() ? r[i] : "");
      out += " \\\\\n";
    }
    out += "\\bottomrule\n\\end{tabular}\n";
    for (auto& note : t.notes) out += "\\\\[2pt]{\\footnotesize " + LatexEscape(note) + "}\n";
    out += "\\end{table}\n";
    return out;
  }
  // Markdown with columns padded to equal width.
  std::vector<size_t> w(n, 3);
  for (size_t i = 0; i < n; ++i) w[i] = std::max(w[i], t.header[i].size());
  for (auto& r : t.rows)
    for (size_t i = 0; i < n && i < r.size(); ++i) w[i] = std::max(w[i], r[i].size());
  auto line = [&](const std::vector<std::string>& cells) {
    std::string l = "|";
    for (size_t i = 0; i < n; ++i) {
      std::string c = i < cells.size() ? cells[i] : "";
      std::string pad(w[i] - std::min(w[i], c.size()), ' ');
      l += " " + (i < t.label_cols ? c + pad : pad + c) + " |";
    }
    return l + "\n";
  };
  if (!t.title.empty()) out += "**" + t.title + "**\n\n";
  out += line(t.header);
  out += "|";
  for (size_t i = 0; i < n; ++i) out += (i < t.label_cols ? " :" : " ") + std::string(w[i] - 1, '-') + (i < t.label_cols ? " |" : ": |");
  out += "\n";
  for (auto& r : t.rows) out += line(r);
  if (!t.notes.empty()) out += "\n";
  for (auto& note : t.notes) out += "_" + note + "_\n";
  return out;
}

// ---------------------------------------------------------------------------------
// Pivot

namespace {

// Numbers sort numerically, everything else as text; "-" sorts first.
bool NaturalLess(const std::string& a, const std::string& b) {
  char* ea = nullptr;
  char* eb = nullptr;
  double da = std::strtod(a.c_str(), &ea), db = std::strtod(b.c_str(), &eb);
  bool na = !a.empty() && *ea == 0, nb = !b.empty() && *eb == 0;
  if (na && nb) return da < db;
  if (na != nb) return na;
  return a < b;
}

bool TupleLess(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (NaturalLess(a[i], b[i])) return true;
    if (NaturalLess(b[i], a[i])) return false;
  }
  return a.size() < b.size();
}

std::vector<json> Filter(const std::vector<json>& recs, const Filters& filters) {
  std::vector<json> out;
  for (auto& r : recs) {
    bool ok = true;
    for (auto& [f, v] : filters) ok = ok && FieldText(r, f) == v;
    if (ok) out.push_back(r);
  }
  return out;
}

std::vector<std::string> Values(const json& r, const std::vector<std::string>& fields) {
  std::vector<std::string> v;
  for (auto& f : fields) v.push_back(FieldText(r, f));
  return v;
}

// Parameter fields taking more than one value among the records.
std::vector<std::string> Varying(const std::vector<json>& recs, const std::vector<std::string>& exclude) {
  std::vector<std::string> out;
  for (auto& f : ParamFields()) {
    if (std::find(exclude.begin(), exclude.end(), f) != exclude.end()) continue;
    std::set<std::string> vals;
    for (auto& r : recs) vals.insert(FieldText(r, f));
    if (vals.size() > 1) out.push_back(f);
  }
  return out;
}

bool IsSpeculative(const json& r) { return FieldText(r, "decoder") != "ar"; }

}  // namespace

Table PivotTable(const std::vector<json>& all, const PivotSpec& spec) {
  std::vector<json> recs = Filter(all, spec.filters);
  if (spec.metrics.empty()) Fail("table: --metric: no metric given");
  for (auto* list : {&spec.rows, &spec.cols, &spec.metrics})
    for (auto& f : *list) {
      bool found = false;
      for (auto& r : all) found = found || r.contains(f);
      if (!found && !all.empty()) Fail("table: {}: no record has this field", f);
    }
  std::vector<std::string> rows = spec.rows;
  if (rows.empty()) rows = Varying(recs, spec.cols);
  if (rows.empty()) rows = {"model"};

  std::vector<std::vector<std::string>> row_keys, col_keys;
  for (auto& r : recs) {
    auto rk = Values(r, rows), ck = Values(r, spec.cols);
    if (std::find(row_keys.begin(), row_keys.end(), rk) == row_keys.end()) row_keys.push_back(rk);
    if (std::find(col_keys.begin(), col_keys.end(), ck) == col_keys.end()) col_keys.push_back(ck);
  }
  std::sort(row_keys.begin(), row_keys.end(), TupleLess);
  std::sort(col_keys.begin(), col_keys.end(), TupleLess);

  Table t;
  t.title = spec.title;
  t.label_cols = rows.size();
  t.header = rows;
  std::string metric_names;
  for (auto& m : spec.metrics) metric_names += (metric_names.empty() ? "" : " / ") + MetricHeader(m);
  for (auto& ck : col_keys) {
    std::string h;
    for (size_t i = 0; i < ck.size(); ++i) h += (i ? " " : "") + spec.cols[i] + "=" + ck[i];
    t.header.push_back(h.empty() ? metric_names : h);
  }
  bool averaged = false;
  for (auto& rk : row_keys) {
    std::vector<std::string> line = rk;
    for (auto& ck : col_keys) {
      std::vector<const json*> cell;
      for (auto& r : recs)
        if (Values(r, rows) == rk && Values(r, spec.cols) == ck) cell.push_back(&r);
      if (cell.empty()) {
        line.push_back("");
        continue;
      }
      std::string text;
      for (auto& m : spec.metrics) {
        std::vector<double> v;
        for (auto* r : cell) v.push_back(FieldNumber(*r, m));
        text += (text.empty() ? "" : " / ") + FormatMetric(m, Mean(v));
      }
      if (cell.size() > 1) {
        text += "*";
        averaged = true;
      }
      line.push_back(text);
    }
    t.rows.push_back(line);
  }
  if (!col_keys.empty() && !col_keys[0].empty()) t.notes.push_back("cells: " + metric_names);
  if (averaged) t.notes.push_back("* mean of several points differing in parameters not shown");
  return t;
}

Table MainTable(const std::vector<json>& records, const Filters& filters) {
  std::vector<json> spec;
  for (auto& r : Filter(records, filters))
    if (IsSpeculative(r)) spec.push_back(r);
  if (spec.empty()) Fail("table: no speculative points in the results (nothing to compare with AR)");
  PivotSpec p;
  p.cols = {"k"};
  p.rows = Varying(spec, {"k"});
  if (std::find(p.rows.begin(), p.rows.end(), "model") == p.rows.end()) p.rows.insert(p.rows.begin(), "model");
  if (std::find(p.rows.begin(), p.rows.end(), "decoder") == p.rows.end()) p.rows.insert(p.rows.begin() + 1, "decoder");
  p.metrics = {"speedup", "mean_accepted_length"};
  p.title = "Speedup over autoregressive decoding (per-prompt tokens/s ratio, mean) / mean accepted length "
            "(tokens per target call)";
  return PivotTable(spec, p);
}

Table QuantTable(const std::vector<json>& records, const Filters& filters) {
  std::vector<json> spec;
  for (auto& r : Filter(records, filters))
    if (IsSpeculative(r)) spec.push_back(r);
  if (spec.empty()) Fail("table: no speculative points in the results");
  PivotSpec p;
  p.cols = {"draft_quant"};
  p.rows = Varying(spec, {"draft_quant"});
  if (std::find(p.rows.begin(), p.rows.end(), "model") == p.rows.end()) p.rows.insert(p.rows.begin(), "model");
  p.metrics = {"acceptance_rate", "mean_accepted_length"};
  p.title = "Acceptance rate / mean accepted length vs draft quantization";
  return PivotTable(spec, p);
}

Table LatencyTable(const std::vector<json>& all, const Filters& filters) {
  std::vector<json> recs = Filter(all, filters);
  std::vector<const json*> ar;
  std::set<std::string> kinds;
  for (auto& r : recs) {
    if (IsSpeculative(r)) kinds.insert(FieldText(r, "decoder"));
    else ar.push_back(&r);
  }
  if (ar.empty()) Fail("table: no autoregressive points in the results");
  std::vector<json> ar_copy;
  for (auto* r : ar) ar_copy.push_back(*r);
  std::vector<std::string> label = Varying(ar_copy, {"decoder", "k", "k_policy", "draft_base", "draft_quant", "draft_p_min"});
  if (std::find(label.begin(), label.end(), "model") == label.end()) label.insert(label.begin(), "model");
  std::sort(ar.begin(), ar.end(), [&](const json* a, const json* b) { return TupleLess(Values(*a, label), Values(*b, label)); });

  Table t;
  t.title = "Mean next-token latency (ms/token, greedy, batch 1): autoregressive vs the fastest speculative "
            "configuration of each decoder";
  t.label_cols = label.size();
  t.header = label;
  t.header.push_back("ar ms/token");
  for (auto& k : kinds) {
    t.header.push_back(k + " ms/token");
    t.header.push_back(k + " config");
    t.header.push_back(k + " speedup");
  }
  for (auto* a : ar) {
    std::vector<std::string> line = Values(*a, label);
    line.push_back(FormatMetric("mean_next_token_latency_s", FieldNumber(*a, "mean_next_token_latency_s")));
    std::string key = FieldText(*a, "key");
    for (auto& k : kinds) {
      const json* best = nullptr;
      for (auto& r : recs)
        if (FieldText(r, "decoder") == k && FieldText(r, "baseline_key") == key &&
            (!best || FieldNumber(r, "mean_next_token_latency_s") < FieldNumber(*best, "mean_next_token_latency_s")))
          best = &r;
      if (!best) {
        line.insert(line.end(), {"", "", ""});
        continue;
      }
      line.push_back(FormatMetric("mean_next_token_latency_s", FieldNumber(*best, "mean_next_token_latency_s")));
      std::string cfg = FieldText(*best, "draft") + " k=" + FieldText(*best, "k");
      if (FieldText(*best, "k_policy") != "constant") cfg += " " + FieldText(*best, "k_policy");
      line.push_back(cfg);
      line.push_back(FormatMetric("latency_speedup", FieldNumber(*best, "latency_speedup")));
    }
    t.rows.push_back(line);
  }
  t.notes.push_back("speedup = AR latency / speculative latency per prompt, mean over prompts");
  return t;
}

}  // namespace specsweep

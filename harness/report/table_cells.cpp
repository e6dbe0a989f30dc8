#include "harness/report/table_cells.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "base/error.h"
#include "harness/report/aggregate.h"
#include "harness/store/results.h"
#include "quant/qtype.h"

using nlohmann::json;

namespace specsweep {

bool NaturalLess(const std::string& a, const std::string& b) {
  char* ea = nullptr;
  char* eb = nullptr;
  double da = std::strtod(a.c_str(), &ea), db = std::strtod(b.c_str(), &eb);
  bool na = !a.empty() && *ea == 0, nb = !b.empty() && *eb == 0;
  if (na && nb) return da < db;
  if (na != nb) return na;
  return a < b;
}

// Quantization levels order by bits per weight, widest first ("none" and "-" first).
static double QuantRank(const std::string& v) {
  if (v.empty() || v == "-" || v == "none") return -1e9;
  try {
    const QType q = ParseQType(v.substr(0, v.find(' ')));  // "q4_0 (2 of 14 f16)": a partial fallback
    return -8.0 * double(BlockBytes(q)) / double(BlockSize(q));
  } catch (const Error&) {
    return 0;  // not a quant name: after the known ones, by name
  }
}

// The K of a KLabel ("k<=4 adaptive" -> 4).
static double KLabelNumber(const std::string& v) {
  const size_t digit = v.find_first_of("0123456789");
  return digit == std::string::npos ? -1 : std::strtod(v.c_str() + digit, nullptr);
}

bool ValueLess(const std::string& field, const std::string& a, const std::string& b) {
  if (field == "k_label") {
    const double ka = KLabelNumber(a), kb = KLabelNumber(b);
    if (ka != kb) return ka < kb;
  }
  if (field.ends_with("quant")) {
    const double ra = QuantRank(a), rb = QuantRank(b);
    if (ra != rb) return ra < rb;
  }
  return NaturalLess(a, b);
}

bool TupleLess(const std::vector<std::string>& fields, const std::vector<std::string>& a,
               const std::vector<std::string>& b) {
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    const std::string& f = i < fields.size() ? fields[i] : "";
    if (ValueLess(f, a[i], b[i])) return true;
    if (ValueLess(f, b[i], a[i])) return false;
  }
  return a.size() < b.size();
}

std::vector<AggregateRecord> SpeculativeRecords(const std::vector<AggregateRecord>& records, const Filters& filters) {
  std::vector<AggregateRecord> spec;
  for (auto& r : Filter(records, filters))
    if (r.Speculative()) spec.push_back(r);
  if (spec.empty()) Fail("table: no speculative points in the results (nothing to compare with AR)");
  return spec;
}

// "1.52x [1.45, 1.61]" (the speedup and its 95% interval, asymmetric: log space), † when
// the machine was busy, ‡ when the interval is wider than ±15% or from under 5 rounds; "suspect" (no number) when
// the speedup is above what the step counts and verify costs allow.
std::string SpeedupCell(const AggregateRecord& r, CellFlags& flags) {
  if (r.Suspect()) {
    flags.suspect = true;
    return "suspect";
  }
  const double mean = FieldNumber(r, "speedup"), lo = FieldNumber(r, "speedup_ci_low"),
               hi = FieldNumber(r, "speedup_ci_high");
  std::string c = FormatMetric("speedup", mean);
  c += IntervalText(lo, hi);
  c += PointMarks(r, &flags);
  if (const auto f = ReplayFiguresOf(r); f && f->off) c += kTauMark, flags.tau_off = true;
  return c;
}

std::string IntervalText(double lo, double hi) {
  return std::isfinite(lo) && std::isfinite(hi) ? fmt::format(" [{:.2f}, {:.2f}]", lo, hi) : "";
}

std::string PointMarks(const AggregateRecord& r, CellFlags* flags) {
  CellFlags seen;
  std::string m;
  if (r.Busy()) m += "†", seen.busy = true;
  if (r.WideCi()) m += "‡", seen.wide = true;
  if (flags) flags->busy |= seen.busy, flags->wide |= seen.wide;
  return m;
}

namespace {

bool Has(const std::vector<std::string>& fields, const std::string& f) {
  return std::find(fields.begin(), fields.end(), f) != fields.end();
}

}  // namespace

void ShowAcceptanceSource(const std::vector<AggregateRecord>& recs, std::vector<std::string>& rows,
                          const std::vector<std::string>& cols) {
  if (Has(rows, "acceptance_source") || Has(cols, "acceptance_source")) return;
  // Measured and replayed acceptance are different experiments: a mean over both is no figure.
  if (std::any_of(recs.begin(), recs.end(), [](const AggregateRecord& r) { return IsReplayed(r); }))
    rows.push_back("acceptance_source");
}

bool Bridged(const AggregateRecord& r) { return r.Speculative() && r.identity.draft_tokenizer == "bridged"; }

const char* const kBridgedMark = " (bridged)";
const char* const kBridgedNote =
    "(bridged): the draft has another tokenizer than the target; its tokens are carried across through text "
    "(decoded and re-encoded every step, that time counted as draft time)";

std::string LabelText(const AggregateRecord& r, const std::string& field) {
  std::string v = FieldText(r, field);
  if ((field == "draft" || field == "draft_base") && Bridged(r)) v += kBridgedMark;
  return v;
}

bool ShowBridgedDraft(const std::vector<AggregateRecord>& recs, std::vector<std::string>& rows,
                      const std::vector<std::string>& cols) {
  if (std::none_of(recs.begin(), recs.end(), Bridged)) return false;
  for (const char* f : {"draft", "draft_base"})
    if (Has(rows, f) || Has(cols, f)) return true;
  rows.push_back("draft_base");
  return true;
}

std::vector<std::string> MainRowFields(const std::vector<AggregateRecord>& spec,
                                       const std::vector<std::string>& exclude) {
  std::vector<std::string> skip = exclude;
  skip.insert(skip.end(), {"k", "k_policy"});
  std::vector<std::string> rows = Varying(spec, skip);
  if (!Has(rows, "model")) rows.insert(rows.begin(), "model");
  if (!Has(rows, "decoder")) rows.insert(rows.begin() + 1, "decoder");
  ShowAcceptanceSource(spec, rows);
  ShowBridgedDraft(spec, rows);
  return rows;
}

std::vector<std::string> RowCells(const AggregateRecord& r, const std::vector<std::string>& fields) {
  std::vector<std::string> cells;
  for (auto& f : fields)
    cells.push_back(f == "acceptance_source" ? AcceptanceCaption(LabelText(r, f)) : LabelText(r, f));
  return cells;
}

std::string RowName(const AggregateRecord& r, const std::vector<std::string>& fields) {
  std::string name;
  const std::vector<std::string> cells = RowCells(r, fields);
  for (size_t i = 0; i < cells.size(); ++i) {
    if (cells[i].empty() || cells[i] == "-") continue;
    // A bare number says nothing without its column's header: "input_length=64".
    const bool number = cells[i].find_first_not_of("0123456789.") == std::string::npos;
    name += (name.empty() ? "" : ", ") + (number ? fields[i] + "=" : "") + cells[i];
  }
  return name;
}

const char* const kSpeedupNote =
    "speedup: geometric mean over the (prompt, repetition) rounds of the per-round ratio, the point's decode "
    "tokens/s over its baseline's in the same round (points of a group run in rotating order); [low, high]: its 95% "
    "bootstrap interval, resampling rounds in log space, so asymmetric around the speedup (docs/metrics.md)";

const char* const kReplayNote =
    "replayed: the number of draft tokens accepted per step was drawn from the named source (acceptance_source), "
    "not measured; draft calls, target verify calls and cache rollbacks are real, so times and speedups are "
    "measured for that acceptance";

void AddFlagNotes(const CellFlags& f, Table& t) {
  if (f.suspect)
    t.notes.push_back(
        fmt::format("suspect: measured speedup above its bound (mean accepted length x T(1)/T(K+1)) by "
                    "more than {:.0f}%: the timing cannot support it, so no number is shown",
                    100 * kSuspectMargin));
  if (f.busy) t.notes.push_back("† other processes used the machine while this group was measured");
  if (f.wide)
    t.notes.push_back(fmt::format("‡ 95% interval wider than ±{:.0f}% of the mean, or from fewer than {} rounds",
                                  100 * kWideInterval, kMinIntervalRounds));
  if (f.tau_off)
    t.notes.push_back(fmt::format(
        "{} replayed point whose realised τ (1 + p1 + p1·p2 + ... at its realised per-position rates) is more "
        "than {:.0f}% from the τ its declared source promises: it measured another acceptance than its label",
        kTauMark, 100 * kTauTolerance));
}

}  // namespace specsweep

// Replayed acceptance as declared and as realised: the figures of a replayed point and the
// table of them (docs/reproducing.md, "Tables"). A point is a few dozen steps, so the
// realised rates can stray from the declared ones; these cells say by how much.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "base/error.h"
#include "decoders/acceptance_source.h"
#include "harness/report/table.h"
#include "harness/report/table_cells.h"

namespace specsweep {

const double kTauTolerance = 0.03;
const char* const kTauMark = "§";
const char* const kTauNote =
    "acceptance by position: the realised conditional rate at each draft position (accepted there / steps that "
    "reached it); τ realised: a full step's tokens at those rates, 1 + p1 + p1·p2 + ... up to K (the prefill's "
    "token and the clipped last steps, which mean_accepted_length counts, left out); τ expected: the declared "
    "source's, (1 - α^(K+1)) / (1 - α) for alpha, the same product sum for positions, \"—\" for a trace";

std::optional<ReplayFigures> ReplayFiguresOf(const AggregateRecord& r) {
  if (!r.Speculative() || !IsReplayed(r)) return std::nullopt;
  ReplayFigures f;
  const double k = FieldNumber(r, "k");
  const std::vector<double>& cond = r.positions.acceptance_at_pos_conditional;
  const std::vector<int64_t>& drafted = r.positions.drafted_at_pos;
  // Positions a step drafted (an adaptive K may stop short of its largest K).
  for (size_t i = 0; i < cond.size() && (!std::isfinite(k) || double(i) < k); ++i) {
    if (i < drafted.size() && drafted[i] == 0) break;
    f.realised.push_back(cond[i]);
  }
  if (!f.realised.empty()) f.tau_realised = TauOfRates(f.realised, int(f.realised.size()));
  try {
    const AcceptanceSource src = ParseAcceptanceSource(FieldText(r, "acceptance_source"), "acceptance_source");
    // Over the same positions as the realised τ: a tree's depth, or an adaptive K's deepest
    // drafted position, may be below the point's K.
    const int depth = f.realised.empty() ? int(k) : int(f.realised.size());
    if (std::isfinite(k)) f.tau_expected = ExpectedTau(src, depth);
  } catch (const Error&) {
    // A source this version does not know declares nothing it can evaluate.
  }
  f.off = std::isfinite(f.tau_realised) && std::isfinite(f.tau_expected) &&
          std::abs(f.tau_realised / f.tau_expected - 1.0) > kTauTolerance;
  // The cost model's tokens per step scaled from the realised rates to the declared ones;
  // the step's verify and draft costs are the measured ones (the catch-up draft call after
  // a fully accepted step is not rescaled).
  if (r.cost.speculative && std::isfinite(f.tau_realised) && std::isfinite(f.tau_expected))
    f.predicted_speedup_declared = r.cost.speculative->predicted_speedup * f.tau_expected / f.tau_realised;
  return f;
}

std::string RatesText(const std::vector<double>& rates) {
  std::string s;
  for (double p : rates) s += fmt::format("{}{:.2f}", s.empty() ? "" : "/", p);
  return s.empty() ? "-" : s;
}

std::string RealisedTauCell(const ReplayFigures& f, CellFlags& flags) {
  if (!std::isfinite(f.tau_realised)) return "-";
  std::string c = fmt::format("{:.2f}", f.tau_realised);
  if (f.off) c += kTauMark, flags.tau_off = true;
  return c;
}

std::string ReductionText(double speedup) {
  return std::isfinite(speedup) && speedup > 0 ? fmt::format("{:.1f}%", 100.0 * (1.0 - 1.0 / speedup)) : "-";
}

namespace {

std::string ExpectedTauCell(const ReplayFigures& f) {
  return std::isfinite(f.tau_expected) ? fmt::format("{:.2f}", f.tau_expected) : "—";
}

}  // namespace

const std::vector<std::string> kReplayLatencyColumns = {"acceptance by position", "τ realised", "τ expected",
                                                        "model reduction at declared"};

void AppendReplayLatencyCells(const AggregateRecord* best, CellFlags& flags, std::vector<std::string>& line) {
  const std::optional<ReplayFigures> f = best ? ReplayFiguresOf(*best) : std::nullopt;
  if (!f) {
    line.insert(line.end(), kReplayLatencyColumns.size(), "");
    return;
  }
  line.push_back(RatesText(f->realised));
  line.push_back(RealisedTauCell(*f, flags));
  line.push_back(ExpectedTauCell(*f));
  line.push_back(ReductionText(f->predicted_speedup_declared));
}

const std::vector<std::string> kReplayLongColumns = {"acceptance_at_pos_conditional", "tau_realised", "tau_expected",
                                                     "predicted_speedup_declared", "tau_off"};

void AppendReplayLongCells(const AggregateRecord& r, std::vector<std::string>& line) {
  const std::optional<ReplayFigures> f = ReplayFiguresOf(r);
  if (!f) {
    line.insert(line.end(), kReplayLongColumns.size(), "");
    return;
  }
  line.push_back(RatesText(f->realised));
  for (double v : {f->tau_realised, f->tau_expected, f->predicted_speedup_declared})
    line.push_back(std::isfinite(v) ? fmt::format("{:.6g}", v) : "");
  line.push_back(f->off ? "1" : "0");
}

namespace {

std::vector<AggregateRecord> Replayed(const std::vector<AggregateRecord>& records, const Filters& filters) {
  std::vector<AggregateRecord> out;
  for (auto& r : Filter(records, filters))
    if (ReplayFiguresOf(r)) out.push_back(r);
  return out;
}

}  // namespace

bool ReplayedAny(const std::vector<AggregateRecord>& records, const Filters& filters) {
  return !Replayed(records, filters).empty();
}

Table ReplayTable(const std::vector<AggregateRecord>& records, const Filters& filters) {
  std::vector<AggregateRecord> recs = Replayed(records, filters);
  if (recs.empty()) Fail("table: no replayed points in the results (acceptance_source alpha=, positions=, trace=)");
  for (AggregateRecord& r : recs) r.flat["k_label"] = KLabelOf(r);
  std::vector<std::string> labels = Varying(recs, {"k", "k_policy", "acceptance_source"});
  for (const char* f : {"decoder", "model"})
    if (std::find(labels.begin(), labels.end(), f) == labels.end()) labels.insert(labels.begin(), f);
  ShowBridgedDraft(recs, labels);
  labels.push_back("k_label");
  labels.push_back("acceptance_source");
  auto values = [&](const AggregateRecord& r) {
    std::vector<std::string> v;
    for (auto& f : labels) v.push_back(LabelText(r, f));
    return v;
  };
  std::sort(recs.begin(), recs.end(), [&](auto& a, auto& b) { return TupleLess(labels, values(a), values(b)); });

  Table t;
  t.title = "Replayed acceptance: declared and realised";
  t.kind = "replay";
  t.label_cols = labels.size();
  t.header = labels;
  t.header[t.header.size() - 2] = "k";  // the k_label cell: "k=4", "k<=8 adaptive"
  t.header.back() = "declared";
  for (const char* h : {"acceptance by position", "τ realised", "τ expected", "mean_accepted_length"})
    t.header.push_back(h);
  CellFlags flags;
  for (auto& r : recs) {
    const ReplayFigures f = *ReplayFiguresOf(r);
    std::vector<std::string> line = values(r);
    line.back() = AcceptanceCaptionOf(r);
    line.push_back(RatesText(f.realised));
    line.push_back(RealisedTauCell(f, flags));
    line.push_back(ExpectedTauCell(f));
    line.push_back(FormatMetric("mean_accepted_length", FieldNumber(r, "mean_accepted_length")));
    t.rows.push_back(line);
  }
  t.notes.push_back(kTauNote);
  AddFlagNotes(flags, t);
  return t;
}

}  // namespace specsweep

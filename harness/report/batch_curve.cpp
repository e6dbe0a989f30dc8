// Speedup curves over the batch axis and their crossover batch (batch_curve.h).
#include "harness/report/batch_curve.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "harness/report/table_cells.h"

namespace specsweep {

Crossover FindCrossover(std::vector<std::pair<double, double>> pts) {
  std::erase_if(pts, [](const auto& p) { return !(p.first > 0) || !std::isfinite(p.second); });
  std::sort(pts.begin(), pts.end());
  Crossover c;
  if (pts.empty()) return c;
  if (pts.front().second < 1.0) return {Crossover::Kind::kNone, pts.front().first};
  for (size_t i = 1; i < pts.size(); ++i) {
    const auto [b0, s0] = pts[i - 1];
    const auto [b1, s1] = pts[i];
    if (s1 >= 1.0) continue;
    // s0 >= 1 > s1: the line through both in log2(batch) reaches 1 in [b0, b1).
    const double l0 = std::log2(b0), l1 = std::log2(b1);
    return {Crossover::Kind::kAt, std::exp2(l0 + (s0 - 1.0) / (s0 - s1) * (l1 - l0))};
  }
  return {Crossover::Kind::kBeyond, pts.back().first};
}

std::string CrossoverText(const Crossover& c) {
  switch (c.kind) {
    case Crossover::Kind::kAt: return fmt::format("{:.1f}", c.batch);
    case Crossover::Kind::kBeyond: return fmt::format("> {}", c.batch);
    case Crossover::Kind::kNone: return fmt::format("none (< 1 at {})", c.batch);
    case Crossover::Kind::kNoData: break;
  }
  return "-";
}

namespace {

std::vector<std::pair<double, double>> Points(const BatchCurve& c, const char* field) {
  std::vector<std::pair<double, double>> out;
  for (const auto& [b, r] : c.by_batch) {
    const double v = std::string(field) == "speedup" && r->Suspect() ? NAN : FieldNumber(*r, field);
    out.emplace_back(double(b), v);
  }
  return out;
}

}  // namespace

std::vector<std::pair<double, double>> BatchCurve::Measured() const { return Points(*this, "speedup"); }
std::vector<std::pair<double, double>> BatchCurve::Predicted() const { return Points(*this, "predicted_speedup"); }

BatchCurves BatchCurvesOf(const std::vector<AggregateRecord>& records, const Filters& filters) {
  BatchCurves out;
  std::vector<const AggregateRecord*> spec;
  for (const AggregateRecord& r : records)
    if (r.Speculative() &&
        std::all_of(filters.begin(), filters.end(), [&](const auto& f) { return FieldText(r, f.first) == f.second; }))
      spec.push_back(&r);
  if (spec.empty()) return out;
  std::vector<AggregateRecord> copies;
  for (const AggregateRecord* r : spec) copies.push_back(*r);
  // A curve is a main-table row but the batch, and K (the main table's columns).
  out.fields = MainRowFields(copies, {"batch"});
  out.fields.push_back("k_label");
  std::map<std::vector<std::string>, size_t> index;
  for (const AggregateRecord* r : spec) {
    AggregateRecord labelled = *r;
    labelled.flat["k_label"] = KLabelOf(*r);
    const std::vector<std::string> cells = RowCells(labelled, out.fields);
    auto [it, fresh] = index.emplace(cells, out.curves.size());
    if (fresh) out.curves.push_back({cells, RowName(labelled, out.fields), {}});
    BatchCurve& c = out.curves[it->second];
    const int b = r->batch.batch;
    // One point per batch: the first record (a curve's other fields are fixed).
    if (std::none_of(c.by_batch.begin(), c.by_batch.end(), [&](const auto& p) { return p.first == b; }))
      c.by_batch.emplace_back(b, r);
    if (std::find(out.batches.begin(), out.batches.end(), b) == out.batches.end()) out.batches.push_back(b);
  }
  std::sort(out.batches.begin(), out.batches.end());
  for (BatchCurve& c : out.curves) std::sort(c.by_batch.begin(), c.by_batch.end());
  std::sort(out.curves.begin(), out.curves.end(),
            [&](const BatchCurve& a, const BatchCurve& b) { return TupleLess(out.fields, a.cells, b.cells); });
  return out;
}

}  // namespace specsweep

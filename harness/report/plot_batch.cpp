// The speedup-vs-batch plot's series (docs/batching.md): per draft configuration its
// measured speedup over the batch axis with intervals, followed by the cost model's
// prediction for it (drawn dashed in the same colour by plots/speedup_vs_batch.gp).
#include <cmath>

#include "harness/report/batch_curve.h"
#include "harness/report/plot.h"
#include "harness/report/table_cells.h"

namespace specsweep {

const char* const kPredictedSuffix = " (predicted)";

std::vector<Series> SpeedupVsBatch(const std::vector<AggregateRecord>& records) {
  std::vector<Series> out;
  const BatchCurves bc = BatchCurvesOf(records);
  for (const BatchCurve& c : bc.curves) {
    Series measured, predicted;
    measured.title = c.name;
    predicted.title = c.name + kPredictedSuffix;
    bool marked = false;
    for (const auto& [b, r] : c.by_batch) {
      const double x = double(b), y = FieldNumber(*r, "speedup");
      // A suspect point (above what its step counts and verify costs allow) is drawn
      // hollow and named, as in the other plots.
      std::string marks = PointMarks(*r);
      if (r->Suspect()) marks += kSuspectMark, measured.suspects.push_back("B=" + std::to_string(b));
      if (std::isfinite(y)) {
        measured.xy.emplace_back(x, y);
        const double lo = FieldNumber(*r, "speedup_ci_low"), hi = FieldNumber(*r, "speedup_ci_high");
        measured.ci.emplace_back(std::isfinite(lo) ? lo : y, std::isfinite(hi) ? hi : y);
        measured.marks.push_back(marks);
        marked = marked || !marks.empty();
      }
      if (const double p = FieldNumber(*r, "predicted_speedup"); std::isfinite(p)) predicted.xy.emplace_back(x, p);
    }
    if (!marked) measured.marks.clear();
    if (measured.xy.empty() && predicted.xy.empty()) continue;
    out.push_back(measured);
    out.push_back(predicted);
  }
  return out;
}

}  // namespace specsweep

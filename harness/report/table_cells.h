// Shared parts of the report's tables (table.cpp, category.cpp): the order of row
// labels, the speculative records of a table, and the cells' marks and notes.
#pragma once
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/report/table.h"

namespace specsweep {

// Numbers sort numerically, everything else as text; "-" sorts first.
bool NaturalLess(const std::string& a, const std::string& b);
// Row order within one field: quant types by size, K labels by K, else NaturalLess.
bool ValueLess(const std::string& field, const std::string& a, const std::string& b);
// Lexicographic over `fields` with ValueLess per field.
bool TupleLess(const std::vector<std::string>& fields, const std::vector<std::string>& a,
               const std::vector<std::string>& b);

// The speculative records that pass the filters; Error when there are none.
std::vector<AggregateRecord> SpeculativeRecords(const std::vector<AggregateRecord>& records, const Filters& filters);

// Marks seen in a table's cells, explained in its notes.
struct CellFlags {
  bool suspect = false, busy = false, wide = false;
  bool tau_off = false;  // a replayed point's realised τ is off its expected τ (kTauMark)
};
// The marks of a point, as tables and plots show them: "†" when other processes used the
// machine while its group ran (busy), "‡" when its speedup's 95% interval is wider than
// ±kWideInterval of the mean or comes from fewer than kMinIntervalRounds rounds (wide_ci),
// both or "". Sets the flags seen when given.
std::string PointMarks(const AggregateRecord& r, CellFlags* flags = nullptr);
// "1.52x [1.45, 1.61]" and its marks (SpeedupCell in table_cells.cpp says which).
std::string SpeedupCell(const AggregateRecord& r, CellFlags& flags);
// A speedup's 95% interval as tables show it, " [1.45, 1.61]" ("" when not finite): the
// log-space interval is asymmetric, so never a ± half-width.
std::string IntervalText(double lo, double hi);
// The note under a table of speedups: the estimator and how its interval is shown.
extern const char* const kSpeedupNote;
// Replayed points say so in their row even when every point is replayed alike, and
// points of different acceptance sources never share a cell: acceptance_source joins
// `rows` unless `rows` or `cols` hold it.
void ShowAcceptanceSource(const std::vector<AggregateRecord>& recs, std::vector<std::string>& rows,
                          const std::vector<std::string>& cols = {});
extern const char* const kReplayNote;

// A draft with another tokenizer than the target's (draft_tokenizer "bridged"), its
// tokens carried across through text, is marked wherever its label is shown.
bool Bridged(const AggregateRecord& r);
extern const char* const kBridgedMark;  // " (bridged)"
extern const char* const kBridgedNote;
// The text of `field` in a row label or column key: its value, a bridged draft's label
// (draft, draft_base) followed by kBridgedMark.
std::string LabelText(const AggregateRecord& r, const std::string& field);
// A bridged draft says so in its row even when the draft does not vary: draft_base joins
// `rows` when a record is bridged and neither rows nor cols name the draft. Returns
// whether a record is bridged (the table then carries kBridgedNote).
bool ShowBridgedDraft(const std::vector<AggregateRecord>& recs, std::vector<std::string>& rows,
                      const std::vector<std::string>& cols = {});
// A replayed point's acceptance as declared and as realised (table_replay.cpp).
struct ReplayFigures {
  std::vector<double> realised;             // conditional acceptance per draft position, up to the point's K
  double tau_realised = NAN;                // TauOfRates(realised): a full step's τ at the realised rates
  double tau_expected = NAN;                // ExpectedTau of the declared source at the point's K (NaN: trace)
  double predicted_speedup_declared = NAN;  // the cost model's speedup at tau_expected
  bool off = false;                         // |tau_realised / tau_expected - 1| > kTauTolerance
};
// Null for a measured or autoregressive record.
std::optional<ReplayFigures> ReplayFiguresOf(const AggregateRecord& r);
extern const double kTauTolerance;  // 0.03
extern const char* const kTauMark;  // "§"
extern const char* const kTauNote;  // what the columns and kTauMark mean
// "0.80/0.79/0.81/0.80" ("-" when empty).
std::string RatesText(const std::vector<double>& rates);
// "3.30§": τ realised with kTauMark when off (sets flags.tau_off).
std::string RealisedTauCell(const ReplayFigures& f, CellFlags& flags);
// A next-token latency reduction 100 (1 - 1/speedup) as "23.9%" ("-" when not finite).
std::string ReductionText(double speedup);
// The replay cells of a decoder in a latency row, under "<decoder> <column>": realised
// acceptance by position, τ realised (marked), τ expected, the cost model's reduction at
// the declared acceptance. Empty cells for a measured point or none (`best` null).
extern const std::vector<std::string> kReplayLatencyColumns;
void AppendReplayLatencyCells(const AggregateRecord* best, CellFlags& flags, std::vector<std::string>& line);
// The same in the long (CSV) form, numbers unrounded, tau_off 0/1.
extern const std::vector<std::string> kReplayLongColumns;
void AppendReplayLongCells(const AggregateRecord& r, std::vector<std::string>& line);

// The fields naming a row of the main table: model, decoder and every parameter that
// varies among the speculative records `spec` except K and its policy (the columns) and
// `exclude`, and the acceptance source of replayed points (ShowAcceptanceSource).
std::vector<std::string> MainRowFields(const std::vector<AggregateRecord>& spec,
                                       const std::vector<std::string>& exclude = {});
// A row label's cells as a table shows them: LabelText of each field, an acceptance
// source as its caption ("replayed α=0.8").
std::vector<std::string> RowCells(const AggregateRecord& r, const std::vector<std::string>& fields);
// The row's cells joined by ", ": how a point's row is named outside a table (plot
// legends), so a draft has one name everywhere. Cells that do not apply ("-", "") are
// left out (an AR point's draft); a number carries its column's header ("input_length=64").
std::string RowName(const AggregateRecord& r, const std::vector<std::string>& fields);
// What the "*" cells of a pivot averaged over (table_pivot.cpp): the fields, with their
// values, that differ among a cell's points but label neither its row nor its column
// (`shown`), and how many points; Note() says so ("" when no cell averaged).
class PivotAverages {
 public:
  void Add(const std::vector<const AggregateRecord*>& cell, const std::vector<std::string>& shown);
  std::string Note() const;

 private:
  std::vector<std::string> fields_;
  std::map<std::string, std::set<std::string>> values_;
  size_t min_ = SIZE_MAX, max_ = 0;
};
// A pivot over K, or of speedups alone, shows the speculative points: AR is the baseline,
// not a "k=0" column. Leaves AR points out of `recs` (unless all or none are AR) and says
// whether it did; the table then carries kBaselineLeftOutNote.
bool LeaveOutBaseline(std::vector<AggregateRecord>& recs, const PivotSpec& spec);
extern const char* const kBaselineLeftOutNote;

// The caption note of a table of `spec` (table.cpp): machine, kernels, threads,
// repetitions, prompts and the baseline's tokens/s.
std::string Caption(const std::vector<AggregateRecord>& spec, const nlohmann::json& context);

// The notes explaining the marks in `f`.
void AddFlagNotes(const CellFlags& f, Table& t);

}  // namespace specsweep

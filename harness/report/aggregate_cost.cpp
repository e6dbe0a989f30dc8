// The verify-cost model part of an aggregated record: measured call costs, the
// physical bound on the speedup and the predicted speedups (README "Metrics").
#include <algorithm>
#include <cmath>

#include "harness/report/aggregate.h"
#include "harness/report/aggregate_parts.h"
#include "harness/report/fit.h"

namespace specsweep {

namespace {

// T(n) of a call over n positions from the measured [n_max] costs (the target's, or a
// draft tree's); beyond n_max, their least-squares fit (harness/report/fit.h; only
// adaptive K policies draft past the measured range). One measured size: that cost.
double CallTime(const std::vector<double>& t, int n) {
  const int m = int(t.size());
  if (m == 0 || n < 1) return NAN;
  if (n <= m) return t[n - 1];
  const CostFit fit = FitVerifyCost(t);
  return fit.ok() ? fit.At(n) : t[m - 1];
}

// A model-drafted token tree's draft time over all steps: every call at its size, a
// catch-up of n tokens T_d(n), a tree call of n nodes T_d,tree(n) (both measured up to
// K + 1, fitted beyond). NaN when the runs did not record the sizes (older records).
double TreeDraftTime(const GenerationStats& s, const CallCosts& c) {
  if (s.draft_calls_by_size.empty() && s.draft_tree_calls_by_size.empty()) return NAN;
  double t = 0;
  for (auto [calls, cost] :
       {std::pair{&s.draft_calls_by_size, &c.draft_s}, std::pair{&s.draft_tree_calls_by_size, &c.draft_tree_s}})
    for (size_t i = 0; i < calls->size(); ++i)
      if ((*calls)[i] > 0) t += double((*calls)[i]) * CallTime(*cost, int(i) + 1);
  return t;
}

// What the target calls of a speculative record's steps cost, in units of T_target(1):
// sum over steps of T(k_step + 1) / T(1), and the mean T(k_step + 1) per step.
struct VerifyCost {
  double calls_in_t1 = NAN, mean_verify_s = NAN;
};
VerifyCost VerifyCostOf(const GenerationStats& pooled, const std::vector<double>& t) {
  VerifyCost v;
  if (t.empty() || pooled.k_per_step.empty()) return v;
  double sum = 0;
  for (int k : pooled.k_per_step) sum += CallTime(t, k + 1);
  v.calls_in_t1 = sum / t[0];
  v.mean_verify_s = sum / double(pooled.k_per_step.size());
  return v;
}

// Steps fully accepted (a = k > 0) and followed by a step that drafts: the next step's
// first draft call then feeds two tokens (the last draft token and the bonus), T_d(2).
// NaN when the runs carry no per-step acceptance (records before #31).
double CatchUpsAfterFullSteps(const RawRecord& r) {
  double n = 0;
  for (const RawRun& run : r.runs) {
    const std::vector<int>&k = run.stats.k_per_step, &a = run.stats.accepted_per_step;
    if (a.size() != k.size()) return NAN;
    for (size_t i = 0; i + 1 < k.size(); ++i) n += a[i] == k[i] && k[i] > 0 && k[i + 1] > 0;
  }
  return n;
}

// Tokens an autoregressive record's decode yields per target call in it: its prefill
// yields the first token, so a generation of G tokens makes G - 1 decode calls. A batched
// run's counts are summed over its sequences, each with a prefill of its own.
double TokensPerDecodeCall(const RawRecord& ar) {
  double tokens = 0, calls = 0;
  for (const RawRun& run : ar.runs) {
    tokens += run.stats.generated_tokens;
    const int prefills = std::max<int>(1, int(run.stats.per_sequence.size()));
    calls += std::max(0, run.stats.target_calls - prefills);
  }
  return calls > 0 ? tokens / calls : 1.0;
}

// Draft time per step of the cost model.
double DraftTimePerStep(const RawRecord& r, bool tree, const GenerationStats& pooled, double td1, double td2) {
  const double steps = double(pooled.k_per_step.size());
  // Model-free drafts record no call costs (td1 NaN) and take the measured time below
  // whether or not they draw a tree.
  if (tree)
    // A token tree: each draft call at its size (a model's tree: catch-ups T_d(n) and
    // tree calls T_d,tree(n); docs/trees.md), or the drafter's measured time (no model).
    return std::isfinite(td1) ? TreeDraftTime(pooled, r.costs) / steps : pooled.draft_s / steps;
  if (std::isfinite(td1)) {
    // Every draft call costs T_d(1), the first one of a step after a fully accepted step
    // T_d(2) (it also feeds the last draft token): counted from the per-step traces, so
    // for any K policy (records without them: constant K only, from the positions).
    double catch_ups = CatchUpsAfterFullSteps(r);
    const size_t kk = size_t(std::max(0, int(FieldNumber(r.params, "k"))));
    if (!std::isfinite(catch_ups))
      catch_ups = FieldText(r.params, "k_policy") == "constant" && kk > 0 && kk <= pooled.accepted_at_pos.size()
                      ? double(pooled.accepted_at_pos[kk - 1])
                      : 0.0;
    return (double(pooled.draft_calls) * td1 + catch_ups * (td2 - td1)) / steps;
  }
  return steps > 0 ? pooled.draft_s / steps : NAN;  // a drafter without a model (measured in the loop)
}

// Bound and predictions of a speculative record. At batch B the costs are the batch's
// (target_s[n-1] = T(B x n), draft_s = T_d(B x 1), T_d(B x 2)) and a batched run's step
// traces are its sequences' concatenated, so each term is per sequence-step: a batch step
// costs K T_d(B) + T(B(K+1)) and yields B E[tokens], the AR step T(B) for B tokens, the B
// cancels, and the formula is batch 1's. It assumes every step runs all B sequences
// (sequences leaving early: batch_occupancy < 1) and a ragged catch-up draft call costing
// T_d(B) plus its share of T_d(2B) - T_d(B) (docs/batching.md).
CostModel::Speculative SpeculativeCost(const RawRecord& r, bool tree, const GenerationStats& pooled,
                                       const RawRecord* baseline, double t1, double td1, double td2) {
  CostModel::Speculative s;
  const VerifyCost vc = VerifyCostOf(pooled, r.costs.target_s);
  const double steps = double(pooled.k_per_step.size());
  s.verify_time_s = vc.mean_verify_s;
  // A step emits at most accepted + 1 tokens and costs at least its verify call, so no
  // speedup can beat tokens / (sum over steps of T(k+1) / T(1)).
  s.speedup_bound = double(pooled.generated_tokens) / vc.calls_in_t1;
  // Cost model: E[tokens per step] x T(1) / (draft time per step + mean T(k+1)).
  double e_tokens = 1.0;
  for (size_t i = 0; i < pooled.accepted_at_pos.size(); ++i) e_tokens += double(pooled.accepted_at_pos[i]) / steps;
  const double draft_step = DraftTimePerStep(r, tree, pooled, td1, td2);
  s.cost_ratio = td1 / t1;
  // The baseline's decode as measured: its prefill yields the first token, so G tokens
  // cost G - 1 calls of T(1) (3% of the baseline's time at 32 new tokens).
  const double ar_tokens_per_call = baseline ? TokensPerDecodeCall(*baseline) : 1.0;
  s.predicted_speedup = e_tokens * t1 / ar_tokens_per_call / (draft_step + vc.mean_verify_s);
  s.predicted_speedup_leviathan =
      std::isfinite(s.cost_ratio) ? PredictedSpeedup(EstimateAlpha(pooled), MeanK(pooled), s.cost_ratio) : NAN;
  return s;
}

}  // namespace

CostModel BuildCostModel(const RawRecord& r, bool tree, const GenerationStats& pooled, const RawRecord* baseline) {
  // Verify-cost model inputs, measured in the same process as the runs.
  CostModel c;
  const std::vector<double>& t = r.costs.target_s;
  c.target_time_s = t.empty() ? NAN : t[0];
  c.target_time_by_n_s = t;
  if (const CostFit fit = FitVerifyCost(t); fit.ok()) c.verify_cost_fit = fit;
  c.draft_time_s = r.costs.draft_s.size() >= 1 ? r.costs.draft_s[0] : NAN;
  c.draft_catch_up_time_s = r.costs.draft_s.size() >= 2 ? r.costs.draft_s[1] : NAN;
  if (!r.costs.draft_tree_s.empty()) {
    c.draft_time_by_n_s = r.costs.draft_s;
    c.draft_tree_time_by_n_s = r.costs.draft_tree_s;
  }
  if (!r.baseline_key.empty())
    c.speculative =
        SpeculativeCost(r, tree, pooled, baseline, c.target_time_s, c.draft_time_s, c.draft_catch_up_time_s);
  return c;
}

}  // namespace specsweep

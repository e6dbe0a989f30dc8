#include "decoders/acceptance_source.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "base/error.h"

namespace specsweep {
namespace {

// A probability in [0, 1] written as a decimal number.
double ParseRate(std::string_view s, std::string_view what, std::string_view field) {
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || !(v >= 0.0 && v <= 1.0))
    Fail("{}: {}: '{}' is not a probability in [0, 1]", what, field, s);
  return v;
}

std::string Rates(const std::vector<double>& v) {
  std::string s;
  for (double x : v) s += fmt::format("{}{}", s.empty() ? "" : ",", x);
  return "[" + s + "]";
}

}  // namespace

std::string AcceptanceSource::Label() const {
  switch (kind) {
    case Kind::Measured: return "measured";
    case Kind::Alpha: return fmt::format("alpha={}{}", alpha, iid ? "+iid" : "");
    case Kind::Positions: return "positions=" + Rates(positions) + (iid ? "+iid" : "");
    case Kind::Trace: return "trace=" + trace;
  }
  return "?";
}

std::string AcceptanceSource::Caption() const {
  switch (kind) {
    case Kind::Measured: return "measured";
    case Kind::Alpha: return fmt::format("replayed α={}{}", alpha, iid ? " i.i.d." : "");
    case Kind::Positions: return "replayed positions " + Rates(positions) + (iid ? " i.i.d." : "");
    case Kind::Trace: return "replayed trace " + trace;
  }
  return "?";
}

AcceptanceSource ParseAcceptanceSource(std::string_view text, std::string_view what) {
  AcceptanceSource s;
  const size_t eq = text.find('=');
  const std::string_view name = text.substr(0, eq);
  std::string_view value = eq == text.npos ? "" : text.substr(eq + 1);
  if ((name == "alpha" || name == "positions") && value.ends_with("+iid")) {
    s.iid = true;
    value.remove_suffix(4);
  }
  if (text == "measured") return s;
  if (eq == text.npos || value.empty())
    Fail(
        "{}: '{}' is not an acceptance source (expected measured, alpha=A, positions=[p1,p2,...] or "
        "trace=RESULTS[:POINT])",
        what, text);
  if (name == "alpha") {
    s.kind = AcceptanceSource::Kind::Alpha;
    s.alpha = ParseRate(value, what, "alpha");
  } else if (name == "positions") {
    s.kind = AcceptanceSource::Kind::Positions;
    std::string_view list = value;
    if (list.starts_with('[') != list.ends_with(']')) Fail("{}: positions: unbalanced brackets in '{}'", what, value);
    if (list.starts_with('[')) list = list.substr(1, list.size() - 2);
    size_t start = 0;
    while (start <= list.size()) {
      const size_t comma = list.find(',', start);
      std::string_view part = list.substr(start, comma == list.npos ? list.npos : comma - start);
      while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
      while (!part.empty() && part.back() == ' ') part.remove_suffix(1);
      s.positions.push_back(ParseRate(part, what, "positions"));
      if (comma == list.npos) break;
      start = comma + 1;
    }
    if (s.positions.size() > 64) Fail("{}: positions: {} rates, at most 64", what, s.positions.size());
  } else if (name == "trace") {
    s.kind = AcceptanceSource::Kind::Trace;
    s.trace = std::string(value);
  } else {
    Fail(
        "{}: '{}' is not an acceptance source (expected measured, alpha=A, positions=[p1,p2,...] or "
        "trace=RESULTS[:POINT])",
        what, text);
  }
  return s;
}

// The seed is mixed so that a replay's draws do not repeat the sampler's (same seed).
AcceptanceReplay::AcceptanceReplay(const AcceptanceSource& s, uint64_t seed)
    : src_(s), rng_(seed ^ 0x9e3779b97f4a7c15ull) {
  if (s.kind == AcceptanceSource::Kind::Measured) Fail("decoder: acceptance_source: 'measured' is not replayed");
  if (s.kind == AcceptanceSource::Kind::Positions && s.positions.empty())
    Fail("decoder: acceptance_source: positions: no rates");
  if (s.kind == AcceptanceSource::Kind::Trace) {
    if (!s.traces) Fail("decoder: acceptance_source: {}: the trace was not loaded", s.Label());
    if (std::all_of(s.traces->begin(), s.traces->end(), [](auto& t) { return t.empty(); }))
      Fail("decoder: acceptance_source: {}: the recorded runs hold no speculative steps", s.Label());
  }
}

void AcceptanceReplay::BeginGeneration() {
  if (src_.kind != AcceptanceSource::Kind::Trace) return;
  trace_ = generation_++ % src_.traces->size();
  step_ = 0;
}

const TraceStep& AcceptanceReplay::Step() const {
  // Past the end of a trace (a longer generation than the recorded one) the next
  // recorded generation continues it; the constructor ensured one is non-empty.
  size_t t = trace_, i = step_;
  while (i >= (*src_.traces)[t].size()) {
    i -= (*src_.traces)[t].size();
    t = (t + 1) % src_.traces->size();
  }
  return (*src_.traces)[t][i];
}

int AcceptanceReplay::NextK() const { return src_.kind == AcceptanceSource::Kind::Trace ? Step().k : -1; }

const TreeStep* AcceptanceReplay::NextTree() const {
  if (src_.kind != AcceptanceSource::Kind::Trace || Step().tree.ranks.empty()) return nullptr;
  return &Step().tree;
}

double TauOfRates(const std::vector<double>& rates, int k) {
  double tau = 1, reach = 1;  // reach: probability that the step accepts positions 0..j
  for (int j = 0; j < k && !rates.empty(); ++j) {
    reach *= rates[std::min<size_t>(j, rates.size() - 1)];
    tau += reach;
  }
  return tau;
}

double ExpectedTau(const AcceptanceSource& s, int k) {
  switch (s.kind) {
    case AcceptanceSource::Kind::Alpha: return TauOfRates({s.alpha}, k);  // = (1 - α^(K+1)) / (1 - α)
    case AcceptanceSource::Kind::Positions: return TauOfRates(s.positions, k);
    default: return NAN;
  }
}

double AcceptanceReplay::Rate(int i) const {
  if (src_.kind == AcceptanceSource::Kind::Alpha) return src_.alpha;
  return src_.positions[std::min<size_t>(i, src_.positions.size() - 1)];
}

bool AcceptanceReplay::AcceptAt(int drafted, int i) {
  if (src_.iid) return rng_.Uniform() < Rate(i);
  // Steps of each size keep their own schedule: a generation's last, clipped steps then
  // cannot use up the rejections that its full steps are due.
  if (size_t(drafted) >= strata_.size()) strata_.resize(drafted + 1);
  std::vector<Stratum>& row = strata_[drafted];
  // Positions are first reached in order 0, 1, 2, ..., so the offsets come from the seed in
  // the same order whatever the draft does. Offsets in [1/4, 3/4) keep each count within 3/4
  // of its due: an early position's error changes how often later ones are reached, so a
  // small sample's tau strays less than with offsets anywhere in [0, 1).
  if (size_t(i) == row.size()) row.push_back({0.25 + 0.5 * rng_.Uniform(), 0, 0});
  Stratum& s = row[i];
  ++s.visits;
  const auto due = static_cast<int64_t>(std::floor(double(s.visits) * Rate(i) + s.offset));
  if (due <= s.accepted) return false;
  ++s.accepted;
  return true;
}

int AcceptanceReplay::Accepted(int drafted) {
  if (src_.kind == AcceptanceSource::Kind::Trace) {
    const int a = std::min(Step().accepted, drafted);
    ++step_;
    return a;
  }
  int a = 0;
  while (a < drafted && AcceptAt(drafted, a)) ++a;
  return a;
}

}  // namespace specsweep

#include "models/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "models/forward_overflow.h"
#include "models/vec_ops.h"

namespace specsweep {

namespace {

// Softmax in place over G rows, row g being sh[g][0..len0 + g) (the scores of G
// consecutive queries). Each row's sum runs in t order from 0: the G chains of float
// additions interleave over the common prefix, so a group costs about one row's latency.
// Returns the first row holding a non-finite score, or -1: +inf or NaN make its sum NaN,
// and -inf (which exp would make a silent zero weight) is its smallest score.
template <int G>
int SoftmaxRows(float* const* sh, int len0) {
  float sum[G], min_s[G];
  for (int g = 0; g < G; ++g) {
    float* r = sh[g];
    const int len = len0 + g;
    // The maximum in 8 lanes, then across them: max is exact, so any order gives the
    // same value (a zero's sign aside, which cannot change exp(r[t] - max_s)). The
    // minimum likewise, for the check.
    Lanes8 m8 = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
    Lanes8 lo8 = -m8;
    int t8 = 0;
    for (; t8 + 8 <= len; t8 += 8) {
      const Lanes8 s8 = LoadLanes8(r + t8);
      m8 = m8 < s8 ? s8 : m8;
      lo8 = lo8 > s8 ? s8 : lo8;
    }
    float max_s = -INFINITY;
    min_s[g] = INFINITY;
    for (int j = 0; j < 8; ++j) max_s = std::max(max_s, m8[j]), min_s[g] = std::min(min_s[g], lo8[j]);
    for (int t = t8; t < len; ++t) max_s = std::max(max_s, r[t]), min_s[g] = std::min(min_s[g], r[t]);
    for (int t = 0; t < len; ++t) r[t] = ExpF(r[t] - max_s);
    sum[g] = 0.0f;
  }
  for (int t = 0; t < len0; ++t)
#pragma GCC unroll 16
    for (int g = 0; g < G; ++g) sum[g] += sh[g][t];
  for (int g = 1; g < G; ++g)
    for (int t = len0; t < len0 + g; ++t) sum[g] += sh[g][t];
  for (int g = 0; g < G; ++g) {
    const float inv = 1.0f / sum[g];
    for (int t = 0; t < len0 + g; ++t) sh[g][t] *= inv;
  }
  for (int g = 0; g < G; ++g)
    if (!Finite(min_s[g]) || !Finite(sum[g])) return g;
  return -1;
}

// One query head at one position, any head size: sh[t] = q.k_t * scale for t < len,
// softmax, then out = sum_t sh[t] v_t accumulated in t order. k and v are one KV head's
// rows ([slots][hd], contiguous in the head-major cache), position t at row rows(t).
// Returns false when a score was not finite (SoftmaxRows).
template <class E>
bool AttendHead(const float* q, const E* k, const E* v, int len, Rows rows, float scale, int hd, float* sh,
                float* out) {
  for (int t = 0; t < len; ++t) sh[t] = Dot(q, k + size_t(rows(t)) * hd, hd) * scale;
  const bool finite = SoftmaxRows<1>(&sh, len) < 0;
  std::fill(out, out + hd, 0.0f);
  for (int t = 0; t < len; ++t)
    for (int e = 0; e < hd; ++e) out[e] += sh[t] * ToFloat(v[size_t(rows(t)) * hd + e]);
  return finite;
}

// Queries per group for head size HD: their output rows fill 16 vector registers
// (G x HD / 16 = 16).
template <int HD>
constexpr int kGroupQueries = 256 / HD;

// G consecutive queries of one head, query g at position p0 + g seeing positions
// [0, p0 + g]: per query the arithmetic of AttendHead (each score is Dot's sum, each
// output element accumulates sh[t] v_t in t order), so results never depend on G. Each
// key and value row is read once for the G queries instead of once per query (n = 8
// verification at context 512 read every head's rows from L2 8 times), the output rows
// stay in registers, and the score trees of 16 (position, query) pairs are taken
// together (LaneTreeSums16). Returns the first query whose scores were not finite, or -1.
template <int HD, int G, class E>
int AttendQueries(const float* const* q, const E* k, const E* v, int p0, Rows rows, float scale, float* const* sh,
                  float* const* out) {
  static_assert(HD % 16 == 0 && G >= 1 && G * HD / 16 <= 16);
  constexpr int P = 16 / G;    // positions per tree of 16 sums
  const int len_max = p0 + G;  // positions the last query sees
  int t0 = 0;
  for (; t0 + P <= len_max; t0 += P) {  // scores past a query's length are never used
    Lanes16 s[16] = {};                 // [P positions][G queries] lane partial sums
#pragma GCC unroll 16
    for (int r = 0; r < P; ++r) {
      const E* kt = k + size_t(rows(t0 + r)) * HD;
#pragma GCC unroll 8
      for (int j = 0; j < HD / 16; ++j) {
        const Lanes16 kj = LoadLanes16(kt + 16 * j);
#pragma GCC unroll 16
        for (int g = 0; g < G; ++g) s[r * G + g] += LoadLanes16(q[g] + 16 * j) * kj;  // as Dot
      }
    }
    const Lanes16 sums = LaneTreeSums16(s) * scale;
    for (int r = 0; r < P; ++r)
      for (int g = 0; g < G; ++g) sh[g][t0 + r] = sums[r * G + g];
  }
  for (int t = t0; t < len_max; ++t)
    for (int g = 0; g < G; ++g) sh[g][t] = Dot(q[g], k + size_t(rows(t)) * HD, HD) * scale;
  const int bad = SoftmaxRows<G>(sh, p0 + 1);
  Lanes16 o[G][HD / 16] = {};  // [G][HD] output rows
  // Queries [g0, G) accumulate position t.
  auto accumulate = [&](int t, int g0) {
    const E* vt = v + size_t(rows(t)) * HD;
#pragma GCC unroll 8
    for (int j = 0; j < HD / 16; ++j) {
      const Lanes16 vj = LoadLanes16(vt + 16 * j);
#pragma GCC unroll 16
      for (int g = g0; g < G; ++g) o[g][j] += sh[g][t] * vj;
    }
  };
  for (int t = 0; t <= p0; ++t) accumulate(t, 0);  // seen by every query
  for (int t = p0 + 1; t < len_max; ++t) accumulate(t, t - p0);
  for (int g = 0; g < G; ++g) std::memcpy(out[g], o[g], sizeof o[g]);
  return bad;
}

// Calls AttendQueries<HD, C> with C == c, 1 <= c <= G.
template <int HD, int G, class E>
int AttendQueriesN(int c, const float* const* q, const E* k, const E* v, int p0, Rows rows, float scale,
                   float* const* sh, float* const* out) {
  if constexpr (G >= 1) {
    if (c == G) return AttendQueries<HD, G>(q, k, v, p0, rows, scale, sh, out);
    return AttendQueriesN<HD, G - 1>(c, q, k, v, p0, rows, scale, sh, out);
  }
  return -1;
}

// AttendRuns for a head size with a grouped kernel.
template <int HD, class E>
int AttendGrouped(const QueryRun* runs, size_t n_runs, const E* k, const E* v, float scale, const HeadRows& h) {
  constexpr int G = kGroupQueries<HD>;
  for (size_t j = 0; j < n_runs; ++j) {
    const QueryRun& r = runs[j];
    const float* qs[G];
    float *ss[G], *os[G];
    for (int g = 0; g < r.c; ++g) {
      const size_t i = size_t(r.i0 + g);
      qs[g] = h.q + i * h.q_stride, ss[g] = h.scores + i * h.s_stride, os[g] = h.out + i * h.o_stride;
    }
    if (const int bad = AttendQueriesN<HD, G>(r.c, qs, k, v, r.p0, r.rows, scale, ss, os); bad >= 0) return r.i0 + bad;
  }
  return -1;
}

}  // namespace

int GroupQueries(int hd) {
  return hd == 16    ? kGroupQueries<16>
         : hd == 32  ? kGroupQueries<32>
         : hd == 64  ? kGroupQueries<64>
         : hd == 128 ? kGroupQueries<128>
                     : 1;
}

void AppendQueryRuns(const KVCache& cache, int start_pos, int n, int G, std::vector<QueryRun>& runs,
                     std::vector<int>& tails) {
  if (!cache.has_tree()) {
    for (int i0 = 0; i0 < n; i0 += G) runs.push_back({i0, std::min(G, n - i0), start_pos + i0, Rows{}});
    return;
  }
  const int from = cache.tree_from();
  for (int i0 = 0; i0 < n;) {
    int c = 1;
    while (c < G && i0 + c < n && cache.parent(start_pos + i0 + c) == start_pos + i0 + c - 1) ++c;
    const size_t off = tails.size();
    for (int s = start_pos + i0; s >= from; s = cache.parent(s)) tails.push_back(s);  // leaf first
    std::reverse(tails.begin() + off, tails.end());
    for (int g = 1; g < c; ++g) tails.push_back(start_pos + i0 + g);
    runs.push_back({i0, c, cache.position(start_pos + i0), Rows{from, nullptr}, int(off)});
    i0 += c;
  }
}

void FixTails(std::vector<QueryRun>& runs, const std::vector<int>& tails) {
  for (QueryRun& r : runs)
    if (r.tail_at >= 0) r.rows.tail = tails.data() + r.tail_at;
}

template <class E>
int AttendRuns(const QueryRun* runs, size_t n_runs, const E* k, const E* v, int hd, const HeadRows& h) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  switch (hd) {
    case 16: return AttendGrouped<16>(runs, n_runs, k, v, scale, h);
    case 32: return AttendGrouped<32>(runs, n_runs, k, v, scale, h);
    case 64: return AttendGrouped<64>(runs, n_runs, k, v, scale, h);
    case 128: return AttendGrouped<128>(runs, n_runs, k, v, scale, h);
    default: break;
  }
  for (size_t j = 0; j < n_runs; ++j) {  // one query per run
    const size_t i = size_t(runs[j].i0);
    if (!AttendHead(h.q + i * h.q_stride, k, v, runs[j].p0 + 1, runs[j].rows, scale, hd, h.scores + i * h.s_stride,
                    h.out + i * h.o_stride))
      return runs[j].i0;
  }
  return -1;
}

template int AttendRuns<float>(const QueryRun*, size_t, const float*, const float*, int, const HeadRows&);
template int AttendRuns<uint16_t>(const QueryRun*, size_t, const uint16_t*, const uint16_t*, int, const HeadRows&);

}  // namespace specsweep

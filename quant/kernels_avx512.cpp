// AVX-512 kernel family (F/BW/VL + VNNI): 16-lane float FMAs with masked tails, and
// vpdpbusd integer dots over 64-element steps (two 32-wide activation blocks).
// Selected only when cpuid reports all of these features.
#include <immintrin.h>

#include <algorithm>
#include <cfloat>
#include <cstring>

#include "quant/blocks.h"
#include "quant/kernels.h"
#include "quant/kquants.h"
#include "quant/packed.h"
#include "quant/prefetch.h"
#include "quant/target_region.h"

#if !defined(__clang__)
// GCC 12 reports its own _mm512_undefined_* placeholders inside insert/extract/shuffle
// intrinsics as maybe-uninitialized (the lanes are fully written), and where the baseline
// lacks AVX-512, lambdas taking or returning __m512 draw -Wpsabi (an ABI note that cannot
// matter: they never leave this file).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wpsabi"
#endif
SPECSWEEP_TARGET_PUSH("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,avx2,fma,f16c")

#include "quant/kernel_driver.h"

namespace specsweep {
namespace {

// Lanes [0, n) set, n clamped to [0, 16].
inline __mmask16 FirstLanes(int n) {
  return n >= 16 ? __mmask16(0xFFFF) : n <= 0 ? __mmask16(0) : __mmask16((1u << n) - 1);
}

// ---- float weights ---------------------------------------------------------------

struct F32W {
  static __m512 Load(const void* p) { return _mm512_loadu_ps(p); }
  static __m512 LoadMasked(const void* p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }
  static const uint8_t* At(const uint8_t* row, int c) { return row + 4 * c; }
};
struct F16W {
  static __m512 Load(const void* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(static_cast<const __m256i*>(p))); }
  static __m512 LoadMasked(const void* p, __mmask16 m) { return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p)); }
  static const uint8_t* At(const uint8_t* row, int c) { return row + 2 * c; }
};
struct BF16W {
  static __m512 Widen(__m256i h) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)); }
  static __m512 Load(const void* p) { return Widen(_mm256_loadu_si256(static_cast<const __m256i*>(p))); }
  static __m512 LoadMasked(const void* p, __mmask16 m) { return Widen(_mm256_maskz_loadu_epi16(m, p)); }
  static const uint8_t* At(const uint8_t* row, int c) { return row + 2 * c; }
};

// Horizontal sums of N <= 16 accumulators at once: out[4 (k % 4) + k / 4] = the sum of
// v[k]'s lanes, by the tree of _mm512_reduce_add_ps (lanes i + i+8, then + 4, + 2, + 1),
// so every sum is bit-identical to reducing its accumulator alone. Each level adds two
// shuffled vectors holding the halves of two inputs: 3 uops per pair instead of 8 per
// accumulator. Missing inputs (k >= N) are zero.
template <int N>
inline void HSums(const __m512 (&v)[N], float* out) {
  static_assert(N >= 1 && N <= 16);
  auto at = [&](int k) { return k < N ? v[k] : _mm512_setzero_ps(); };
  constexpr int n1 = (N + 1) / 2, n2 = (n1 + 1) / 2;
  __m512 l1[n1], l2[n2], l3[2];
// l1[m]: 256-bit halves = pair sums (i, i+8) of v[2m], v[2m+1]
#pragma GCC unroll 8
  for (int m = 0; m < n1; ++m) {
    const __m512 a = at(2 * m), b = at(2 * m + 1);
    l1[m] = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xEE));
  }
// l2[p]: quad q = sums (j, j+4) of v[4p + q]
#pragma GCC unroll 4
  for (int p = 0; p < n2; ++p) {
    const __m512 a = l1[2 * p], b = 2 * p + 1 < n1 ? l1[2 * p + 1] : _mm512_setzero_ps();
    l2[p] = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x88), _mm512_shuffle_f32x4(a, b, 0xDD));
  }
// l3[s]: quad q = [sums (0,2), (1,3) of v[8s + q], the same of v[8s + 4 + q]]
#pragma GCC unroll 2
  for (int s = 0; s < 2; ++s) {
    const __m512 a = 2 * s < n2 ? l2[2 * s] : _mm512_setzero_ps();
    const __m512 b = 2 * s + 1 < n2 ? l2[2 * s + 1] : _mm512_setzero_ps();
    l3[s] = _mm512_add_ps(_mm512_shuffle_ps(a, b, 0x44), _mm512_shuffle_ps(a, b, 0xEE));
  }
  // quad q = totals of v[q], v[4 + q], v[8 + q], v[12 + q]
  _mm512_storeu_ps(out, _mm512_add_ps(_mm512_shuffle_ps(l3[0], l3[1], 0x88), _mm512_shuffle_ps(l3[0], l3[1], 0xDD)));
}

template <class WL>
struct FloatBlk {
  static constexpr int kMaxAcc = 16;  // 32 zmm: 16 accumulators + 4 weights + activations
  // 4 x 4 tiles for n >= 4: per 16 FMAs 4 widened weight vectors and 4 activation loads,
  // against 2 + 8 (with the loads folded into the FMAs: 2 + 16) in 2 x 8 tiles: twice the
  // speed at n = 8 (docs/kernels.md, "Float tiles").
  static constexpr int kMaxCols = 4;
  static constexpr int kBlockRows = 16;
  // Column chunk: kMaxCols activation rows of 768 columns (12 KB) stay in L1 while every
  // row tile of a 16-row block uses them; 768-column matrices are never chunked.
  static constexpr int ChunkCols(int cols, int) { return cols <= QMatrix::kColChunk ? cols : QMatrix::kColChunk; }
  // Columns [c0, c1) of the R x C tile. Accumulators start at zero (c0 == 0) or from
  // park[a][b] ([R][kMaxCols][16] floats), are parked again if c1 < cols (c1 then a
  // multiple of 16), else reduced into Y.
  template <int R, int C>
  static void RunSpan(const QMatrix& W, int r, const float* X, int i0, int c0, int c1, float* park, float* Y) {
    if (ActivePrefetchPattern() == PrefetchPattern::kLead)
      RunSpanWith<R, C, PrefetchBinding::kLead>(W, r, X, i0, c0, c1, park, Y);
    else
      RunSpanWith<R, C, PrefetchBinding::kWindow>(W, r, X, i0, c0, c1, park, Y);
  }
  template <int R, int C, PrefetchBinding kBinding>
  static void RunSpanWith(const QMatrix& W, int r, const float* X, int i0, int c0, int c1, float* park, float* Y) {
    const int cols = W.cols;
    const uint8_t* w[R];  // [R] rows from column c0 (either layout: c0 starts a span)
    const float* x[C];    // [C] activation rows from column c0
#pragma GCC unroll 16
    for (int a = 0; a < R; ++a) w[a] = W.Span(r + a, c0);
#pragma GCC unroll 16
    for (int b = 0; b < C; ++b) x[b] = X + static_cast<size_t>(i0 + b) * cols + c0;
    __m512 acc[R][C];  // one 16-lane accumulator per output element
#pragma GCC unroll 16
    for (int a = 0; a < R; ++a)
#pragma GCC unroll 16
      for (int b = 0; b < C; ++b)
        acc[a][b] = c0 == 0 ? _mm512_setzero_ps() : _mm512_load_ps(park + (a * kMaxCols + b) * 16);
    const int full = std::min(c1, cols & ~15) - c0;  // columns from c0 in whole vectors
    // Window pattern: the tile's R spans are adjacent, one stream consumed R x as fast as
    // a span. Lead pattern: every span's next 64 columns one tile ahead, where the next
    // tile (the next R spans, adjacent in both layouts) reads them. A lead 4 KB past a
    // linear position left the later spans of each 6 KB tile without lead (rows 2-3 of a
    // 4-row F16 tile start 3-4.5 KB in); one tile ahead streamed fastest (docs/kernels.md,
    // "Float tiles").
    BasicPrefetcher<kBinding> window(w[0]);
    const size_t tile_bytes = WL::At(w[0], R * (c1 - c0)) - w[0];
    for (int c = 0; c < full; c += 16) {
      if constexpr (kBinding == PrefetchBinding::kLead) {
        if ((c & 63) == 0)
#pragma GCC unroll 16
          for (int a = 0; a < R; ++a)
            for (const uint8_t *p = WL::At(w[a], c) + tile_bytes, *e = p + (WL::At(w[a], 64) - w[a]); p < e; p += 64)
              _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T1);
      } else {
        window.Reach(WL::At(w[0], R * c));
      }
      __m512 wv[R];
#pragma GCC unroll 16
      for (int a = 0; a < R; ++a) {
        wv[a] = WL::Load(WL::At(w[a], c));
      }
#pragma GCC unroll 16
      for (int b = 0; b < C; ++b) {
        __m512 xv = _mm512_loadu_ps(x[b] + c);
        // One load per activation vector, not one per FMA; not at n = 1, where keeping
        // it in a register made 1.1B F16 decode 1.10x slower (two interleaved runs).
        if constexpr (C > 1) asm("" : "+v"(xv));
#pragma GCC unroll 16
        for (int a = 0; a < R; ++a) acc[a][b] = _mm512_fmadd_ps(wv[a], xv, acc[a][b]);
      }
    }
    if (c1 < cols) {
#pragma GCC unroll 16
      for (int a = 0; a < R; ++a)
#pragma GCC unroll 16
        for (int b = 0; b < C; ++b) _mm512_store_ps(park + (a * kMaxCols + b) * 16, acc[a][b]);
      return;
    }
    if (c0 + full < cols) {  // masked last vector: zeros in both operands
      const __mmask16 m = FirstLanes(cols - c0 - full);
      __m512 wv[R];
#pragma GCC unroll 16
      for (int a = 0; a < R; ++a) wv[a] = WL::LoadMasked(WL::At(w[a], full), m);
#pragma GCC unroll 16
      for (int b = 0; b < C; ++b) {
        const __m512 xv = _mm512_maskz_loadu_ps(m, x[b] + full);
#pragma GCC unroll 16
        for (int a = 0; a < R; ++a) acc[a][b] = _mm512_fmadd_ps(wv[a], xv, acc[a][b]);
      }
    }
    alignas(64) float sums[16];
    HSums<R * C>(reinterpret_cast<const __m512(&)[R * C]>(acc), sums);
#pragma GCC unroll 16
    for (int a = 0; a < R; ++a)
#pragma GCC unroll 16
      for (int b = 0; b < C; ++b) {
        const int k = a * C + b;
        Y[static_cast<size_t>(i0 + b) * W.rows + r + a] = sums[4 * (k % 4) + k / 4];
      }
  }
};

// ---- quantized weights -----------------------------------------------------------

// Step s covers elements [64 s, 64 s + 64) = activation blocks 2s, 2s+1. Load gives the
// 64 weights in element order (unsigned nibbles for Q4 types, int8 for Q8_0), Scales16
// the weight scales of 16 consecutive 32-wide blocks. LoadHalf covers a last odd 32-wide block
// (Q8_0/Q4_0 rows with an odd block count).
inline __mmask64 FirstBytes(int n) { return n >= 64 ? ~__mmask64(0) : n <= 0 ? __mmask64(0) : (__mmask64(1) << n) - 1; }

// Weight scales of `count` (<= 16, may be <= 0) 32-wide blocks from block k0 as floats,
// zeros beyond count. The row is a sequence of blocks of S bytes starting with their f16
// scale, one block per Rep 32-wide blocks. P = the blocks whose scales lie in one 128-byte
// window: two masked 64-byte loads (never past the row) and one two-source word permute
// per window, instead of 16 scalar loads and a store-forwarding stall.
template <int S, int Rep>
inline __m512 GatherScales16(const uint8_t* row, int k0, int count) {
  constexpr int P = (128 - 2) / S + 1 < 16 / Rep ? (128 - 2) / S + 1 : 16 / Rep;
  constexpr int kWindows = (16 / Rep + P - 1) / P;
  alignas(64) static constexpr auto idx = [] {
    struct {
      uint16_t w[32];
    } v{};  // [32] word indices: word i <- block (i / Rep) % P
    for (int i = 0; i < 16; ++i) v.w[i] = static_cast<uint16_t>((i / Rep) % P * (S / 2));
    return v;
  }();
  const __m512i ix = _mm512_load_si512(&idx);
  const uint8_t* p = row + static_cast<size_t>(S) * (k0 / Rep);
  const int bytes = S * ((std::max(count, 0) + Rep - 1) / Rep);  // whole blocks in range
  __m512i h = _mm512_setzero_si512();
  for (int j = 0; j < kWindows; ++j) {
    const int off = j * P * S;
    const __m512i lo = _mm512_maskz_loadu_epi8(FirstBytes(bytes - off), p + off);
    const __m512i hi = _mm512_maskz_loadu_epi8(FirstBytes(bytes - off - 64), p + off + 64);
    const __mmask32 words = ((1u << (P * Rep)) - 1) << (P * Rep * j);
    h = _mm512_or_si512(h, _mm512_maskz_permutex2var_epi16(words, lo, ix, hi));
  }
  h = _mm512_maskz_mov_epi16(FirstLanes(count), h);
  return _mm512_cvtph_ps(_mm512_castsi512_si256(h));
}

template <QType T>
struct QW;
template <>
struct QW<QType::Q8_0> {
  static constexpr bool kSigned = true;
  static const BlockQ8_0* B(const uint8_t* row) { return reinterpret_cast<const BlockQ8_0*>(row); }
  static __m512i Load(const uint8_t* row, int s) {
    const BlockQ8_0* b = B(row) + 2 * s;
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[0].qs))),
                              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[1].qs)), 1);
  }
  static __m512i LoadHalf(const uint8_t* row, int s) {
    return _mm512_zextsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(B(row)[2 * s].qs)));
  }
  static __m512 Scales16(const uint8_t* row, int k0, int count) {
    return GatherScales16<sizeof(BlockQ8_0), 1>(row, k0, count);
  }
};
template <>
struct QW<QType::Q4_0> {
  static constexpr bool kSigned = false;
  static const BlockQ4_0* B(const uint8_t* row) { return reinterpret_cast<const BlockQ4_0*>(row); }
  // [qs0 | qs0 | qs1 | qs1] by two 128-bit broadcast loads (load ports, no lane
  // shuffle), then the 64-bit lanes 1 and 3 of each pair shift right by 4: after the
  // nibble mask the 128-bit lanes hold [lo0 hi0 lo1 hi1], i.e. element order.
  static __m512i Load(const uint8_t* row, int s) {
    const BlockQ4_0* b = B(row) + 2 * s;
    __m512i z = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b[0].qs)));
    z = _mm512_mask_broadcast_i32x4(z, 0xFF00, _mm_loadu_si128(reinterpret_cast<const __m128i*>(b[1].qs)));
    const __m512i shift = _mm512_setr_epi64(0, 0, 4, 4, 0, 0, 4, 4);
    return _mm512_and_si512(_mm512_srlv_epi64(z, shift), _mm512_set1_epi8(0x0F));
  }
  static __m512i LoadHalf(const uint8_t* row, int s) {
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(B(row)[2 * s].qs));
    const __m256i v = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), _mm256_set1_epi8(0x0F));
    return _mm512_zextsi256_si512(v);
  }
  static __m512 Scales16(const uint8_t* row, int k0, int count) {
    return GatherScales16<sizeof(BlockQ4_0), 1>(row, k0, count);
  }
};
template <>
struct QW<QType::Q4_G64> {
  static constexpr bool kSigned = false;
  static const BlockQ4_G64* B(const uint8_t* row) { return reinterpret_cast<const BlockQ4_G64*>(row); }
  static __m512i Load(const uint8_t* row, int s) {
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(B(row)[s].qs));
    const __m512i z = _mm512_inserti64x4(_mm512_castsi256_si512(q), _mm256_srli_epi16(q, 4), 1);
    return _mm512_and_si512(z, _mm512_set1_epi8(0x0F));  // [low nibbles | high nibbles]
  }
  static __m512 Scales16(const uint8_t* row, int k0, int count) {
    return GatherScales16<sizeof(BlockQ4_G64), 2>(row, k0, count);
  }
  static __m512i LoadHalf(const uint8_t*, int) { return _mm512_setzero_si512(); }  // never: 64 | cols
};
template <>
struct QW<QType::Q4_G128> {
  static constexpr bool kSigned = false;
  static const BlockQ4_G128* B(const uint8_t* row) { return reinterpret_cast<const BlockQ4_G128*>(row); }
  static __m512i Load(const uint8_t* row, int s) {
    __m512i q = _mm512_loadu_si512(B(row)[s / 2].qs);
    if (s & 1) q = _mm512_srli_epi16(q, 4);  // elements 64..127 are the high nibbles
    return _mm512_and_si512(q, _mm512_set1_epi8(0x0F));
  }
  static __m512 Scales16(const uint8_t* row, int k0, int count) {
    return GatherScales16<sizeof(BlockQ4_G128), 4>(row, k0, count);
  }
  static __m512i LoadHalf(const uint8_t*, int) { return _mm512_setzero_si512(); }  // never: 128 | cols
};

// Per-column activation operands of one step.
struct ActStep {
  __m512i x;     // Q4: int8 values; Q8: values + 128 as unsigned bytes
  __m512i corr;  // Q4: -8 * sum of each 4 values (offset of the nibbles)
};
// Per-row correction for Q8_0: -128 * sum of each 4 weights (undoes the +128 bias of x).
template <QType T>
inline __m512i RowCorr(__m512i w) {
  if (!QW<T>::kSigned) return _mm512_setzero_si512();
  const __m512i s = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(static_cast<char>(0x80)), w);
  return _mm512_sub_epi32(_mm512_setzero_si512(), s);
}
// 16 int32 lanes; lanes 0-7 sum to block 2s, 8-15 to block 2s+1, exactly.
template <QType T>
inline __m512i Isum(__m512i w, __m512i wcorr, const ActStep& a) {
  if constexpr (QW<T>::kSigned) return _mm512_dpbusd_epi32(wcorr, a.x, w);  // (x+128) w - 128 w
  return _mm512_dpbusd_epi32(a.corr, w, a.x);                               // nib x - 8 x
}

// Scale segment: per (row, column) the products dw_k * dx_k of kSegBlocks consecutive
// 32-wide blocks are computed up front (16 f16 scales per vcvtph2ps, one vmulps per 16
// blocks), so the inner step only broadcasts two floats from L1. The products are the
// same floats as dw * dx computed per step, so results do not depend on kSegBlocks.
constexpr int kSegBlocks = 32;  // even: a 64-element step never straddles segments

template <QType T>
struct QuantBlk {
  static constexpr int kMaxAcc = 16;  // 32 zmm: 16 accumulators + 2 weights + operands
  static constexpr int kMaxCols = 8;  // n <= 8: every weight unpacked once
  template <int R, int C>
  static void Run(const QMatrix& W, int r, const float*, const QuantActs* A, int i0, float* Y) {
    const int nb = W.cols_padded / 32;
    const uint8_t* w[R];  // [R] rows
#pragma GCC unroll 16
    for (int a = 0; a < R; ++a) w[a] = W.Row(r + a);
    __m512 acc[R][C];  // lane partial sums per output element
#pragma GCC unroll 16
    for (int a = 0; a < R; ++a)
#pragma GCC unroll 16
      for (int b = 0; b < C; ++b) acc[a][b] = _mm512_setzero_ps();
    const size_t step_bytes = W.row_bytes * 2 / nb;  // weight bytes per 64 elements (approx.)
    alignas(64) float sc[R][C][kSegBlocks];          // dw_k * dx_k of the segment, 0 beyond nb
    WindowPrefetcher window(w[0]);
    for (int b0 = 0; b0 < nb; b0 += kSegBlocks) {
      const int bn = std::min(kSegBlocks, nb - b0);  // blocks in this segment
#pragma GCC unroll 16
      for (int a = 0; a < R; ++a) {
        for (int v = 0; v < bn; v += 16) {  // sc beyond bn: only index bn (odd) is read
          const __m512 dw = QW<T>::Scales16(w[a], b0 + v, std::min(16, bn - v));
          const __mmask16 m = FirstLanes(bn - v);
#pragma GCC unroll 16
          for (int b = 0; b < C; ++b) {
            const __m512 dx = _mm512_maskz_loadu_ps(m, A->D(i0 + b) + b0 + v);
            _mm512_store_ps(sc[a][b] + v, _mm512_mul_ps(dw, dx));
          }
        }
      }
      auto step = [&](int s, bool half) {
        window.Reach(w[0] + R * s * step_bytes);  // the R rows are adjacent
        const int k = 2 * s - b0;                 // segment index of the step's first block
        __m512i wv[R], wc[R];
#pragma GCC unroll 16
        for (int a = 0; a < R; ++a) {
          wv[a] = half ? QW<T>::LoadHalf(w[a], s) : QW<T>::Load(w[a], s);
          wc[a] = RowCorr<T>(wv[a]);
        }
#pragma GCC unroll 16
        for (int b = 0; b < C; ++b) {
          ActStep act;
          act.x = _mm512_load_si512(A->Q(i0 + b) + 64 * s);
          if (QW<T>::kSigned) act.x = _mm512_xor_si512(act.x, _mm512_set1_epi8(static_cast<char>(0x80)));
          act.corr = QW<T>::kSigned ? _mm512_setzero_si512() : _mm512_load_si512(A->Corr(i0 + b) + 16 * s);
#pragma GCC unroll 16
          for (int a = 0; a < R; ++a) {
            // [s_k x8, s_k+1 x8]: broadcast loads, no lane shuffle
            __m512 sv = _mm512_set1_ps(sc[a][b][k]);
            sv = _mm512_mask_broadcastss_ps(sv, 0xFF00, _mm_load_ss(&sc[a][b][k + 1]));
            const __m512 lanes = _mm512_cvtepi32_ps(Isum<T>(wv[a], wc[a], act));
            acc[a][b] = _mm512_fmadd_ps(lanes, sv, acc[a][b]);
          }
        }
      };
      const int s_end = (b0 + bn) / 2;
      for (int s = b0 / 2; s < s_end; ++s) step(s, false);
      if (bn & 1) step(s_end, true);  // only the row's last segment can be odd
    }
#pragma GCC unroll 16
    for (int a = 0; a < R; ++a)
#pragma GCC unroll 16
      for (int b = 0; b < C; ++b) Y[static_cast<size_t>(i0 + b) * W.rows + r + a] = _mm512_reduce_add_ps(acc[a][b]);
  }
};

// ---- packed quantized weights (Layout::kPacked16, quant/packed.h) -------------------

// acc + the signed bytes p[0..3] (broadcast to every lane) times the unsigned bytes of u:
// an embedded-broadcast memory operand, which GCC 12 does not fold from set1 (a separate
// vpbroadcastd per product).
inline __m512i DpbusdBcast(__m512i acc, __m512i u, const int8_t* p) {
#if defined(__GNUC__)
  asm("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(u), "m"(*reinterpret_cast<const int32_t*>(p)));
  return acc;
#else
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_dpbusd_epi32(acc, u, _mm512_set1_epi32(v));
#endif
}

// One 16-row group x C activation rows. Per 32-wide block, every vpdpbusd (4 broadcast
// activation bytes against 4 bytes of each of the 16 rows) advances all 16 rows' integer
// sums, one lane per row, starting from the offset correction -off * sum(xq). Each lane
// then holds its row's exact block sum, scaled and added as the scalar reference does
// ((dw * dx) * isum, then + acc; no fused multiply-add): bit-identical results.
// Per block and row group: 4 (Q4) or 8 (Q8) weight loads shared by the C columns.
template <QType T>
struct PackedBlk {
  static constexpr int kQuantBytes = packed::QuantBytes(T);
  static constexpr int kOffset = T == QType::Q4_0 ? 8 : 128;  // stored byte = value + kOffset
  static constexpr int kChunks = kQuantBytes / 64;            // 64-byte weight vectors per block

  // Integer block sums of block k (weights at q) for the C columns, is[b] from the offset
  // term off[b][k]. For C <= 2, two vpdpbusd chains per column (one chain is latency bound,
  // 5 cycles per step): Q4_0 keeps the high nibbles in place (16 x their value, one vpandn
  // instead of a shift and a mask) and divides that chain's sum by 16 at the end; Q8_0
  // alternates chunks. For C >= 3 the columns' chains are independent enough and the work
  // per column is what counts: one chain per column, the high nibbles shifted down once
  // per chunk for all columns (docs/kernels.md, "Packed Q8_0/Q4_0 kernels"). All of it is
  // exact integer arithmetic: the same sums either way.
  template <int C>
  static void BlockSums(const uint8_t* q, const int8_t* const (&x)[C], const int32_t* const (&off)[C], int k,
                        __m512i (&is)[C]) {
    constexpr bool kTwoChains = C <= 2;
    const __m512i nibble = _mm512_set1_epi8(0x0F);
    __m512i ih[C];  // [C] second chains (kTwoChains)
#pragma GCC unroll 16
    for (int b = 0; b < C; ++b) {
      is[b] = _mm512_set1_epi32(off[b][k]);
      ih[b] = _mm512_setzero_si512();
    }
#pragma GCC unroll 8
    for (int ch = 0; ch < kChunks; ++ch) {
      const __m512i v = _mm512_load_si512(q + 64 * ch);
      if constexpr (T == QType::Q4_0) {
        const __m512i lo = _mm512_and_si512(v, nibble);                 // elements 8ch..8ch+3
        const __m512i hi = kTwoChains ? _mm512_andnot_si512(nibble, v)  // 16 x elements 8ch+4..
                                      : _mm512_and_si512(_mm512_srli_epi16(v, 4), nibble);
#pragma GCC unroll 16
        for (int b = 0; b < C; ++b) {
          is[b] = DpbusdBcast(is[b], lo, x[b] + 32 * k + 8 * ch);
          __m512i& h = kTwoChains ? ih[b] : is[b];
          h = DpbusdBcast(h, hi, x[b] + 32 * k + 8 * ch + 4);
        }
      } else {
#pragma GCC unroll 16
        for (int b = 0; b < C; ++b) {
          __m512i& chain = kTwoChains && ch % 2 ? ih[b] : is[b];
          chain = DpbusdBcast(chain, v, x[b] + 32 * k + 4 * ch);
        }
      }
    }
    if constexpr (kTwoChains)
#pragma GCC unroll 16
      for (int b = 0; b < C; ++b)
        is[b] = _mm512_add_epi32(is[b], T == QType::Q4_0 ? _mm512_srai_epi32(ih[b], 4) : ih[b]);
  }

  template <int C>
  static void Run(const QMatrix& W, int g, const QuantActs& A, int i0, float* Y) {
    const int nb = W.cols_padded / 32;
    const uint8_t* q = packed::Group(W, g);
    const uint16_t* sc = packed::Scales(W, q);
    const int8_t* x[C];     // [C] quantized activation rows
    const float* dx[C];     // [C] their block scales
    const int32_t* off[C];  // [C] their offset terms -kOffset * block sum
    __m512 acc[C];          // [C] 16 rows each
#pragma GCC unroll 16
    for (int b = 0; b < C; ++b) {
      x[b] = A.Q(i0 + b);
      dx[b] = A.D(i0 + b);
      off[b] = A.BOff(i0 + b, kOffset);
      acc[b] = _mm512_setzero_ps();
    }
    // The prefetch follows the group's bytes (quants, then scales) in address order, a
    // block's share per block: a stream following only the quants skipped the scales
    // (docs/kernels.md, "Packed Q8_0/Q4_0 kernels").
    const size_t block_share = W.group_bytes / nb;
    const uint8_t* pf = q + block_share;
    WindowPrefetcher window(q);
    for (int k = 0; k < nb; ++k, q += kQuantBytes, pf += block_share) {
      window.Reach(pf);
      __m512i is[C];  // [C] 16 rows each
      BlockSums<C>(q, x, off, k, is);
      const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sc + 16 * k)));
#pragma GCC unroll 16
      for (int b = 0; b < C; ++b) {
        const __m512 s = _mm512_mul_ps(dw, _mm512_set1_ps(dx[b][k]));
        acc[b] = _mm512_add_ps(acc[b], _mm512_mul_ps(s, _mm512_cvtepi32_ps(is[b])));
      }
    }
    const __mmask16 valid = FirstLanes(W.rows - packed::kGroupRows * g);
#pragma GCC unroll 16
    for (int b = 0; b < C; ++b)
      _mm512_mask_storeu_ps(Y + static_cast<size_t>(i0 + b) * W.rows + packed::kGroupRows * g, valid, acc[b]);
  }
};

// Rows [r0, r1) start at a group boundary (MatMul's row chunks are whole groups); up to
// 8 activation rows per pass, so more re-read the group's weights from L1/L2. n > 8 takes
// 8 first: the pass that streams the group from memory hides the most work under it (an
// even split, 9 = 5 + 4, was slower: docs/kernels.md, "Packed Q8_0/Q4_0 kernels").
template <QType T>
void PackedRows(const QMatrix& W, int r0, int r1, const float*, const QuantActs* A, int n, float* Y) {
  for (int g = r0 / packed::kGroupRows; g * packed::kGroupRows < r1; ++g)
    for (int i = 0; i < n; i += 8)
      kernel_driver::WithCols<8>(std::min(8, n - i), [&]<int C>() { PackedBlk<T>::template Run<C>(W, g, *A, i, Y); });
}

template <class Blk>
void Rows(const QMatrix& W, int r0, int r1, const float* X, const QuantActs* A, int n, float* Y) {
  kernel_driver::DriveRows<Blk>(W, r0, r1, X, A, n, Y);
}

void QuantizeActsAvx512(const float* x, int cols, int cols_padded, int8_t* q, float* d, int32_t* corr) {
  for (int b = 0; b < cols_padded / 32; ++b) {
    const int left = cols - 32 * b;  // valid elements from the block start
    const __m512 v0 = _mm512_maskz_loadu_ps(FirstLanes(left), x + 32 * b);
    const __m512 v1 = _mm512_maskz_loadu_ps(FirstLanes(left - 16), x + 32 * b + 16);
    const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));
    float dd = amax / 127.0f;
    if (!(dd >= FLT_MIN)) dd = 0.0f;  // as the scalar oracle: no finite 1/d
    const __m512 id = _mm512_set1_ps(dd != 0.0f ? 1.0f / dd : 0.0f);
    const __m512i i0 = _mm512_cvt_roundps_epi32(_mm512_mul_ps(v0, id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512i i1 = _mm512_cvt_roundps_epi32(_mm512_mul_ps(v1, id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256i q8 =
        _mm256_inserti128_si256(_mm256_castsi128_si256(_mm512_cvtepi32_epi8(i0)), _mm512_cvtepi32_epi8(i1), 1);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 32 * b), q8);
    d[b] = dd;
    const __m256i s4 = _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(1), q8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(corr + 8 * b),
                        _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(s4, 3)));
  }
}

template <QType T>
void BlockDotsT(const uint8_t* row, const int8_t* xq, const int32_t* corr, int nblocks, int32_t* out) {
  for (int s = 0; 2 * s < nblocks; ++s) {
    const bool half = 2 * s + 1 == nblocks;
    const __m512i w = half ? QW<T>::LoadHalf(row, s) : QW<T>::Load(row, s);
    ActStep a;
    a.x = half ? _mm512_maskz_loadu_epi8(0xFFFFFFFFull, xq + 64 * s) : _mm512_loadu_si512(xq + 64 * s);
    if (QW<T>::kSigned) a.x = _mm512_xor_si512(a.x, _mm512_set1_epi8(static_cast<char>(0x80)));
    a.corr = QW<T>::kSigned ? _mm512_setzero_si512() : _mm512_maskz_loadu_epi32(half ? 0x00FF : 0xFFFF, corr + 16 * s);
    const __m512i v = Isum<T>(w, RowCorr<T>(w), a);
    out[2 * s] = _mm512_mask_reduce_add_epi32(0x00FF, v);
    if (!half) out[2 * s + 1] = _mm512_mask_reduce_add_epi32(0xFF00, v);
  }
}

void BlockDotsAvx512(QType type, const uint8_t* row, const int8_t* xq, const int32_t* corr, int nblocks, int32_t* out) {
  switch (type) {
    case QType::Q8_0: BlockDotsT<QType::Q8_0>(row, xq, corr, nblocks, out); break;
    case QType::Q4_0: BlockDotsT<QType::Q4_0>(row, xq, corr, nblocks, out); break;
    case QType::Q4_G64: BlockDotsT<QType::Q4_G64>(row, xq, corr, nblocks, out); break;
    case QType::Q4_G128: BlockDotsT<QType::Q4_G128>(row, xq, corr, nblocks, out); break;
    default: std::fill(out, out + nblocks, 0);
  }
}

double FmaProbeAvx512(long steps) {
  return kernel_driver::FmaProbe(steps, _mm512_set1_ps(0.999f), _mm512_set1_ps(1e-3f), 16,
                                 [](__m512 a, __m512 b, __m512 c) { return _mm512_fmadd_ps(a, b, c); });
}

}  // namespace

const KernelFamily& Avx512Kernels() {
  static const KernelFamily k = [] {
    KernelFamily f{.name = "avx512",
                   .quantize_acts = QuantizeActsAvx512,
                   .block_dots = BlockDotsAvx512,
                   .fma_probe = FmaProbeAvx512};
    f.Set(QType::F32, Rows<FloatBlk<F32W>>, Rows<FloatBlk<F32W>>);
    f.Set(QType::F16, Rows<FloatBlk<F16W>>, Rows<FloatBlk<F16W>>);
    f.Set(QType::BF16, Rows<FloatBlk<BF16W>>, Rows<FloatBlk<BF16W>>);
    f.Set(QType::Q8_0, Rows<QuantBlk<QType::Q8_0>>, PackedRows<QType::Q8_0>);
    f.Set(QType::Q4_0, Rows<QuantBlk<QType::Q4_0>>, PackedRows<QType::Q4_0>);
    f.Set(QType::Q4_G64, Rows<QuantBlk<QType::Q4_G64>>, nullptr);
    f.Set(QType::Q4_G128, Rows<QuantBlk<QType::Q4_G128>>, nullptr);
    SetGroupKernels(f, {KQuantRowsAvx512, LegacyRowsAvx512, LegacyPackedAvx512ForCpu});
    return f;
  }();
  return k;
}

}  // namespace specsweep

SPECSWEEP_TARGET_POP()

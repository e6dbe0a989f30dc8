// Register-blocking driver shared by the SIMD families: walks rows [r0, r1) in groups
// of 4 and the n activation columns in chunks of up to Blk::kMaxCols (default 4), so
// each weight vector loaded (and widened/unpacked) feeds every column of the chunk: for
// n <= kMaxCols every weight is read once; larger n re-reads the 4 rows from L1.
// Blk::Run<R, C>(W, r, X, A, i0, Y) computes the R x C tile Y[i0..i0+C)[r..r+R) with one
// accumulator per output element, so the tile shape never changes a result, only the
// speed. Kernels with Blk::kBlockRows (the AVX-512 float ones) use the blocked walk
// below instead, which also chunks the columns.
#pragma once
#include <algorithm>

#include "quant/kernels.h"

namespace specsweep::kernel_driver {

// FmaProbeFn body for vector type V of `lanes` floats: 12 chains cover the FMA latency
// (4 cycles) at up to two FMAs per cycle; a = a*b + c converges to c/(1-b), so no lane
// goes denormal. The chains are folded into one register the compiler must produce.
template <class V, class Fma>
double FmaProbe(long steps, V b, V c, int lanes, Fma fma) {
  V a[12];
  for (V& v : a) v = c;
  for (long s = 0; s < steps; ++s) {
#pragma GCC unroll 12
    for (V& v : a) v = fma(v, b, c);
  }
  V sum = a[0];
  for (int i = 1; i < 12; ++i) sum = fma(sum, b, a[i]);
  asm volatile("" : : "v"(sum));
  return double(steps) * 12 * lanes;
}

constexpr int TileRows(int max_acc, int c) {
  const int r = max_acc / c;
  return r >= 4 ? 4 : r >= 2 ? 2 : 1;
}

template <class Blk>
constexpr int MaxCols() {
  if constexpr (requires { Blk::kMaxCols; }) return Blk::kMaxCols;
  return 4;
}

template <class Blk, int C>
inline void Tile4(const QMatrix& W, int r, const float* X, const QuantActs* A, int i, float* Y) {
  constexpr int R = TileRows(Blk::kMaxAcc, C);
  for (int rr = 0; rr < 4; rr += R) Blk::template Run<R, C>(W, r + rr, X, A, i, Y);
}

// The last `left` (< C) columns of a row group: one tile of exactly `left` columns.
template <class Blk, int C>
inline void TailTile4(int left, const QMatrix& W, int r, const float* X, const QuantActs* A, int i, float* Y) {
  if constexpr (C >= 1) {
    if (left == C) return Tile4<Blk, C>(W, r, X, A, i, Y);
    TailTile4<Blk, C - 1>(left, W, r, X, A, i, Y);
  }
}
template <class Blk, int C>
inline void TailRow(int left, const QMatrix& W, int r, const float* X, const QuantActs* A, int i, float* Y) {
  if constexpr (C >= 1) {
    if (left == C) return Blk::template Run<1, C>(W, r, X, A, i, Y);
    TailRow<Blk, C - 1>(left, W, r, X, A, i, Y);
  }
}

// Calls f.template operator()<C>() with C == c, for 1 <= c <= CW.
template <int CW, class F>
inline void WithCols(int c, F&& f) {
  if constexpr (CW >= 1) {
    if (c == CW) return f.template operator()<CW>();
    WithCols<CW - 1>(c, f);
  }
}

// Blocked walk for kernels that can park accumulators in memory (Blk::kBlockRows,
// Blk::RunSpan, Blk::ChunkCols): per block of kBlockRows rows and per chunk of up to
// kMaxCols activation rows, the columns are walked in chunks small enough that those
// activation rows stay in L1 while every row group of the block uses them; the block's
// weights are re-read from L2 per activation chunk instead of the activations from L2
// per row group. Parking is exact and chunks are walked in column order, so the
// accumulation order of every output element is the same for any chunking.
// A matrix in Layout::kColChunks is walked in its own column chunks whatever n (they
// fit kMaxCols activation rows in L1), so every block is read in address order.
template <class Blk>
void DriveRowsBlocked(const QMatrix& W, int r0, int r1, const float* X, int n, float* Y) {
  constexpr int CW = MaxCols<Blk>(), RB = Blk::kBlockRows;
  static_assert(RB == QMatrix::kChunkRows && Blk::ChunkCols(1 << 30, CW) == QMatrix::kColChunk);
  alignas(64) float park[RB * CW * 16];  // [block row][column][16 lanes]
  const bool chunked = W.layout == Layout::kColChunks;
  const int r4 = r0 + (r1 - r0) / 4 * 4;
  // Activation rows per pass over the row blocks: 512 KB of them stay in L2 while every
  // block uses them, so a prefill reads its activations from L2 per block instead of
  // streaming all n rows from L3 or memory per 16 weight rows (docs/kernels.md, "Column
  // chunks of float matrices"). Up to that n is one pass.
  const int pass = std::max(CW, 512 * 1024 / (4 * W.cols) / CW * CW);
  for (int p0 = 0; p0 < n; p0 += pass) {
    const int p1 = std::min(n, p0 + pass);
    for (int rb = r0; rb < r4; rb += RB) {
      const int re = std::min(rb + RB, r4);
      for (int i = p0; i < p1; i += CW) {
        WithCols<CW>(std::min(CW, p1 - i), [&]<int C>() {
          constexpr int R = TileRows(Blk::kMaxAcc, C);
          const int kc = chunked ? QMatrix::kColChunk : Blk::ChunkCols(W.cols, C);
          for (int c0 = 0; c0 < W.cols; c0 += kc) {
            const int c1 = std::min(W.cols, c0 + kc);
            for (int r = rb; r < re; r += R)
              Blk::template RunSpan<R, C>(W, r, X, i, c0, c1, park + (r - rb) * CW * 16, Y);
          }
        });
      }
    }
  }
  const int kc = W.SpanCols();
  for (int r = r4; r < r1; ++r)
    for (int i = 0; i < n; i += CW)
      WithCols<CW>(std::min(CW, n - i), [&]<int C>() {
        for (int c0 = 0; c0 < W.cols; c0 += kc)
          Blk::template RunSpan<1, C>(W, r, X, i, c0, std::min(W.cols, c0 + kc), park, Y);
      });
}

template <class Blk>
void DriveRows(const QMatrix& W, int r0, int r1, const float* X, const QuantActs* A, int n, float* Y) {
  if constexpr (requires { Blk::kBlockRows; }) {
    DriveRowsBlocked<Blk>(W, r0, r1, X, n, Y);
  } else {
    constexpr int CW = MaxCols<Blk>();
    int r = r0;
    for (; r + 4 <= r1; r += 4) {
      int i = 0;
      for (; i + CW <= n; i += CW) Tile4<Blk, CW>(W, r, X, A, i, Y);
      TailTile4<Blk, CW - 1>(n - i, W, r, X, A, i, Y);
    }
    for (; r < r1; ++r) {
      int i = 0;
      for (; i + CW <= n; i += CW) Blk::template Run<1, CW>(W, r, X, A, i, Y);
      TailRow<Blk, CW - 1>(n - i, W, r, X, A, i, Y);
    }
  }
}

}  // namespace specsweep::kernel_driver

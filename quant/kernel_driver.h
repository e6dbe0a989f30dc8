// Register-blocking driver shared by the SIMD families: walks rows [r0, r1) in groups
// of 4 and the n activation columns in chunks of up to Blk::kMaxCols (default 4), so
// each weight vector loaded (and widened/unpacked) feeds every column of the chunk: for
// n <= kMaxCols every weight is read once; larger n re-reads the 4 rows from L1.
// Blk::Run<R, C>(W, r, X, A, i0, Y) computes the R x C tile Y[i0..i0+C)[r..r+R) with one
// accumulator per output element, so the tile shape never changes a result, only the
// speed.
#pragma once
#include "quant/kernels.h"

namespace specsweep::kernel_driver {

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
inline void TailTile4(int left, const QMatrix& W, int r, const float* X, const QuantActs* A, int i,
                      float* Y) {
  if constexpr (C >= 1) {
    if (left == C) return Tile4<Blk, C>(W, r, X, A, i, Y);
    TailTile4<Blk, C - 1>(left, W, r, X, A, i, Y);
  }
}
template <class Blk, int C>
inline void TailRow(int left, const QMatrix& W, int r, const float* X, const QuantActs* A, int i,
                    float* Y) {
  if constexpr (C >= 1) {
    if (left == C) return Blk::template Run<1, C>(W, r, X, A, i, Y);
    TailRow<Blk, C - 1>(left, W, r, X, A, i, Y);
  }
}

template <class Blk>
void DriveRows(const QMatrix& W, int r0, int r1, const float* X, const QuantActs* A, int n,
               float* Y) {
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

}  // namespace specsweep::kernel_driver

// Register-blocking driver shared by the SIMD families: walks rows [r0, r1) in groups
// of 4 and the n activation columns in chunks of up to 4, so each weight vector loaded
// feeds every column of the chunk (n columns share one pass over the weights: the
// 4 rows stay in L1 across chunks). Blk::Run<R, C>(W, r, X, A, i0, Y) computes the
// R x C tile Y[i0..i0+C)[r..r+R) with one accumulator per output element, so the tile
// shape never changes a result, only the speed.
#pragma once
#include "quant/kernels.h"

namespace specsweep::kernel_driver {

constexpr int TileRows(int max_acc, int c) {
  const int r = max_acc / c;
  return r >= 4 ? 4 : r >= 2 ? 2 : 1;
}

template <class Blk, int C>
inline void Tile4(const QMatrix& W, int r, const float* X, const QuantActs* A, int i, float* Y) {
  constexpr int R = TileRows(Blk::kMaxAcc, C);
  for (int rr = 0; rr < 4; rr += R) Blk::template Run<R, C>(W, r + rr, X, A, i, Y);
}

template <class Blk>
void DriveRows(const QMatrix& W, int r0, int r1, const float* X, const QuantActs* A, int n,
               float* Y) {
  int r = r0;
  for (; r + 4 <= r1; r += 4) {
    int i = 0;
    for (; i + 4 <= n; i += 4) Tile4<Blk, 4>(W, r, X, A, i, Y);
    switch (n - i) {
      case 3: Tile4<Blk, 3>(W, r, X, A, i, Y); break;
      case 2: Tile4<Blk, 2>(W, r, X, A, i, Y); break;
      case 1: Tile4<Blk, 1>(W, r, X, A, i, Y); break;
      default: break;
    }
  }
  for (; r < r1; ++r) {
    int i = 0;
    for (; i + 4 <= n; i += 4) Blk::template Run<1, 4>(W, r, X, A, i, Y);
    switch (n - i) {
      case 3: Blk::template Run<1, 3>(W, r, X, A, i, Y); break;
      case 2: Blk::template Run<1, 2>(W, r, X, A, i, Y); break;
      case 1: Blk::template Run<1, 1>(W, r, X, A, i, Y); break;
      default: break;
    }
  }
}

}  // namespace specsweep::kernel_driver

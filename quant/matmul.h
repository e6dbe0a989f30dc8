// Matrix products of a QMatrix with a few activation vectors.
//
// Determinism contract (the engine relies on it): Y[i][r] depends only on W row r and
// X row i, computed with a fixed reduction order; never on n, on the other rows of X,
// or on the thread count. Hence batch-of-n logits are bit-identical to n single steps.
#pragma once
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "quant/chunk_queue.h"
#include "quant/qmatrix.h"
#include "quant/runtime.h"

namespace specsweep {

// Y[n][W.rows] = X[n][W.cols] * W^T. X rows are dense with stride W.cols.
// Parallel over output rows (OpenMP, up to rt.threads), each weight block read once for
// all n columns, on the kernels of rt.
void MatMul(const Runtime& rt, const QMatrix& W, const float* X, int n, float* Y);

// Several products of the same X (W.cols equal): Y_j[n][W_j.rows] = X * W_j^T, in one
// parallel region (one fork/join instead of one per matrix); each Y_j is exactly what
// MatMul(rt, W_j, X, n, Y_j) gives.
struct MatMulTarget {
  const QMatrix* W;
  float* Y;
};
void MatMuls(const Runtime& rt, std::span<const MatMulTarget> targets, const float* X, int n);

// Team form, for the threads of an OpenMP region the caller keeps open across several
// products (the forward pass: one region per call, a barrier instead of a fork/join per
// product). Every thread of the team calls it with the same targets and n; X may be the
// calling thread's own copy (equal values). `queue`, Reset to MatMulChunks(targets)
// chunks for the team size before any thread calls, hands out row chunks; a thread
// returns when none is left, so read Y only after a barrier. Y_j is exactly what MatMul
// gives. MatMulChunks checks the targets (throws); MatMulsTeam trusts them. Both run
// on `kernels` (the caller's Runtime::kernels).
int MatMulChunks(const KernelChoice& kernels, std::span<const MatMulTarget> targets);
void MatMulsTeam(const KernelChoice& kernels, std::span<const MatMulTarget> targets, const float* X, int n,
                 ChunkQueue& queue, int thread);
// Zipped team form for matrices of equal rows (gate and up): chunk c computes rows
// [16c, 16c + 16) of every target, then calls epilogue(r0, r1) on the same thread, so an
// elementwise step over those rows of the outputs (SwiGLU) needs no barrier of its own.
// The queue is Reset to MatMulZippedChunks(targets). Y_j is exactly what MatMul gives.
int MatMulZippedChunks(std::span<const MatMulTarget> targets);
void MatMulsZippedTeam(const KernelChoice& kernels, std::span<const MatMulTarget> targets, const float* X, int n,
                       ChunkQueue& queue, int thread, const std::function<void(int, int)>& epilogue);
// Whether a product of this many weight bytes is worth splitting over threads (below,
// a fork/join costs more than the product; the rule MatMuls applies).
bool WorthSplitting(size_t weight_bytes);

// m in the layout its format's kernel family in `kernels` runs fastest: Q8_0/Q4_0
// re-laid out as Layout::kPacked16 where the family has packed kernels (avx512, avx2,
// avx2vnni), wide float matrices as Layout::kColChunks under avx512, else unchanged.
QMatrix PackForKernels(const KernelChoice& kernels, const QMatrix& m);
// The same for the kernels the model loaders pack weights for (models/: every loader and
// QuantizeModel call it): the process's Runtime::kernels as the harness applied them
// (SetLoadLayoutKernels), else DefaultKernels(). A model runs correctly on any runtime;
// on another one only more slowly where a format falls back to the scalar packed kernel.
QMatrix PackForKernels(const QMatrix& m);
void SetLoadLayoutKernels(const KernelChoice& kernels);

// The kernel families this CPU can run (built in and supported), best last.
std::vector<std::string> RunnableKernelIsas();

}  // namespace specsweep

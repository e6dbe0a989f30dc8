// Internal interface between MatMul and the per-ISA kernel families. Exposed so tests
// and benchmarks can run every family side by side against the scalar oracle.
//
// Semantics (defined by kernels_scalar.cpp):
//  - float weights (F32/F16/BF16): y = sum_c w[c] * x[c] in float, in the one order of
//    quant/float_order.h (16 lanes of fused multiply-adds over c mod 16, then a fixed
//    tree): every family gives the scalar reference's bits, so logits and greedy
//    acceptance do not depend on the CPU. The order differs from a sequential sum only by
//    rounding: |y - y_sequential| <= 2 * (cols + 16) * 2^-24 * sum_c |w[c] x[c]|.
//  - quantized weights: each activation row is quantized to 32-wide int8 blocks
//    (d = amax / 127 in float, q = nearbyint(x / d), blocks with d < FLT_MIN are zero).
//    Per block b: isum_b = sum_j wq[j] * xq[j] exactly in int32 (every family, bit-exact),
//    y = sum_b (dw_b * dx_b) * isum_b. The SIMD families accumulate the per-lane partial
//    integer sums (4 elements each) as float lanes in block order, then a fixed tree, so
//    |y_simd - y_ref| <= 2 * (cols/32 + 24) * 2^-24 * sum_j |dw wq_j| |dx xq_j|.
//  - packed Q8_0/Q4_0 (Layout::kPacked16): each lane of a vector holds one row's whole
//    block sum isum_b, so the SIMD kernels compute y exactly as the scalar reference does
//    (same products, same order, no fused multiply-add): bit-identical.
//  - Q4_1, Q5_0, Q5_1, IQ4_NL, IQ4_XS: quant/legacy_quants.h (16 float lanes, bit-identical
//    in either layout); K-quants: quant/kquants.h.
//  Every family is deterministic: an output element never depends on n, on the other
//  rows of X or on the thread count.
#pragma once
#include <cstdint>
#include <vector>

#include "quant/qmatrix.h"

namespace specsweep {

// Activation rows quantized to int8 blocks for the integer kernels.
struct QuantActs {
  int n = 0;
  int cols = 0;        // padded row length: multiple of 128 (widest kernel step), zeros beyond
  AlignedBuffer q;     // [n][cols] int8 values
  AlignedBuffer d;     // [n][cols/32] float block scales
  AlignedBuffer corr;  // [n][cols/4] int32: -8 * sum of each 4 consecutive q (Q4 offset)
  AlignedBuffer bsum;  // [n][cols/32] int32: sum of each 32-wide block's q (packed kernels)
  AlignedBuffer boff;  // [n][2][cols/32] int32: -8 x and -128 x bsum (packed Q4_0, Q8_0 offsets)
  // The packed Q4_1..IQ4_XS kernels' per-4-value terms (quant/legacy_quants.h), broadcast
  // from memory: [n][cols/4] float sum (the min's term) and [n][2][cols/4] int32 offset
  // corrections corr << 1 (Q5_0's 16) and corr << 4 (IQ4's 128).
  AlignedBuffer xsum, offsets;
  // Q8_K form for the K-quant kernels (quant/kquants.h), filled only when a K-quant
  // matrix is in the product: cols_k = the matrices' cols_padded (a multiple of 256).
  int cols_k = 0;
  AlignedBuffer kq;     // [n][cols_k] int8 values
  AlignedBuffer kd;     // [n][cols_k/256] float scales
  AlignedBuffer kbsum;  // [n][cols_k/16] int16: sum of each 16 consecutive q

  const int8_t* Q(int i) const { return reinterpret_cast<const int8_t*>(q.data()) + size_t(i) * cols; }
  const float* D(int i) const { return reinterpret_cast<const float*>(d.data()) + size_t(i) * (cols / 32); }
  const int32_t* Corr(int i) const { return reinterpret_cast<const int32_t*>(corr.data()) + size_t(i) * (cols / 4); }
  const int32_t* BSum(int i) const { return reinterpret_cast<const int32_t*>(bsum.data()) + size_t(i) * (cols / 32); }
  const int32_t* BOff(int i, int offset) const {  // offset 8 or 128
    return reinterpret_cast<const int32_t*>(boff.data()) + (2 * size_t(i) + (offset == 128)) * (cols / 32);
  }
  const float* XSum(int i) const { return reinterpret_cast<const float*>(xsum.data()) + size_t(i) * (cols / 4); }
  const int32_t* Offsets(int i, int shift) const {  // shift 1 or 4
    return reinterpret_cast<const int32_t*>(offsets.data()) + (2 * size_t(i) + (shift == 4)) * (cols / 4);
  }
  const int8_t* KQ(int i) const { return reinterpret_cast<const int8_t*>(kq.data()) + size_t(i) * cols_k; }
  const float* KD(int i) const { return reinterpret_cast<const float*>(kd.data()) + size_t(i) * (cols_k / 256); }
  const int16_t* KBSum(int i) const {
    return reinterpret_cast<const int16_t*>(kbsum.data()) + size_t(i) * (cols_k / 16);
  }
  // Grows the buffers (never shrinks) for n rows of `cols_needed` values.
  void Reserve(int n_rows, int cols_needed);
  void ReserveK(int n_rows, int cols_needed);
};

// Quantizes x[cols] into q[cols_padded], d[cols_padded/32], corr[cols_padded/4];
// cols_padded is a multiple of 128 >= cols, the tail is zero.
using QuantizeActsFn = void (*)(const float* x, int cols, int cols_padded, int8_t* q, float* d, int32_t* corr);

// Computes Y[i][r] for rows r in [r0, r1) and all i < n. X is [n][W.cols] (float
// types) and A the quantized X (integer types).
using RowsKernelFn = void (*)(const QMatrix& W, int r0, int r1, const float* X, const QuantActs* A, int n, float* Y);

// Per-block integer dot products of weight row `row` (quantized type) with quantized
// activations: out[b] = isum_b for b < nblocks (32-wide blocks). Test hook for the
// bit-exactness of the integer part; uses the family's own instruction sequence.
using BlockDotsFn = void (*)(QType type, const uint8_t* row, const int8_t* xq, const int32_t* corr, int nblocks,
                             int32_t* out);

// Runs `steps` rounds of the family's widest float multiply-add on 12 independent
// accumulators and returns the multiply-adds done: timed, it is the compute ceiling of
// the float kernels (one multiply-add per weight and activation column).
using FmaProbeFn = double (*)(long steps);

struct KernelFamily;
// Quantizes activation row x[cols] into row i of a (Reserve'd) with family k, block sums included.
void QuantizeActsRow(const KernelFamily& k, const float* x, int cols, int i, QuantActs& a);

struct KernelFamily {
  const char* name;  // "scalar", "avx2", "avx2vnni", "avx512"
  QuantizeActsFn quantize_acts;
  BlockDotsFn block_dots;
  // The family's kernel of every format (indexed by QType) in each layout; nullptr: none
  // for that layout (KernelFor then takes the scalar reference's). A family sets its
  // float and Q8 group kernels itself and the others' through SetGroupKernels.
  RowsKernelFn rows[kQTypeCount] = {};    // Layout::kRows
  RowsKernelFn packed[kQTypeCount] = {};  // Layout::kPacked16, floats Layout::kColChunks
  FmaProbeFn fma_probe;

  void Set(QType t, RowsKernelFn row_layout, RowsKernelFn packed_layout) {
    rows[static_cast<int>(t)] = row_layout;
    packed[static_cast<int>(t)] = packed_layout;
  }
};

// A family's kernels of the K-quant and legacy groups, by format (quant/kquants.h,
// quant/legacy_quants.h); a provider or its result nullptr: the scalar reference.
struct GroupKernels {
  RowsKernelFn (*kquant_rows)(QType) = nullptr;
  RowsKernelFn (*legacy_rows)(QType) = nullptr;
  RowsKernelFn (*legacy_packed)(QType) = nullptr;
};
// Sets k's entries of every K-quant and legacy format from g: K-quants on row layout,
// the legacy formats on both (the scalar reference takes either).
void SetGroupKernels(KernelFamily& k, const GroupKernels& g);

const KernelFamily& ScalarKernels();
const KernelFamily& Avx2Kernels();
const KernelFamily& Avx2VnniKernels();  // avx2 with AVX-VNNI packed integer kernels
const KernelFamily& Avx512Kernels();
// The family by name if compiled in and supported by this CPU, else nullptr.
const KernelFamily* FindKernelFamily(const char* isa);
// Family k's kernel for W in its current layout (the one dispatch of every format), and m
// in the layout k runs fastest.
RowsKernelFn KernelFor(const KernelFamily& k, const QMatrix& W);
QMatrix PackFor(const KernelFamily& k, const QMatrix& m);
// Y[n][W.rows] = X * W^T on family k alone, on `threads` threads (1: the calling thread;
// calibration, tests); W packed for k (PackFor).
void MatMulWith(const KernelFamily& k, const QMatrix& W, const float* X, int n, float* Y, int threads = 1);

// Activation length kernels expect for a matrix: cols_padded rounded up to 128.
inline int ActsCols(const QMatrix& W) { return (W.cols_padded + 127) / 128 * 128; }

}  // namespace specsweep

// avx2vnni K-quant kernels (Q4_K, Q5_K, Q6_K on row layout): quant/kquant_avx2_rows.h
// with AVX-VNNI's vpdpwssd for the scaled pair sums (one instruction instead of vpmaddwd
// + vpaddd; the same exact int32 sums). Only selected when cpuid has AVX-VNNI.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "quant/blocks_k.h"
#include "quant/fp16.h"
#include "quant/kquants.h"
#include "quant/prefetch.h"
#include "quant/qtype.h"
#include "quant/target_region.h"

SPECSWEEP_TARGET_PUSH("avx2,fma,f16c,avxvnni")

#include "quant/kquant_avx2_rows.h"

namespace specsweep {
namespace {

struct VnniDot {
  static __m256i Acc(__m256i acc, __m256i pairs, __m256i scales) { return _mm256_dpwssd_avx_epi32(acc, pairs, scales); }
};

}  // namespace

RowsKernelFn KQuantRowsAvx2Vnni(QType type) {
  switch (type) {
    case QType::Q4_K: return kquant_avx2::KRowsAvx2<VnniDot, QType::Q4_K>;
    case QType::Q5_K: return kquant_avx2::KRowsAvx2<VnniDot, QType::Q5_K>;
    case QType::Q6_K: return kquant_avx2::KRowsAvx2<VnniDot, QType::Q6_K>;
    default: return nullptr;
  }
}

}  // namespace specsweep

SPECSWEEP_TARGET_POP()

// avx2 kernels for Q4_1, Q5_0, Q5_1, IQ4_NL, IQ4_XS: quant/legacy_avx2_rows.h and _packed.h with
// vpmaddubsw + vpmaddwd for the 8 lanes' integer sums (exact: |pairs| <= 2 * 127 * 127
// for the signed IQ4 values, 2 * 31 * 128 for the unsigned ones).
#include <immintrin.h>

#include "quant/legacy_quants.h"
#include "quant/target_region.h"

SPECSWEEP_TARGET_PUSH("avx2,fma,f16c")

#include "quant/legacy_avx2_packed.h"
#include "quant/legacy_avx2_rows.h"

namespace specsweep {
namespace {

struct MaddDot {
  static constexpr bool kUnsignedIq4 = false;
  static __m256i Acc(__m256i acc, __m256i u, __m256i x) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, x), _mm256_set1_epi16(1)));
  }
};

}  // namespace

RowsKernelFn LegacyRowsAvx2(QType type) { return legacy_avx2::Select<MaddDot>(type); }
RowsKernelFn LegacyPackedAvx2(QType type) { return legacy_avx2_packed::Select<MaddDot>(type); }

}  // namespace specsweep

SPECSWEEP_TARGET_POP()

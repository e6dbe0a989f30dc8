// avx2vnni kernels for Q4_1, Q5_0, Q5_1, IQ4_NL, IQ4_XS: quant/legacy_avx2_rows.h with
// AVX-VNNI's vpdpbusd (u8 x s8 -> int32 without saturation, so IQ4 values + 128 are used
// unsigned as in the AVX-512 kernel). Only selected when cpuid has AVX-VNNI.
#include <immintrin.h>

#include "quant/legacy_quants.h"
#include "quant/target_region.h"

SPECSWEEP_TARGET_PUSH("avx2,fma,f16c,avxvnni")

#include "quant/legacy_avx2_packed.h"
#include "quant/legacy_avx2_rows.h"

namespace specsweep {
namespace {

struct VnniDot {
  static constexpr bool kUnsignedIq4 = true;
  static __m256i Acc(__m256i acc, __m256i u, __m256i x) { return _mm256_dpbusd_avx_epi32(acc, u, x); }
};

}  // namespace

RowsKernelFn LegacyRowsAvx2Vnni(QType type) { return legacy_avx2::Select<VnniDot>(type); }
RowsKernelFn LegacyPackedAvx2Vnni(QType type) { return legacy_avx2_packed::Select<VnniDot>(type); }

}  // namespace specsweep

SPECSWEEP_TARGET_POP()

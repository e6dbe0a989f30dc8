// avx512 + VBMI + GFNI kernels for Q5_0, Q5_1, IQ4_NL, IQ4_XS on the 16-row interleaved
// layout (quant/legacy_avx512_packed.h with kVbmi: IQ4's code book by vpermb, Q5's high
// bits by gf2p8affineqb): chosen by LegacyPackedAvx512 on CPUs with both (Zen 4, Ice Lake
// and later).
#include <immintrin.h>

#include "quant/legacy_quants.h"
#include "quant/target_region.h"

#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12's placeholders in the intrinsics
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wpsabi"
#endif
SPECSWEEP_TARGET_PUSH("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,avx512vbmi,gfni,avx2,fma,f16c")

#include "quant/legacy_avx512_packed.h"

namespace specsweep {

RowsKernelFn LegacyPackedAvx512Vbmi(QType type) {
  if (type == QType::Q4_1) return nullptr;
  return ForLegacyType(type, [](auto t) -> RowsKernelFn {
    return legacy_avx512_packed::PackedRows<decltype(t)::value, true>;
  });
}

}  // namespace specsweep

SPECSWEEP_TARGET_POP()

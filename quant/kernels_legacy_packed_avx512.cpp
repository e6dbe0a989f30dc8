// avx512 kernels for Q4_1, Q5_0, Q5_1, IQ4_NL, IQ4_XS on the 16-row interleaved layout:
// quant/legacy_avx512_packed.h. Q5 and IQ4 on CPUs with AVX512-VBMI and GFNI (Zen 4, Ice
// Lake and later) take the instance of kernels_legacy_packed_avx512vbmi.cpp.
#include <immintrin.h>

#include "quant/legacy_quants.h"
#include "quant/target_region.h"

#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12's placeholders in the intrinsics
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wpsabi"
#endif
SPECSWEEP_TARGET_PUSH("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,avx2,fma,f16c")

#include "quant/legacy_avx512_packed.h"

namespace specsweep {

RowsKernelFn LegacyPackedAvx512(QType type, bool vbmi) {
  if (vbmi && type != QType::Q4_1) return LegacyPackedAvx512Vbmi(type);
  return ForLegacyType(type, [](auto t) -> RowsKernelFn {
    return legacy_avx512_packed::PackedRows<decltype(t)::value, false>;
  });
}

namespace {

bool CpuHasVbmi() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512vbmi") && __builtin_cpu_supports("gfni");
}

}  // namespace

RowsKernelFn LegacyPackedAvx512ForCpu(QType type) {
  static const bool vbmi = CpuHasVbmi();
  return LegacyPackedAvx512(type, vbmi);
}

}  // namespace specsweep

SPECSWEEP_TARGET_POP()

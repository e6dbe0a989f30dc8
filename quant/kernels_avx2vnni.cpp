// The avx2vnni kernel family: the avx2 family with the packed Q8_0/Q4_0 kernels (and the
// K-quant and legacy ones of their files) on AVX-VNNI's 256-bit vpdpbusd (one instruction per 4-byte dot product
// instead of the vpmaddubsw/vpmaddwd pair; Intel since Alder Lake / Sapphire Rapids, AMD since Zen 5). Everything else
// is the avx2 family's; results are bit-identical to it and to the scalar reference. Compiled for those features
// regardless of the build flags and only selected when cpuid has them.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "quant/kernels.h"
#include "quant/kquants.h"
#include "quant/legacy_quants.h"
#include "quant/packed.h"
#include "quant/prefetch.h"
#include "quant/target_region.h"

SPECSWEEP_TARGET_PUSH("avx2,fma,f16c,avxvnni")

#include "quant/kernels_avx2_packed.h"

namespace specsweep {

const KernelFamily& Avx2VnniKernels() {
  static const KernelFamily k = [] {
    KernelFamily f = Avx2Kernels();
    f.name = "avx2vnni";
    f.packed[static_cast<int>(QType::Q8_0)] = PackedRows<QType::Q8_0, true>;
    f.packed[static_cast<int>(QType::Q4_0)] = PackedRows<QType::Q4_0, true>;
    SetGroupKernels(f, {KQuantRowsAvx2Vnni, LegacyRowsAvx2Vnni, LegacyPackedAvx2Vnni});
    return f;
  }();
  return k;
}

}  // namespace specsweep

SPECSWEEP_TARGET_POP()

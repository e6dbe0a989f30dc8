// The kernel tables of the families for the formats whose kernels live with their group.
#include "quant/kernels.h"
#include "quant/kquants.h"
#include "quant/legacy_quants.h"

namespace specsweep {

void SetGroupKernels(KernelFamily& k, const GroupKernels& g) {
  auto pick = [](RowsKernelFn (*provider)(QType), QType t, RowsKernelFn fallback) {
    const RowsKernelFn f = provider ? provider(t) : nullptr;
    return f ? f : fallback;
  };
  for (const QTypeTraits& f : kQTypes) {
    if (f.group == QGroup::kKQuant) {
      k.Set(f.type, pick(g.kquant_rows, f.type, KQuantRowsScalar(f.type)), nullptr);
    } else if (f.group == QGroup::kLegacy) {
      const RowsKernelFn scalar = LegacyRowsScalar(f.type);
      k.Set(f.type, pick(g.legacy_rows, f.type, scalar), pick(g.legacy_packed, f.type, scalar));
    }
  }
}

}  // namespace specsweep

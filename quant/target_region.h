// Opens and closes a region of a kernel file compiled for one instruction-set family
// (runtime dispatch picks the family; the rest of the program stays baseline x86-64).
// GCC's target pragma covers every function of the region, lambdas included; clang
// ignores that pragma and needs its attribute pragma, which also reaches lambda call
// operators. Without it clang builds only on a CPU whose -march=native has the family.
#pragma once

#define SPECSWEEP_PRAGMA(x) _Pragma(#x)
#if defined(__clang__)
#define SPECSWEEP_TARGET_PUSH(isa) \
  SPECSWEEP_PRAGMA(clang attribute push(__attribute__((target(isa))), apply_to = function))
#define SPECSWEEP_TARGET_POP() SPECSWEEP_PRAGMA(clang attribute pop)
#else
#define SPECSWEEP_TARGET_PUSH(isa) SPECSWEEP_PRAGMA(GCC push_options) SPECSWEEP_PRAGMA(GCC target(isa))
#define SPECSWEEP_TARGET_POP() SPECSWEEP_PRAGMA(GCC pop_options)
#endif

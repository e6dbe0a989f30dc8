#include "base/build_info.h"

namespace specsweep {

const char* SourceDir() { return SPECSWEEP_SOURCE_DIR; }
const char* GitRev() { return SPECSWEEP_GIT_REV; }
const char* CompilerId() { return SPECSWEEP_COMPILER; }
const char* BuildType() { return SPECSWEEP_BUILD_TYPE; }
const char* Version() { return SPECSWEEP_VERSION; }

}  // namespace specsweep

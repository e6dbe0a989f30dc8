// Facts fixed when the build was configured. Defined in one translation unit only, so
// that the rest of the code compiles to the same objects in any checkout (ccache hits
// across work trees and revisions).
#pragma once

namespace specsweep {

const char* SourceDir();   // the source tree (experiments/, plots/, ../shared beside it)
const char* GitRev();      // short commit hash at configure time ("" outside git)
const char* CompilerId();  // "GNU 12.2.0"
const char* BuildType();   // CMAKE_BUILD_TYPE ("" when none was given)
const char* Version();     // the project's version (CMakeLists.txt)

}  // namespace specsweep

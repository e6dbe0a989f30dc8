// YAML experiment files read into JSON, so one schema checker serves both formats.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace specsweep {

// Reads YAML into JSON (plain scalars typed as bool/int/float/null, quoted ones as
// strings); a syntax error becomes Error("FILE:LINE:COL: yaml: what").
// One document only; a key given twice in a map is an error naming both lines.
nlohmann::json ReadYamlAsJson(const std::string& path);
// JSON experiment files: a key given twice in an object is an error naming both lines
// (nlohmann would keep the last silently).
nlohmann::json ReadJsonStrict(const std::string& path);

}  // namespace specsweep

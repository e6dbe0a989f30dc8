// YAML experiment files read into JSON, so one schema checker serves both formats.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace specsweep {

// Reads YAML into JSON (plain scalars typed as bool/int/float/null, quoted ones as
// strings); a syntax error becomes Error("FILE:LINE:COL: yaml: what").
nlohmann::json ReadYamlAsJson(const std::string& path);

}  // namespace specsweep

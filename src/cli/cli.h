// The `pipescale` command line: plan (offline what-if), validate, profile (measure a model
// server's latency profile). Kept apart from main() so tests run it in-process.
#pragma once

#include <ostream>
#include <span>
#include <string>

namespace pipescale::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitInvalidInput = 2;  // bad flags or an invalid pipeline

// args excludes the program name. Writes results to `out`, problems to `err`.
int Run(std::span<const std::string> args, std::ostream& out, std::ostream& err);

}  // namespace pipescale::cli

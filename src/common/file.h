// Reading a whole file the user named (a pipeline, a trace, a cluster file, a kubeconfig), with
// the error a message can carry.
#pragma once

#include <string>

#include "common/result.h"

namespace pipescale {

// The bytes of the file at `path`; kNotFound "cannot read <what> <path>" when it cannot be opened
// (`what`: e.g. "the trace", "nodes file"; empty: just the path).
Result<std::string> ReadFileText(const std::string& path, const std::string& what = "");

}  // namespace pipescale

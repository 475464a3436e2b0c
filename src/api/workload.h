// Turning the rates a user gives (a total, or per path) into a model::Workload.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "common/result.h"
#include "model/pipeline.h"

namespace pipescale::api {

// Rates named in `per_path_rps` are taken as they are; `total_rps`, when given, is spread over
// the other paths in proportion to their weight. kInvalid for an unknown path, a negative
// rate, or no rate at all.
Result<model::Workload> MakeWorkload(const model::Pipeline& pipeline,
                                     std::optional<double> total_rps,
                                     const std::map<std::string, double>& per_path_rps);

}  // namespace pipescale::api

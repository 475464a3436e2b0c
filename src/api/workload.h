// Turning the rates a user gives (a total, or per path) into a model::Workload.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "model/limits.h"
#include "model/pipeline.h"

namespace pipescale::api {

// "" when `rps` is a rate the optimizers take (finite, in [0, limits::kMaxRateRps]); else what is
// wrong with it, e.g. "must be a finite number of requests per second, got inf".
std::string RateProblem(double rps);

// Rates named in `per_path_rps` are taken as they are; `total_rps`, when given, is spread over
// the other paths in proportion to their weight. kInvalid for an unknown path, a rate that
// RateProblem refuses, or no rate at all.
Result<model::Workload> MakeWorkload(const model::Pipeline& pipeline,
                                     std::optional<double> total_rps,
                                     const std::map<std::string, double>& per_path_rps);

// `workload` with each path's rate raised to its share of spec.minRate (split by weight, as
// MakeWorkload splits a total): the load the operator plans for when less is measured.
model::Workload AtLeastMinRate(const model::Pipeline& pipeline, model::Workload workload);

// A rate history (CSV lines `time,rate`: seconds and requests per second, an optional header,
// '#' comments) as one value per planning step of `step_seconds`: the peak within each step,
// as MArk forecasts peaks; a step with no sample repeats the one before. kInvalid names the
// line for a malformed row, a rate that RateProblem refuses, time going backwards or a history
// longer than limits::kMaxHistorySteps steps.
Result<std::vector<double>> ParseRateHistory(std::string_view csv, double step_seconds);

// Each path's share of a total rate in `workload` (by its weight when the total is 0).
std::map<std::string, double> PathShares(const model::Pipeline& pipeline,
                                         const model::Workload& workload);

}  // namespace pipescale::api

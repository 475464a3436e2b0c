// One entry point for every optimizer: pipeline + workload in, plan out. Pure: the caller
// measures wall time and fills SolveReport::solve_ms.
#pragma once

#include <optional>
#include <string_view>

#include "model/pipeline.h"
#include "model/plan.h"

namespace pipescale::optimizer {

enum class Algorithm { kFa2, kDs2, kInferline, kGrandslam, kExact, kLoki, kKairos, kMark };

std::optional<Algorithm> ParseAlgorithm(std::string_view name);
const char* AlgorithmName(Algorithm algorithm);
// The algorithm a pipeline's spec.optimizer names.
Algorithm AlgorithmFor(model::OptimizerKind kind);

// Precondition: the pipeline passed api validation and has at least one execution path.
model::Plan Solve(const model::Pipeline& pipeline, const model::Workload& workload,
                  Algorithm algorithm);

}  // namespace pipescale::optimizer

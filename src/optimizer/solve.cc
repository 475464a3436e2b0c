#include "optimizer/solve.h"

#include "optimizer/baselines.h"
#include "optimizer/exact.h"
#include "optimizer/fa2.h"
#include "optimizer/loki.h"
#include "optimizer/pool.h"
#include "optimizer/problem.h"

namespace pipescale::optimizer {

std::optional<Algorithm> ParseAlgorithm(std::string_view name) {
  for (Algorithm a :
       {Algorithm::kFa2, Algorithm::kDs2, Algorithm::kInferline, Algorithm::kGrandslam,
        Algorithm::kExact, Algorithm::kLoki, Algorithm::kKairos, Algorithm::kMark}) {
    if (name == AlgorithmName(a)) return a;
  }
  return std::nullopt;
}

const char* AlgorithmName(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::kFa2:
      return "fa2";
    case Algorithm::kDs2:
      return "ds2";
    case Algorithm::kInferline:
      return "inferline";
    case Algorithm::kGrandslam:
      return "grandslam";
    case Algorithm::kExact:
      return "exact";
    case Algorithm::kLoki:
      return "loki";
    case Algorithm::kKairos:
      return "kairos";
    case Algorithm::kMark:
      return "mark";
  }
  return "unknown";
}

Algorithm AlgorithmFor(model::OptimizerKind kind) {
  switch (kind) {
    case model::OptimizerKind::kFa2:
      return Algorithm::kFa2;
    case model::OptimizerKind::kLoki:
      return Algorithm::kLoki;
    case model::OptimizerKind::kKairos:
      return Algorithm::kKairos;
    case model::OptimizerKind::kMark:
      return Algorithm::kMark;
  }
  return Algorithm::kFa2;
}

model::Plan Solve(const model::Pipeline& pipeline, const model::Workload& workload,
                  Algorithm algorithm) {
  if (algorithm == Algorithm::kLoki) return SolveLoki(pipeline, workload);
  if (algorithm == Algorithm::kKairos) return SolveKairos(pipeline, workload);
  // MArk without history or running replicas: the forecast is flat at the current rate.
  if (algorithm == Algorithm::kMark) return SolveMark(pipeline, workload, {});
  const Problem problem = Compile(pipeline, workload);
  Solution solution;
  switch (algorithm) {
    case Algorithm::kFa2:
      solution = SolveFa2(problem);
      break;
    case Algorithm::kDs2:
      solution = SolveDs2(problem);
      break;
    case Algorithm::kInferline:
      solution = SolveInferline(problem);
      break;
    case Algorithm::kGrandslam:
      solution = SolveGrandslam(problem);
      break;
    case Algorithm::kExact:
      solution = SolveExact(problem);
      break;
    case Algorithm::kLoki:
    case Algorithm::kKairos:
    case Algorithm::kMark:
      break;  // solved above
  }
  return ToPlan(pipeline, problem, solution, AlgorithmName(algorithm));
}

}  // namespace pipescale::optimizer

#include "gym/tune.h"

#include <algorithm>

#include "gym/baseline.h"

namespace pipescale::gym {
namespace {

double WorstAttainment(const PolicyReport& report) {
  double worst = 1;
  for (const auto& [path, outcome] : report.paths) worst = std::min(worst, outcome.Attainment());
  return worst;
}

// Cheaper first; at equal cost, the higher attainment.
bool Better(const TunePoint& a, const TunePoint& b) {
  return a.cost != b.cost ? a.cost < b.cost : a.worst_attainment > b.worst_attainment;
}

}  // namespace

bool Tunable(const std::string& policy) {
  const auto parsed = ParseBaseline(policy);
  return parsed.ok() && parsed->kind != BaselinePolicy::Kind::kFixed &&
         policy.find(':') == std::string::npos;
}

Result<Tuned> Tune(const nlohmann::json& pipeline_object, const Options& options,
                   const std::string& base, const TuneGrid& grid) {
  auto parsed = ParseBaseline(base);
  if (!parsed) return parsed.error();
  if (!Tunable(base)) {
    return Error{ErrorKind::kInvalid,
                 "--tune sweeps the knobs of hpa, keda or kpa: name " + base + " without"};
  }
  Tuned out{.base = base};
  for (const double target : grid.targets) {
    for (const int batch : grid.batches) {
      BaselinePolicy policy = *parsed;
      policy.knobs.target = target;
      policy.knobs.max_batch = batch;
      Options run = options;
      run.policy = BaselineName(policy);
      run.progress = nullptr;
      auto report = Simulate(pipeline_object, run);
      if (!report) return report.error();
      out.points.push_back({.policy = run.policy,
                            .cost = report->total_cost,
                            .worst_attainment = WorstAttainment(*report),
                            .mean_replicas = report->mean_replicas});
    }
  }
  for (const TunePoint& p : out.points) {
    if (p.worst_attainment >= grid.attainment && (!out.best || Better(p, *out.best))) out.best = p;
    const bool closer =
        !out.closest || p.worst_attainment > out.closest->worst_attainment ||
        (p.worst_attainment == out.closest->worst_attainment && p.cost < out.closest->cost);
    if (!out.best && closer) out.closest = p;
  }
  if (out.best) out.closest.reset();
  return out;
}

}  // namespace pipescale::gym

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

// The cheapest point keeping `attainment` on every path into `tuned.best`, or, when none does, the
// one closest to it into `tuned.closest`.
void Pick(double attainment, Tuned& tuned) {
  tuned.best.reset();
  tuned.closest.reset();
  for (const TunePoint& p : tuned.points) {
    if (p.worst_attainment >= attainment && (!tuned.best || Better(p, *tuned.best))) tuned.best = p;
    const bool closer =
        !tuned.closest || p.worst_attainment > tuned.closest->worst_attainment ||
        (p.worst_attainment == tuned.closest->worst_attainment && p.cost < tuned.closest->cost);
    if (closer) tuned.closest = p;
  }
  if (tuned.best) tuned.closest.reset();
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
  const auto run = [&](double target, int batch) -> Result<TunePoint> {
    BaselinePolicy policy = *parsed;
    policy.knobs.target = target;
    policy.knobs.max_batch = batch;
    Options one = options;
    one.policy = BaselineName(policy);
    one.progress = nullptr;
    auto report = Simulate(pipeline_object, one);
    if (!report) return report.error();
    return TunePoint{.policy = one.policy,
                     .target = target,
                     .batch = batch,
                     .cost = report->total_cost,
                     .worst_attainment = WorstAttainment(*report),
                     .mean_replicas = report->mean_replicas};
  };
  for (const double target : grid.targets) {
    for (const int batch : grid.batches) {
      auto point = run(target, batch);
      if (!point) return point.error();
      out.points.push_back(*point);
    }
  }
  Pick(grid.attainment, out);
  if (out.points.empty() || grid.refine <= 0) return out;
  const TunePoint pick = out.best ? *out.best : *out.closest;
  for (const double target : {pick.target - grid.refine, pick.target + grid.refine}) {
    if (target <= 0 || target > 1) continue;
    auto point = run(target, pick.batch);
    if (!point) return point.error();
    out.points.push_back(*point);
  }
  Pick(grid.attainment, out);
  return out;
}

}  // namespace pipescale::gym

#include "optimizer/pool.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "optimizer/graph.h"

namespace pipescale::optimizer {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

void FillPaths(const model::Pipeline& pipeline, model::Plan& plan) {
  for (const model::Path& path : pipeline.spec.paths) {
    double ms = 0;
    for (const std::string& task : path.tasks) {
      double worst = 0;
      for (const model::TaskPlan& t : plan.tasks) {
        const int hw = pipeline.HardwareClassIndex(t.hardware_class);
        if (t.task != task || t.replicas == 0 ||
            pipeline.spec.hardware_classes[hw].burst_min_warm) {
          continue;
        }
        worst = std::max(worst, t.latency_ms + t.queue_ms);
      }
      ms += worst;
    }
    plan.paths.push_back({path.name, path.slo_ms, ms});
  }
}

void FillCost(const model::Pipeline& pipeline, model::Plan& plan) {
  plan.cost_per_hour = CostPerHour(pipeline, plan.tasks);
  plan.report.objective = {plan.cost_per_hour, "dollarsPerHour"};
}

}  // namespace

std::vector<Candidate> Classes(const model::Pipeline& p, const model::Variant& v, bool burst) {
  std::vector<Candidate> out;
  for (const model::Profile& profile : v.profiles) {
    const int hw = p.HardwareClassIndex(profile.hardware_class);
    if (hw < 0 || p.spec.hardware_classes[hw].burst_min_warm.has_value() != burst) continue;
    out.push_back({hw, &profile});
  }
  return out;
}

int ClassCap(const model::Pipeline& p, int hw, int limit) {
  const model::HardwareClass& c = p.spec.hardware_classes[hw];
  if (c.max_replicas) limit = std::min(limit, *c.max_replicas);
  if (p.spec.budget.max_replicas) limit = std::min(limit, *p.spec.budget.max_replicas);
  return limit;
}

std::string PoolKey(const std::string& task, const std::string& hardware_class) {
  return task + "/" + hardware_class;
}

std::string RunningKey(const std::string& task, const std::string& variant,
                       const std::string& hardware_class) {
  return task + "/" + variant + "/" + hardware_class;
}

std::vector<double> TaskBudgetsMs(const model::Pipeline& pipeline, int batch) {
  const auto& spec = pipeline.spec;
  std::vector<double> fastest(spec.tasks.size(), 0);
  for (size_t t = 0; t < spec.tasks.size(); ++t) {
    const model::Variant& v = spec.tasks[t].MostAccurateVariant();
    double best = kInf;
    for (const Candidate& c : Classes(pipeline, v, false)) {
      best = std::min(best, c.Ms(std::min(batch, v.max_batch)));
    }
    fastest[t] = std::isfinite(best) ? best : 0;
  }
  std::vector<double> out(spec.tasks.size(), 0);
  for (const model::Path& path : spec.paths) {
    std::vector<double> weights;
    for (const std::string& task : path.tasks) weights.push_back(fastest[pipeline.TaskIndex(task)]);
    const std::vector<double> shares = SplitSlo(path.slo_ms, weights);
    for (size_t j = 0; j < path.tasks.size(); ++j) {
      double& budget = out[pipeline.TaskIndex(path.tasks[j])];
      budget = budget == 0 ? shares[j] : std::min(budget, shares[j]);
    }
  }
  return out;
}

double SlowestStartupSeconds(const model::PipelineSpec& spec) {
  double startup = 0;
  for (const auto& hw : spec.hardware_classes) {
    if (!hw.burst_min_warm) startup = std::max(startup, hw.startup_seconds);
  }
  return startup;
}

void Shortfall(model::Plan& plan, std::string reason) {
  plan.report.status = model::SolveStatus::kInfeasible;
  plan.report.notes.push_back(reason);
  plan.report.reasons.push_back(std::move(reason));
}

void FillPathsAndCost(const model::Pipeline& pipeline, model::Plan& plan) {
  FillPaths(pipeline, plan);
  FillCost(pipeline, plan);
}

}  // namespace pipescale::optimizer

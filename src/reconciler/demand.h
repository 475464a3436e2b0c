// What the planners remember of the load between decisions, advanced at most once per interval
// so that extra reconciles (events, retries) neither weigh more nor rewrite the status: Loki's
// EWMA of each path's rate, MArk's per-interval rate series and its SLO guard's quiet time.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "api/deployment_view.h"
#include "model/metrics_snapshot.h"
#include "model/pipeline.h"
#include "model/status.h"
#include "optimizer/registry.h"
#include "reconciler/profiles.h"
#include "reconciler/query_mix.h"
#include "reconciler/slo_feedback.h"

namespace pipescale::reconciler {

inline constexpr size_t kMaxSeries = 2880;     // MArk's series per path: 8 hours at 10 s
inline constexpr double kEwmaAlpha = 1 / 2.6;  // Loki's, 1 / (1 + 1.6)

struct Demand {
  double at = 0;                                      // unix seconds of the last update; 0: never
  std::map<std::string, double> rps;                  // Loki: the EWMA per path
  std::map<std::string, std::vector<double>> series;  // measured, oldest first (SeriesKept)
  double guard_quiet_until = 0;                       // MArk: no guard action before this
  MixMemory query_mix;                                // Kairos: the query sizes adopted
  std::vector<model::ProfileCorrection> profiles;     // spec.profiles.learn: Plan
  Headroom headroom;                                  // FA2: the clients' feedback

  bool operator==(const Demand&) const = default;
};

// One decision's load: the workload to plan for, the planner's inputs and the memory to keep.
struct DemandStep {
  model::Workload workload;
  optimizer::PlannerInput input;
  Demand demand;
  std::optional<MixStep> mix;  // Kairos: the query sizes to plan for
  ProfileStep profiles;        // the measured profiles, and the corrections to plan from
  // The paths that surge (surge.h) and the recent rates the workload plans them for.
  std::map<std::string, double> surges;
  // FA2: the workload without the clients' headroom (slo_feedback.h), where it raised any path.
  // Planned instead when the headroom finds no room (and the headroom then kept as it was): the
  // misses a full class makes are not the model's, and more demand than fits only moves the
  // replicas between tasks.
  std::optional<model::Workload> without_headroom;
};

// Rates per path `optimizer` keeps, one per interval: MArk's whole series (kMaxSeries), the last
// kBurstWindow for the burst allowance (burst.h) and Loki's peak over the scale-down window; 0
// when it keeps none.
size_t SeriesKept(const optimizer::Descriptor& optimizer);

// Advances `before` by the measured rates at `now` (once per interval) and query sizes, as the
// optimizer's memory asks, and reads what runs from the pipeline's Deployments (by name). A path
// that surges is planned for its recent rate where that is more; the memory keeps the measured
// rates (a surge is this moment's, not a step of the series the planners learn from).
DemandStep StepDemand(const model::Pipeline& pipeline, const optimizer::Descriptor& optimizer,
                      const Demand& before, const model::MetricsSnapshot& metrics,
                      const std::map<std::string, api::DeploymentView>& deployments, double now);

// By RunningKey, the batch `applied` (the status's plan) gave each (task, variant, class) of
// `running`: the planners that hold running variants keep it near a threshold.
std::map<std::string, int> AppliedBatches(const model::AppliedPlan& applied,
                                          const std::map<std::string, int>& running);

// The spec's multiplicative factors replaced by the measured ones, where there are any, its
// query sizes by the mix to plan for, and its profiles by the corrections to plan from.
void UseMeasured(model::Pipeline& pipeline, const optimizer::Descriptor& optimizer,
                 const model::MetricsSnapshot& metrics, const DemandStep& step);

}  // namespace pipescale::reconciler

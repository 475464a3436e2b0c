// spec.scaleToZero's rule, pure: which paths have had no request for afterIdleSeconds (they
// sleep), which tasks no awake path needs (they go to 0 replicas), and when to look again. A
// path wakes at the first request the router counts for it, answered or held at its door.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "model/metrics_snapshot.h"
#include "model/pipeline.h"
#include "model/status.h"

namespace pipescale::reconciler {

// Looks this often while a path sleeps: its first request should wake it within a look, not an
// interval, since the request waits at the door for the whole wake. The operator reads the
// door's count from the routers themselves at each look (metrics/router_scrape.h), not only as
// Prometheus last scraped it, so the wake waits half a second at most for the look.
inline constexpr double kSleepingLookSeconds = 0.5;
// The operator's door watch (operator/quick_look.h) reads the routers' doors this often for each
// pipeline with a sleeping path, and queues a reconcile at once for one whose requests wait to
// wake it: a wake starts within a tenth of a second of its first request, as Knative's activator
// pokes its autoscaler at once. The sleeping look above remains for routers it cannot read.
inline constexpr double kDoorLookSeconds = 0.1;

// What one decision hands the next about sleep (status.memory keeps it through a restart).
struct SleepMemory {
  // Each quiet path since when (kept from the last decision, or now for a path quiet from now).
  std::map<std::string, double> quiet_since;
  // Each path ("" for requests naming none) with requests held at the door, since when: the
  // first look that saw them.
  std::map<std::string, double> held_since;
  std::set<std::string> sleeping_paths;  // quiet for afterIdleSeconds and not awake ahead
  // spec.scaleToZero.wakeAhead (reconciler/wake_ahead.h): when load returned to each path after
  // it slept, and the paths awake ahead of a forecast return.
  std::map<std::string, std::vector<model::LoadReturn>> returns;
  std::map<std::string, model::WakeForecast> awake_ahead;

  bool operator==(const SleepMemory&) const = default;
};

struct Sleep {
  SleepMemory memory;
  std::set<std::string> sleeping_tasks;  // on no awake path: 0 replicas
  bool idle = false;                     // every task sleeps
  // The paths this look woke ahead of a forecast, and those whose forecast window ended with no
  // request (they sleep again).
  std::set<std::string> woke_ahead;
  std::set<std::string> forecast_missed;
  // When to look again for the rule's sake (seconds from now): soon while a path sleeps, else
  // when the next quiet path falls asleep or a forecast window ends; nullopt when nothing is
  // quiet.
  std::optional<double> look_after_seconds;
};

// The rule for `pipeline` (which has spec.scaleToZero) at `now` (unix seconds), from a complete
// snapshot and what the last decision kept. A path is quiet when its rate reads 0 and the router
// holds nothing for it (nor any request naming no path). A pipeline without paths is one path,
// named "", measured by its arrival rate. A quiet path sleeps after afterIdleSeconds unless a
// forecast wakes it ahead; a request for a sleeping (or awake-ahead) path is a return of load.
// A `new_pipeline` (never planned) has been quiet since before it was created: it sleeps at
// once, as its model Deployments were created (at 0), until its first request wakes it, as a
// KEDA-scaled Deployment with no minimum does.
Sleep JudgeSleep(const model::Pipeline& pipeline, const model::MetricsSnapshot& metrics,
                 const SleepMemory& before, double now, bool new_pipeline = false);

// Whether the door watch reads `pipeline`'s routers: it has spec.scaleToZero and a router, and
// its last status says a path sleeps.
bool DoorWatched(const model::Pipeline& pipeline, const model::PipelineStatus& status);

// Whether requests `held` at the routers' doors (by path, "" for those naming none) wake a path
// that `status` says sleeps. Requests held for an awake path (its pods restarting) do not: the
// watch would queue a reconcile that changes nothing at every look.
bool WakesNow(const model::Pipeline& pipeline, const model::PipelineStatus& status,
              const std::map<std::string, double>& held);

// The path rates a plan is made for. The requests held at the router's door count as arrivals
// (they are in no rate until answered): over the time since they were first seen held (plus the
// second the scrape and the look take to see them), else over the rate's short window; a wake
// is sized for the rate at which requests wait, not for the one request the rate window has
// seen. A path awake ahead of a forecast is planned for the rate the forecast expects.
std::map<std::string, double> PlannedRates(const model::Pipeline& pipeline,
                                           const model::MetricsSnapshot& metrics,
                                           const SleepMemory& sleep, double now);

// Raises the rate of each path's returns of the last minute to `rates` (the planned rates).
void NoteReturnRates(const model::Pipeline& pipeline, const std::map<std::string, double>& rates,
                     const model::MetricsSnapshot& metrics, double now, SleepMemory& sleep);

}  // namespace pipescale::reconciler

// The reconciler's decision, as a pure function of what was observed: the plan, the Deployment
// writes that bring the cluster to it, the status to report and the events to emit. No I/O and
// no clock (the time is an input), so every policy here is unit-testable.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "model/metrics_snapshot.h"
#include "model/plan.h"

namespace pipescale::reconciler {

// One past recommendation (replicas per Deployment name), for the stabilization windows.
struct Recommendation {
  double at = 0;
  std::map<std::string, int> replicas;
};

// What the planners remember of the load, advanced at most once per interval so that extra
// reconciles (events, retries) neither weigh more nor rewrite the status: Loki's EWMA of each
// path's rate, MArk's per-step rate series to forecast from and its SLO guard's quiet time.
struct Demand {
  double at = 0;  // unix seconds of the last update; 0: never
  std::map<std::string, double> rps;
  std::map<std::string, std::vector<double>> series;  // MArk: oldest first, bounded
  double guard_quiet_until = 0;                       // MArk: no guard action before this

  bool operator==(const Demand&) const = default;
};

struct Observed {
  nlohmann::json object;                              // the InferencePipeline as read
  std::map<std::string, nlohmann::json> deployments;  // the pipeline's Deployments by name
  Result<model::MetricsSnapshot> metrics = Error{ErrorKind::kTransient, "not read"};
  double now = 0;                       // unix seconds
  std::vector<Recommendation> history;  // earlier recommendations, oldest first
  Demand demand;                        // Loki, MArk: what the last decision remembered
  // Loki, Kairos, MArk: the pipeline's routing ConfigMap as read; nullopt when it is absent.
  std::optional<nlohmann::json> routing_config_map;
};

// Routing for the data plane (Loki's tables, Kairos's and MArk's pools), in the ConfigMap
// `<pipeline>-routing`.
struct ConfigMapWrite {
  bool create = false;
  std::string name;
  nlohmann::json body;  // the object (create) or a merge patch of its data
};

struct DeploymentWrite {
  enum class Kind { kCreate, kPatch, kScaleToZero, kDelete };
  Kind kind = Kind::kPatch;
  std::string name;
  nlohmann::json body;  // the object (create) or a strategic merge patch (patch, scale to 0)
  // What the operator manages on the Deployment, for a create that finds it already exists.
  std::string batch_env;
  int replicas = 0;
  int batch_size = 1;
};

struct Decision {
  std::vector<DeploymentWrite> writes;    // empty in Recommend mode and while holding
  nlohmann::json status;                  // the complete status to report
  std::vector<std::string> events;        // PlanChanged messages
  std::vector<Recommendation> history;    // to pass back next time
  Demand demand;                          // to pass back next time
  std::optional<ConfigMapWrite> routing;  // Apply mode, when the tables changed
  // When to look again; nullopt for an invalid spec, which waits for the next generation.
  std::optional<double> requeue_after_seconds;
  std::optional<model::Plan> plan;  // the plan decided on, when there is one
};

Decision Decide(const Observed& observed);

}  // namespace pipescale::reconciler

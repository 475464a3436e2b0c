// The operator's own pipescale_* gauges: what each pipeline's plan asks for.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "model/plan.h"
#include "model/status.h"
#include "reconciler/capacity.h"

namespace pipescale::operator_main {

class OperatorMetrics {
 public:
  explicit OperatorMetrics(prometheus::Registry& registry);

  // Replaces the pipeline's series with those of `plan`, decided at `now` (unix seconds);
  // ns/name identify the pipeline. `served_accuracy` is Loki's accuracy as the router measured
  // it, beside the plan's.
  void Record(const std::string& ns, const std::string& name, const model::Plan& plan,
              double cost_per_hour, double decide_seconds, std::optional<double> served_accuracy,
              double now);
  void Forget(const std::string& ns, const std::string& name);
  // Adds the cluster's room per hardware class and the pods that wait, after Record: for every
  // one of `deployments`, 0 when none waits, so a dashboard shows 0 rather than no data.
  void RecordCapacity(const std::string& ns, const std::string& name,
                      const reconciler::ClusterCapacity& capacity,
                      const std::vector<std::string>& deployments);
  // Adds measured over declared per profile with a measurement (status.observed.profiles),
  // after Record.
  void RecordProfiles(const std::string& ns, const std::string& name,
                      const std::vector<model::ObservedProfile>& profiles);
  // Counts Deployment writes that restart pods (rolling updates the operator caused).
  void CountRollouts(const std::string& ns, const std::string& name, int rollouts);
  // Counts managed fields that were changed outside the operator and set back.
  void CountReverts(const std::string& ns, const std::string& name,
                    const std::vector<std::string>& fields);
  // Replaces the pipeline's pipescale_pipeline_condition series with its status.conditions,
  // so alerts can read Feasible, MetricsAvailable and PlanApplied (kube-state-metrics' shape).
  void RecordConditions(const std::string& ns, const std::string& name,
                        const nlohmann::json& conditions);
  // 1 while this replica holds the Lease (or runs without leader election).
  void SetLeader(bool leading);

 private:
  // Sets one of the pipeline's gauges and remembers it for Forget; mu_ held.
  void AddLocked(const std::string& ns, const std::string& name,
                 prometheus::Family<prometheus::Gauge>& family,
                 std::map<std::string, std::string> labels, double value);

  std::mutex mu_;
  prometheus::Family<prometheus::Gauge>& replicas_;
  prometheus::Family<prometheus::Gauge>& batch_;
  prometheus::Family<prometheus::Gauge>& latency_;
  prometheus::Family<prometheus::Gauge>& slo_;
  prometheus::Family<prometheus::Gauge>& cost_;
  prometheus::Family<prometheus::Gauge>& solve_;
  prometheus::Family<prometheus::Gauge>& decided_;
  prometheus::Family<prometheus::Gauge>& accuracy_;
  prometheus::Family<prometheus::Gauge>& served_accuracy_;
  prometheus::Family<prometheus::Gauge>& served_;
  prometheus::Family<prometheus::Gauge>& bound_;
  prometheus::Family<prometheus::Gauge>& forecast_;
  prometheus::Family<prometheus::Gauge>& placeable_;
  prometheus::Family<prometheus::Gauge>& unschedulable_;
  prometheus::Family<prometheus::Gauge>& condition_;
  prometheus::Family<prometheus::Gauge>& profile_ratio_;
  prometheus::Gauge& leader_;
  prometheus::Family<prometheus::Counter>& reverted_;
  prometheus::Family<prometheus::Counter>& rollouts_;
  std::map<std::string, std::vector<std::pair<prometheus::Family<prometheus::Gauge>*,
                                              prometheus::Gauge*>>>
      series_;  // per pipeline key, to remove stale series
  std::map<std::string, std::vector<prometheus::Gauge*>> conditions_;  // the same, for conditions
};

}  // namespace pipescale::operator_main

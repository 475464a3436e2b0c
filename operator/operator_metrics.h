// The operator's own pipescale_* metrics: what each pipeline's plan asks for, its conditions,
// the writes it caused, and whether this replica leads.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "metrics/keyed_gauges.h"
#include "reconciler/reconciler.h"

namespace pipescale::operator_main {

class OperatorMetrics {
 public:
  explicit OperatorMetrics(prometheus::Registry& registry);

  // Every pipeline's gauges, for the exposer to collect beside the registry.
  std::shared_ptr<metrics::KeyedGauges> pipelines() const { return pipelines_; }

  // Sets the pipeline's series to what `outcome` (which has a plan) decided at `now` (unix
  // seconds): the plan's replicas, batch sizes, predicted latencies and totals, the cluster's
  // room per class and the pods that wait (0 for every Deployment of the plan that none waits
  // for, so a dashboard shows 0 rather than no data), and the measured profiles. Series the
  // outcome no longer has are gone.
  void Record(const std::string& ns, const std::string& name,
              const reconciler::Reconciler::Outcome& outcome, double now);
  // Sets the pipeline's pipescale_pipeline_condition series to its status.conditions, so
  // alerts can read Feasible, MetricsAvailable and PlanApplied (kube-state-metrics' shape).
  void RecordConditions(const std::string& ns, const std::string& name,
                        const std::vector<model::Condition>& conditions);
  void Forget(const std::string& ns, const std::string& name);
  // Counts Deployment writes that restart pods (rolling updates the operator caused).
  void CountRollouts(const std::string& ns, const std::string& name, int rollouts);
  // Counts managed fields that were changed outside the operator and set back.
  void CountReverts(const std::string& ns, const std::string& name,
                    const std::vector<std::string>& fields);
  // 1 while this replica holds the Lease (or runs without leader election).
  void SetLeader(bool leading);

 private:
  std::shared_ptr<metrics::KeyedGauges> pipelines_;
  prometheus::Gauge& leader_;
  prometheus::Family<prometheus::Counter>& reverted_;
  prometheus::Family<prometheus::Counter>& rollouts_;
};

}  // namespace pipescale::operator_main

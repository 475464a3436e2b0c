#include "operator_metrics.h"

#include <algorithm>

namespace pipescale::operator_main {
namespace {

using Sample = metrics::KeyedGauges::Sample;

// The per-pipeline families, in the order of the table below.
enum Family : size_t {
  kReplicas,
  kBatch,
  kLatency,
  kSlo,
  kCost,
  kSolve,
  kDecided,
  kAccuracy,
  kServedAccuracy,
  kServed,
  kBound,
  kForecast,
  kPlaceable,
  kUnschedulable,
  kCondition,
  kProfileRatio,
  kHeadroom,
  kScheduled,
  kPool,
  kShare,
};

std::vector<metrics::KeyedGauges::Family> Families() {
  return {
      {"pipescale_desired_replicas", "Replicas the plan asks for"},
      {"pipescale_batch_size", "Batch size the plan sets"},
      {"pipescale_predicted_latency_ms", "Predicted end-to-end latency of each execution path"},
      {"pipescale_slo_ms", "Latency SLO of each execution path"},
      {"pipescale_cost_per_hour", "Cost of the plan per hour"},
      {"pipescale_solve_duration_seconds", "Time the last decision took, optimizer included"},
      {"pipescale_last_decision_timestamp_seconds",
       "Unix time of the pipeline's last decision: now minus it is how long its plan has gone "
       "without a look"},
      {"pipescale_accuracy",
       "Demand-weighted end-to-end accuracy of the plan (accuracy-scaling optimizers)"},
      {"pipescale_served_accuracy",
       "Loki: end-to-end accuracy of the variants that answered through the router, weighted by "
       "their calls"},
      {"pipescale_served_fraction",
       "Share of the demand the plan serves; below 1 only when overloaded"},
      {"pipescale_upper_bound_qps",
       "Kairos: the throughput upper bound of the chosen configuration"},
      {"pipescale_forecast_peak_rps", "MArk: the highest rate forecast over the horizon"},
      {"pipescale_capacity_replicas",
       "Replicas of each hardware class the pipeline can run now: its scheduled ones plus what "
       "still fits on the nodes the class admits"},
      {"pipescale_unschedulable_pods", "Pods of a Deployment the scheduler cannot place"},
      {"pipescale_pipeline_condition",
       "1 for each status condition of a pipeline, labelled with its type, status and reason"},
      {"pipescale_profile_ratio",
       "A variant's batch service time on a hardware class as the router measured it, over its "
       "declared latency profile (1: as declared)"},
      {"pipescale_path_headroom",
       "FA2: each path's planned rate over its measured rate, raised while its clients saw more "
       "than 1% of its requests unanswered (1: the measured rate)"},
      {"pipescale_scheduled_replicas",
       "The pipeline's replicas of each hardware class bound to a node: what it holds, to bill"},
      {"pipescale_pool_replicas",
       "Replicas of each hardware class the class's nodes hold for pipelines (what pipelines "
       "sharing them divide)"},
      {"pipescale_share_replicas",
       "The pipeline's share of its class's pool while pipelines contend for it "
       "(guaranteedReplicas, then priority, then equal parts)"},
  };
}

std::string Owner(const std::string& ns, const std::string& name) { return ns + "/" + name; }

// Collects one pipeline's series, each labelled with its namespace and name.
class Series {
 public:
  Series(const std::string& ns, const std::string& name) : ns_(ns), name_(name) {}
  void Add(Family family, prometheus::Labels labels, double value) {
    labels["namespace"] = ns_;
    labels["pipeline"] = name_;
    samples_.push_back({family, std::move(labels), value});
  }
  std::vector<Sample> Take() { return std::move(samples_); }

 private:
  const std::string& ns_;
  const std::string& name_;
  std::vector<Sample> samples_;
};

void AddPlan(const model::Plan& plan, Series& s) {
  for (const auto& t : plan.tasks) {
    const prometheus::Labels labels = {
        {"task", t.task}, {"variant", t.variant}, {"hardware_class", t.hardware_class}};
    s.Add(kReplicas, labels, t.replicas);
    s.Add(kBatch, labels, t.batch_size);
  }
  for (const auto& p : plan.paths) {
    s.Add(kLatency, {{"path", p.name}}, p.predicted_latency_ms);
    s.Add(kSlo, {{"path", p.name}}, p.slo_ms);
  }
  s.Add(kServed, {}, plan.served_fraction);
  if (const auto* loki = plan.accuracy_scaling()) {
    s.Add(kAccuracy, {{"phase", model::PhaseName(loki->phase)}}, loki->accuracy);
  }
  if (const auto* pools = plan.pools()) {
    if (pools->upper_bound_qps) s.Add(kBound, {}, *pools->upper_bound_qps);
    if (!pools->forecast_rps.empty()) {
      s.Add(kForecast, {},
            *std::max_element(pools->forecast_rps.begin(), pools->forecast_rps.end()));
    }
  }
}

void AddCapacity(const reconciler::ClusterCapacity& capacity,
                 const std::vector<std::string>& deployments, Series& s) {
  for (const auto& c : capacity.classes) {
    const prometheus::Labels cls{{"hardware_class", c.hardware_class}};
    s.Add(kPlaceable, cls, c.Limit());
    s.Add(kScheduled, cls, c.scheduled);
    if (c.pool > 0) s.Add(kPool, cls, c.pool);
    if (c.share) s.Add(kShare, cls, *c.share);
  }
  std::map<std::string, int> waiting;
  for (const std::string& d : deployments) waiting[d] = 0;
  for (const auto& u : capacity.unschedulable) waiting[u.deployment] = u.pods;
  for (const auto& [deployment, pods] : waiting) {
    s.Add(kUnschedulable, {{"deployment", deployment}}, pods);
  }
}

}  // namespace

OperatorMetrics::OperatorMetrics(prometheus::Registry& registry)
    : pipelines_(std::make_shared<metrics::KeyedGauges>(Families())),
      leader_(prometheus::BuildGauge()
                  .Name("pipescale_leader")
                  .Help("1 while this replica holds the leader Lease (or runs without election)")
                  .Register(registry)
                  .Add({})),
      reverted_(prometheus::BuildCounter()
                    .Name("pipescale_reverted_changes_total")
                    .Help("Managed Deployment fields changed outside the operator and set back")
                    .Register(registry)),
      rollouts_(prometheus::BuildCounter()
                    .Name("pipescale_rollouts_total")
                    .Help("Rolling restarts the operator caused (pod template changes such as a "
                          "batch size)")
                    .Register(registry)) {}

void OperatorMetrics::Record(const std::string& ns, const std::string& name,
                             const reconciler::Reconciler::Outcome& outcome, double now) {
  Series s(ns, name);
  AddPlan(*outcome.plan, s);
  s.Add(kCost, {}, outcome.cost_per_hour);
  s.Add(kSolve, {{"optimizer", outcome.plan->report.optimizer}}, outcome.decide_seconds);
  s.Add(kDecided, {}, now);
  if (outcome.plan->accuracy_scaling() && outcome.served_accuracy) {
    s.Add(kServedAccuracy, {}, *outcome.served_accuracy);
  }
  if (outcome.capacity) AddCapacity(*outcome.capacity, outcome.deployments, s);
  for (const model::ObservedProfile& p : outcome.profiles) {
    if (!p.ratio) continue;
    s.Add(kProfileRatio,
          {{"task", p.key.task},
           {"variant", p.key.variant},
           {"hardware_class", p.key.hardware_class}},
          *p.ratio);
  }
  for (const auto& [path, headroom] : outcome.headroom)
    s.Add(kHeadroom, {{"path", path}}, headroom);
  pipelines_->Set(Owner(ns, name), "plan", s.Take());
}

void OperatorMetrics::RecordConditions(const std::string& ns, const std::string& name,
                                       const std::vector<model::Condition>& conditions) {
  Series s(ns, name);
  for (const model::Condition& c : conditions) {
    s.Add(kCondition, {{"type", c.type}, {"status", c.status}, {"reason", c.reason}}, 1);
  }
  pipelines_->Set(Owner(ns, name), "conditions", s.Take());
}

void OperatorMetrics::Forget(const std::string& ns, const std::string& name) {
  pipelines_->Forget(Owner(ns, name));
}

void OperatorMetrics::CountRollouts(const std::string& ns, const std::string& name, int rollouts) {
  // Created at the first look, so the rate of a pipeline that never rolled out reads 0.
  rollouts_.Add({{"namespace", ns}, {"pipeline", name}}).Increment(rollouts);
}

void OperatorMetrics::CountReverts(const std::string& ns, const std::string& name,
                                   const std::vector<std::string>& fields) {
  for (const std::string& field : fields) {
    reverted_.Add({{"namespace", ns}, {"pipeline", name}, {"field", field}}).Increment();
  }
}

void OperatorMetrics::SetLeader(bool leading) { leader_.Set(leading ? 1 : 0); }

}  // namespace pipescale::operator_main

#include "operator_metrics.h"

#include <algorithm>

namespace pipescale::operator_main {

namespace {
prometheus::Family<prometheus::Gauge>& Gauge(prometheus::Registry& r, const char* name,
                                             const char* help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(r);
}
}  // namespace

OperatorMetrics::OperatorMetrics(prometheus::Registry& registry)
    : replicas_(Gauge(registry, "pipescale_desired_replicas", "Replicas the plan asks for")),
      batch_(Gauge(registry, "pipescale_batch_size", "Batch size the plan sets")),
      latency_(Gauge(registry, "pipescale_predicted_latency_ms",
                     "Predicted end-to-end latency of each execution path")),
      slo_(Gauge(registry, "pipescale_slo_ms", "Latency SLO of each execution path")),
      cost_(Gauge(registry, "pipescale_cost_per_hour", "Cost of the plan per hour")),
      solve_(Gauge(registry, "pipescale_solve_duration_seconds",
                   "Time the last decision took, optimizer included")),
      decided_(Gauge(registry, "pipescale_last_decision_timestamp_seconds",
                     "Unix time of the pipeline's last decision: now minus it is how long its "
                     "plan has gone without a look")),
      accuracy_(Gauge(registry, "pipescale_accuracy",
                      "Demand-weighted end-to-end accuracy of the plan (accuracy-scaling "
                      "optimizers)")),
      served_accuracy_(Gauge(registry, "pipescale_served_accuracy",
                             "Loki: end-to-end accuracy of the variants that answered through "
                             "the router, weighted by their calls")),
      served_(Gauge(registry, "pipescale_served_fraction",
                    "Share of the demand the plan serves; below 1 only when overloaded")),
      bound_(Gauge(registry, "pipescale_upper_bound_qps",
                   "Kairos: the throughput upper bound of the chosen configuration")),
      forecast_(Gauge(registry, "pipescale_forecast_peak_rps",
                      "MArk: the highest rate forecast over the horizon")),
      placeable_(Gauge(registry, "pipescale_capacity_replicas",
                       "Replicas of each hardware class the pipeline can run now: its scheduled "
                       "ones plus what still fits on the nodes the class admits")),
      unschedulable_(Gauge(registry, "pipescale_unschedulable_pods",
                           "Pods of a Deployment the scheduler cannot place")),
      condition_(Gauge(registry, "pipescale_pipeline_condition",
                       "1 for each status condition of a pipeline, labelled with its type, "
                       "status and reason")),
      profile_ratio_(Gauge(registry, "pipescale_profile_ratio",
                           "A variant's batch service time on a hardware class as the router "
                           "measured it, over its declared latency profile (1: as declared)")),
      leader_(Gauge(registry, "pipescale_leader",
                    "1 while this replica holds the leader Lease (or runs without election)")
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

void OperatorMetrics::AddLocked(const std::string& ns, const std::string& name,
                                prometheus::Family<prometheus::Gauge>& family,
                                std::map<std::string, std::string> labels, double value) {
  labels["namespace"] = ns;
  labels["pipeline"] = name;
  auto& g = family.Add(labels);
  g.Set(value);
  series_[ns + "/" + name].emplace_back(&family, &g);
}

void OperatorMetrics::Record(const std::string& ns, const std::string& name,
                             const model::Plan& plan, double cost_per_hour, double decide_seconds,
                             std::optional<double> served_accuracy, double now) {
  Forget(ns, name);
  std::lock_guard lock(mu_);
  auto add = [&](prometheus::Family<prometheus::Gauge>& family,
                 std::map<std::string, std::string> labels,
                 double value) { AddLocked(ns, name, family, std::move(labels), value); };
  for (const auto& t : plan.tasks) {
    const std::map<std::string, std::string> labels = {
        {"task", t.task}, {"variant", t.variant}, {"hardware_class", t.hardware_class}};
    add(replicas_, labels, t.replicas);
    add(batch_, labels, t.batch_size);
  }
  for (const auto& p : plan.paths) {
    add(latency_, {{"path", p.name}}, p.predicted_latency_ms);
    add(slo_, {{"path", p.name}}, p.slo_ms);
  }
  add(cost_, {}, cost_per_hour);
  add(solve_, {{"optimizer", plan.report.optimizer}}, decide_seconds);
  add(decided_, {}, now);
  add(served_, {}, plan.served_fraction);
  if (const auto* loki = plan.accuracy_scaling()) {
    add(accuracy_, {{"phase", model::PhaseName(loki->phase)}}, loki->accuracy);
    if (served_accuracy) add(served_accuracy_, {}, *served_accuracy);
  }
  if (const auto* pools = plan.pools()) {
    if (pools->upper_bound_qps) add(bound_, {}, *pools->upper_bound_qps);
    if (!pools->forecast_rps.empty()) {
      add(forecast_, {}, *std::max_element(pools->forecast_rps.begin(), pools->forecast_rps.end()));
    }
  }
}

void OperatorMetrics::RecordCapacity(const std::string& ns, const std::string& name,
                                     const reconciler::ClusterCapacity& capacity,
                                     const std::vector<std::string>& deployments) {
  std::lock_guard lock(mu_);
  auto add = [&](prometheus::Family<prometheus::Gauge>& family,
                 std::map<std::string, std::string> labels,
                 double value) { AddLocked(ns, name, family, std::move(labels), value); };
  for (const auto& c : capacity.classes) {
    add(placeable_, {{"hardware_class", c.hardware_class}}, c.Limit());
  }
  std::map<std::string, int> waiting;
  for (const std::string& d : deployments) waiting[d] = 0;
  for (const auto& u : capacity.unschedulable) waiting[u.deployment] = u.pods;
  for (const auto& [deployment, pods] : waiting) {
    add(unschedulable_, {{"deployment", deployment}}, pods);
  }
}

void OperatorMetrics::RecordProfiles(const std::string& ns, const std::string& name,
                                     const std::vector<model::ObservedProfile>& profiles) {
  std::lock_guard lock(mu_);
  for (const model::ObservedProfile& p : profiles) {
    if (!p.ratio) continue;
    AddLocked(ns, name, profile_ratio_,
              {{"task", p.key.task},
               {"variant", p.key.variant},
               {"hardware_class", p.key.hardware_class}},
              *p.ratio);
  }
}

void OperatorMetrics::CountRollouts(const std::string& ns, const std::string& name, int rollouts) {
  std::lock_guard lock(mu_);
  // Created at the first look, so the rate of a pipeline that never rolled out reads 0.
  rollouts_.Add({{"namespace", ns}, {"pipeline", name}}).Increment(rollouts);
}

void OperatorMetrics::CountReverts(const std::string& ns, const std::string& name,
                                   const std::vector<std::string>& fields) {
  std::lock_guard lock(mu_);
  for (const std::string& field : fields) {
    reverted_.Add({{"namespace", ns}, {"pipeline", name}, {"field", field}}).Increment();
  }
}

void OperatorMetrics::RecordConditions(const std::string& ns, const std::string& name,
                                       const nlohmann::json& conditions) {
  std::lock_guard lock(mu_);
  std::vector<prometheus::Gauge*>& gauges = conditions_[ns + "/" + name];
  for (prometheus::Gauge* g : gauges) condition_.Remove(g);
  gauges.clear();
  if (!conditions.is_array()) return;
  for (const auto& c : conditions) {
    if (!c.is_object()) continue;
    gauges.push_back(&condition_.Add({{"namespace", ns},
                                      {"pipeline", name},
                                      {"type", c.value("type", "")},
                                      {"status", c.value("status", "")},
                                      {"reason", c.value("reason", "")}}));
    gauges.back()->Set(1);
  }
}

void OperatorMetrics::SetLeader(bool leading) { leader_.Set(leading ? 1 : 0); }

void OperatorMetrics::Forget(const std::string& ns, const std::string& name) {
  std::lock_guard lock(mu_);
  if (auto c = conditions_.find(ns + "/" + name); c != conditions_.end()) {
    for (prometheus::Gauge* g : c->second) condition_.Remove(g);
    conditions_.erase(c);
  }
  auto it = series_.find(ns + "/" + name);
  if (it == series_.end()) return;
  for (auto& [family, gauge] : it->second) family->Remove(gauge);
  series_.erase(it);
}

}  // namespace pipescale::operator_main

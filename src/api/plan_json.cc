#include "api/plan_json.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "common/strings.h"

namespace pipescale::api {
namespace {

using nlohmann::ordered_json;

// PlanJsonOptions::rounded applied, or not.
struct Numbers {
  bool rounded = false;
  double Fraction(double v) const { return rounded ? RoundFraction(v) : v; }
  double Quantity(double v) const { return rounded ? RoundQuantity(v) : v; }
};

ordered_json TasksToJson(const model::Plan& plan, Numbers n) {
  ordered_json out = ordered_json::array();
  for (const model::TaskPlan& t : plan.tasks) {
    ordered_json task = {{"task", t.task},
                         {"variant", t.variant},
                         {"hardwareClass", t.hardware_class},
                         {"replicas", t.replicas},
                         {"batchSize", t.batch_size},
                         {"latencyMs", n.Quantity(t.latency_ms)},
                         {"queueMs", n.Quantity(t.queue_ms)},
                         {"loadRps", n.Quantity(t.load_rps)}};
    out.push_back(std::move(task));
  }
  return out;
}

ordered_json PathsToJson(const model::Plan& plan, Numbers n) {
  ordered_json out = ordered_json::array();
  for (const model::PathPlan& p : plan.paths) {
    out.push_back({{"name", p.name},
                   {"sloMs", p.slo_ms},
                   {"predictedLatencyMs", n.Quantity(p.predicted_latency_ms)}});
  }
  return out;
}

void AddAccuracyScaling(const model::AccuracyScalingPlan& loki, Numbers n, ordered_json& out) {
  out["phase"] = model::PhaseName(loki.phase);
  out["accuracy"] = n.Fraction(loki.accuracy);
  out["variantPaths"] = ordered_json::array();
  for (const model::VariantPath& v : loki.variant_paths) {
    out["variantPaths"].push_back({{"path", v.path},
                                   {"variants", v.variants},
                                   {"share", n.Fraction(v.share)},
                                   {"accuracy", n.Fraction(v.accuracy)},
                                   {"latencyMs", n.Quantity(v.latency_ms)}});
  }
  out["routing"] = RoutingToJson(loki, n.rounded);
  out["backups"] = BackupsToJson(loki, n.rounded);
}

void AddPools(const model::PoolPlan& pools, Numbers n, ordered_json& out) {
  if (pools.upper_bound_qps) out["upperBoundQps"] = n.Quantity(*pools.upper_bound_qps);
  if (!pools.forecast_rps.empty()) {
    ordered_json rps = ordered_json::array();
    for (double r : pools.forecast_rps) rps.push_back(n.Quantity(r));
    out["forecast"] = {{"stepSeconds", pools.forecast_step_seconds}, {"rps", rps}};
  }
  out["pools"] = PoolsToJson(pools, n.rounded);
}

}  // namespace

double RoundFraction(double v) { return std::round(v * 1e4) / 1e4; }
double RoundQuantity(double v) { return std::round(v * 1e2) / 1e2; }

ordered_json RoutingToJson(const model::AccuracyScalingPlan& plan, bool rounded) {
  const Numbers n{rounded};
  ordered_json out = ordered_json::array();
  for (const model::VariantRoute& r : plan.routing) {
    ordered_json to = ordered_json::array();
    for (const auto& [variant, fraction] : r.to) {
      to.push_back({{"variant", variant}, {"fraction", n.Fraction(fraction)}});
    }
    out.push_back({{"path", r.path}, {"task", r.task}, {"from", r.from_variant}, {"to", to}});
  }
  return out;
}

ordered_json BackupsToJson(const model::AccuracyScalingPlan& plan, bool rounded) {
  const Numbers n{rounded};
  ordered_json out = ordered_json::array();
  for (const model::BackupWorker& b : plan.backups) {
    out.push_back(
        {{"task", b.task}, {"variant", b.variant}, {"spareRps", n.Quantity(b.spare_rps)}});
  }
  return out;
}

ordered_json PoolsToJson(const model::PoolPlan& plan, bool rounded) {
  const Numbers n{rounded};
  ordered_json out = ordered_json::array();
  for (const model::Pool& p : plan.pools) {
    ordered_json members = ordered_json::array();
    for (const model::PoolMember& m : p.members) {
      members.push_back({{"hardwareClass", m.hardware_class},
                         {"replicas", m.replicas},
                         {"maxQuery", m.max_query},
                         {"coefficient", n.Fraction(m.coefficient)},
                         {"capacityRps", n.Quantity(m.capacity_rps)}});
    }
    ordered_json pool = {{"task", p.task}, {"qosMs", n.Quantity(p.qos_ms)}, {"members", members}};
    if (!p.spill_class.empty()) pool["spillClass"] = p.spill_class;
    if (p.upper_bound_qps > 0) pool["upperBoundQps"] = n.Quantity(p.upper_bound_qps);
    out.push_back(std::move(pool));
  }
  return out;
}

std::vector<RouterBatch> RouterBatches(const model::Pipeline& pipeline, const model::Plan& plan) {
  std::vector<RouterBatch> out;
  std::vector<int> replicas;
  for (const model::TaskPlan& t : plan.tasks) {
    const model::Variant* v = pipeline.FindVariant(t.task, t.variant);
    if (v == nullptr || !v->RouterBatches()) continue;
    const RouterBatch b{t.task, t.variant, t.batch_size, std::round(t.batch_wait_ms)};
    auto same = std::find_if(out.begin(), out.end(), [&](const RouterBatch& o) {
      return o.task == t.task && o.variant == t.variant;
    });
    if (same == out.end()) {
      out.push_back(b);
      replicas.push_back(t.replicas);
    } else if (t.replicas > replicas[same - out.begin()]) {
      *same = b;
      replicas[same - out.begin()] = t.replicas;
    }
  }
  return out;
}

ordered_json BatchesToJson(const std::vector<RouterBatch>& batches) {
  ordered_json out = ordered_json::array();
  for (const RouterBatch& b : batches) {
    out.push_back({{"task", b.task},
                   {"variant", b.variant},
                   {"batchSize", b.batch_size},
                   {"waitMs", b.wait_ms}});
  }
  return out;
}

ordered_json PlanToJsonValue(const model::Plan& plan, const PlanJsonOptions& options) {
  const Numbers n{options.rounded};
  ordered_json out = ordered_json::object();
  if (options.report) {
    out["status"] = model::SolveStatusName(plan.report.status);
    out["optimizer"] = plan.report.optimizer;
    out["objective"] = plan.report.objective.value;
    out["objectiveUnit"] = plan.report.objective.unit;
    out["solveMs"] = plan.report.solve_ms;
  }
  out["costPerHour"] = n.Quantity(plan.cost_per_hour);
  if (plan.floor_cost_per_hour > 0) {
    out["minReplicasCostPerHour"] = n.Quantity(plan.floor_cost_per_hour);
  }
  out["servedFraction"] = n.Fraction(plan.served_fraction);
  out["tasks"] = TasksToJson(plan, n);
  out["paths"] = PathsToJson(plan, n);
  if (const auto* loki = plan.accuracy_scaling()) AddAccuracyScaling(*loki, n, out);
  if (const auto* pools = plan.pools()) AddPools(*pools, n, out);
  if (options.report) out["notes"] = plan.report.notes;
  return out;
}

std::string PlanToJson(const model::Plan& plan) { return PlanToJsonValue(plan, {}).dump(2) + "\n"; }

std::string PlanToTable(const model::Plan& plan) {
  std::string out;
  out += StrFormat("optimizer %s: %s, %d replicas, $%.3f/h, solved in %.2f ms\n\n",
                   plan.report.optimizer.c_str(), model::SolveStatusName(plan.report.status),
                   plan.TotalReplicas(), plan.cost_per_hour, plan.report.solve_ms);
  out += StrFormat("%-14s %-14s %-10s %8s %6s %11s %9s\n", "TASK", "VARIANT", "HARDWARE",
                   "REPLICAS", "BATCH", "LATENCY_MS", "QUEUE_MS");
  for (const auto& t : plan.tasks) {
    out += StrFormat("%-14s %-14s %-10s %8d %6d %11.1f %9.1f\n", t.task.c_str(), t.variant.c_str(),
                     t.hardware_class.c_str(), t.replicas, t.batch_size, t.latency_ms, t.queue_ms);
  }
  out += StrFormat("\n%-20s %10s %14s %6s\n", "PATH", "SLO_MS", "PREDICTED_MS", "MEETS");
  for (const auto& p : plan.paths) {
    out += StrFormat("%-20s %10.1f %14.1f %6s\n", p.name.c_str(), p.slo_ms, p.predicted_latency_ms,
                     p.predicted_latency_ms <= p.slo_ms + 1e-9 ? "yes" : "NO");
  }
  if (const auto* loki = plan.accuracy_scaling()) {
    out += StrFormat("\nphase %s, accuracy %.4f, serving %.1f%% of the demand\n",
                     model::PhaseName(loki->phase), loki->accuracy, 100 * plan.served_fraction);
    for (const auto& v : loki->variant_paths) {
      std::string variants;
      for (const auto& name : v.variants) variants += (variants.empty() ? "" : " > ") + name;
      out += StrFormat("  %-16s %5.1f%%  accuracy %.3f  %6.1f ms  %s\n", v.path.c_str(),
                       100 * v.share, v.accuracy, v.latency_ms, variants.c_str());
    }
  }
  if (const auto* pools = plan.pools()) {
    out += "\n";
    if (pools->upper_bound_qps) {
      out += StrFormat("upper bound %.1f qps", *pools->upper_bound_qps);
    }
    if (plan.served_fraction < 1) {
      out += StrFormat("%scovering %.1f%% of the demand", pools->upper_bound_qps ? ", " : "",
                       100 * plan.served_fraction);
    }
    if (pools->upper_bound_qps || plan.served_fraction < 1) out += "\n";
    if (!pools->forecast_rps.empty()) {
      out += StrFormat("forecast (rps, every %.0f s from now):", pools->forecast_step_seconds);
      for (double r : pools->forecast_rps) out += StrFormat(" %.1f", r);
      out += "\n";
    }
  }
  for (const auto& n : plan.report.notes) out += "note: " + n + "\n";
  return out;
}

}  // namespace pipescale::api

#include "api/plan_json.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "common/strings.h"

namespace pipescale::api {
nlohmann::ordered_json RoutingToJson(const model::Plan& plan, bool rounded) {
  auto out = nlohmann::ordered_json::array();
  for (const auto& r : plan.routing) {
    nlohmann::ordered_json to = nlohmann::ordered_json::array();
    for (const auto& [variant, fraction] : r.to) {
      to.push_back({{"variant", variant},
                    {"fraction", rounded ? std::round(fraction * 1e4) / 1e4 : fraction}});
    }
    out.push_back({{"path", r.path}, {"task", r.task}, {"from", r.from_variant}, {"to", to}});
  }
  return out;
}

nlohmann::ordered_json PoolsToJson(const model::Plan& plan, bool rounded) {
  auto number = [rounded](double v) { return rounded ? std::round(v * 1e4) / 1e4 : v; };
  auto out = nlohmann::ordered_json::array();
  for (const auto& p : plan.pools) {
    auto members = nlohmann::ordered_json::array();
    for (const auto& m : p.members) {
      members.push_back({{"hardwareClass", m.hardware_class},
                         {"replicas", m.replicas},
                         {"maxQuery", m.max_query},
                         {"coefficient", number(m.coefficient)},
                         {"capacityRps", number(m.capacity_rps)}});
    }
    nlohmann::ordered_json pool = {
        {"task", p.task}, {"qosMs", number(p.qos_ms)}, {"members", members}};
    if (!p.spill_class.empty()) pool["spillClass"] = p.spill_class;
    if (p.upper_bound_qps > 0) pool["upperBoundQps"] = number(p.upper_bound_qps);
    out.push_back(std::move(pool));
  }
  return out;
}

std::string PlanToJson(const model::Plan& plan) {
  nlohmann::ordered_json out;
  out["status"] = model::SolveStatusName(plan.report.status);
  out["optimizer"] = plan.report.optimizer;
  out["objective"] = plan.report.objective;
  out["solveMs"] = plan.report.solve_ms;
  out["tasks"] = nlohmann::ordered_json::array();
  const bool loki = plan.phase != model::Phase::kNone;
  for (const auto& t : plan.tasks) {
    nlohmann::ordered_json task = {
        {"task", t.task},         {"variant", t.variant},      {"hardwareClass", t.hardware_class},
        {"replicas", t.replicas}, {"batchSize", t.batch_size}, {"latencyMs", t.latency_ms},
        {"queueMs", t.queue_ms}};
    if (loki) {
      task["loadRps"] = t.load_rps;
      task["budgetMs"] = t.budget_ms;
    }
    out["tasks"].push_back(std::move(task));
  }
  out["paths"] = nlohmann::ordered_json::array();
  for (const auto& p : plan.paths) {
    out["paths"].push_back(
        {{"name", p.name}, {"sloMs", p.slo_ms}, {"predictedLatencyMs", p.predicted_latency_ms}});
  }
  if (loki) {
    out["phase"] = model::PhaseName(plan.phase);
    out["accuracy"] = plan.accuracy;
    out["servedFraction"] = plan.served_fraction;
    out["variantPaths"] = nlohmann::ordered_json::array();
    for (const auto& v : plan.variant_paths) {
      out["variantPaths"].push_back({{"path", v.path},
                                     {"variants", v.variants},
                                     {"share", v.share},
                                     {"accuracy", v.accuracy},
                                     {"latencyMs", v.latency_ms}});
    }
    out["routing"] = RoutingToJson(plan);
    out["backups"] = nlohmann::ordered_json::array();
    for (const auto& b : plan.backups) {
      out["backups"].push_back(
          {{"task", b.task}, {"variant", b.variant}, {"spareRps", b.spare_rps}});
    }
  }
  if (!plan.pools.empty()) {
    out["costPerHour"] = plan.cost_per_hour;
    out["servedFraction"] = plan.served_fraction;
    if (plan.report.optimizer == "kairos") out["upperBoundQps"] = plan.upper_bound_qps;
    if (!plan.forecast_rps.empty()) {
      out["forecast"] = {{"stepSeconds", plan.forecast_step_seconds}, {"rps", plan.forecast_rps}};
    }
    out["pools"] = PoolsToJson(plan);
  }
  out["notes"] = plan.report.notes;
  return out.dump(2) + "\n";
}

std::string PlanToTable(const model::Plan& plan) {
  std::string out;
  out += StrFormat("optimizer %s: %s, %d replicas, solved in %.2f ms\n\n",
                   plan.report.optimizer.c_str(), model::SolveStatusName(plan.report.status),
                   plan.TotalReplicas(), plan.report.solve_ms);
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
  if (plan.phase != model::Phase::kNone) {
    out += StrFormat("\nphase %s, accuracy %.4f, serving %.1f%% of the demand\n",
                     model::PhaseName(plan.phase), plan.accuracy, 100 * plan.served_fraction);
    for (const auto& v : plan.variant_paths) {
      std::string variants;
      for (const auto& name : v.variants) variants += (variants.empty() ? "" : " > ") + name;
      out += StrFormat("  %-16s %5.1f%%  accuracy %.3f  %6.1f ms  %s\n", v.path.c_str(),
                       100 * v.share, v.accuracy, v.latency_ms, variants.c_str());
    }
  }
  if (!plan.pools.empty()) {
    out += StrFormat("\ncost $%.3f/h", plan.cost_per_hour);
    if (plan.report.optimizer == "kairos") {
      out += StrFormat(", upper bound %.1f qps", plan.upper_bound_qps);
    }
    if (plan.served_fraction < 1) {
      out += StrFormat(", covering %.1f%% of the demand", 100 * plan.served_fraction);
    }
    out += "\n";
    if (!plan.forecast_rps.empty()) {
      out += StrFormat("forecast (rps, every %.0f s from now):", plan.forecast_step_seconds);
      for (double r : plan.forecast_rps) out += StrFormat(" %.1f", r);
      out += "\n";
    }
  }
  for (const auto& n : plan.report.notes) out += "note: " + n + "\n";
  return out;
}

}  // namespace pipescale::api

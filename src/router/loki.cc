#include "router/loki.h"

#include <algorithm>

namespace pipescale::router {
namespace {

std::string Key(const std::string& task, const std::string& variant) {
  return task + "/" + variant;
}

}  // namespace

LokiTables::LokiTables(const model::AccuracyScalingPlan& plan, const model::Pipeline& pipeline)
    : budgets_(plan.drop_budget_ms) {
  for (const model::RoutingTable& t : plan.routing) {
    auto& cumulative = routes_[{t.path, t.task, t.from_variant}];
    double total = 0;
    for (const auto& [variant, fraction] : t.to) {
      total += fraction;
      cumulative.emplace_back(variant, total);
    }
    // Fractions rounded in the ConfigMap may not add up to 1: scale them so they do.
    for (auto& entry : cumulative) entry.second = total > 0 ? entry.second / total : 1;
  }
  for (const auto& [key, table] : routes_) {
    any_path_.emplace(std::pair{std::get<1>(key), std::get<2>(key)}, &table);
  }
  const auto accuracy = [&](const std::string& task, const std::string& variant) {
    const int i = pipeline.TaskIndex(task);
    const model::Variant* v = i < 0 ? nullptr : pipeline.spec.tasks[i].FindVariant(variant);
    return v == nullptr ? 0.0 : v->accuracy;
  };
  for (const model::BackupWorker& b : plan.backups) {
    if (b.spare_rps > 0) backups_[b.task].push_back(b.variant);
  }
  for (auto& entry : backups_) {
    const std::string& task = entry.first;
    std::stable_sort(entry.second.begin(), entry.second.end(), [&](const auto& a, const auto& b) {
      return accuracy(task, a) > accuracy(task, b);
    });
  }
}

std::string LokiTables::Route(const std::string& path, const std::string& task,
                              const std::string& from, double u) const {
  const std::vector<std::pair<std::string, double>>* table = nullptr;
  if (path.empty()) {
    auto it = any_path_.find({task, from});
    if (it != any_path_.end()) table = it->second;
  } else if (auto it = routes_.find({path, task, from}); it != routes_.end()) {
    table = &it->second;
  }
  if (table == nullptr || table->empty()) return "";
  for (const auto& [variant, upto] : *table) {
    if (u < upto) return variant;
  }
  return table->back().first;
}

double LokiTables::BudgetMs(const std::string& task, const std::string& variant) const {
  auto it = budgets_.find(Key(task, variant));
  return it == budgets_.end() ? -1 : it->second;
}

const std::vector<std::string>& LokiTables::Backups(const std::string& task) const {
  static const std::vector<std::string> kNone;
  auto it = backups_.find(task);
  return it == backups_.end() ? kNone : it->second;
}

std::optional<DropPolicy> ParseDropPolicy(std::string_view name) {
  for (const auto& [policy, n] : kDropPolicyNames) {
    if (name == n) return policy;
  }
  return std::nullopt;
}

Verdict Decide(const LokiTables& tables, DropPolicy policy, const std::string& next,
               const std::string& planned, double spent_ms, double budget_ms, double remaining_ms,
               bool last) {
  using Kind = Verdict::Kind;
  Verdict go{Kind::kGo, planned, ""};
  const double next_ms = tables.BudgetMs(next, planned);
  // The last task cannot finish in what is left; or the task before overran its budget.
  const bool too_late_for_last = last && next_ms >= 0 && remaining_ms < next_ms;
  const double overrun = budget_ms >= 0 ? spent_ms - budget_ms : 0;
  switch (policy) {
    case DropPolicy::kNone:
      return go;
    case DropPolicy::kLastTask:
      return too_late_for_last ? Verdict{Kind::kDrop, "", kLastTask} : go;
    case DropPolicy::kPerTask:
      if (overrun > 0) return {Kind::kDrop, "", kPerTaskBudget};
      return too_late_for_last ? Verdict{Kind::kDrop, "", kLastTask} : go;
    case DropPolicy::kReroute:
      break;
  }
  if (overrun <= 0 && !too_late_for_last) return go;
  // Opportunistic rerouting: the most accurate backup of the next task fast enough to make up
  // the overrun (its budget at most the planned one's less the overrun) and to finish in time.
  const double allowed =
      std::min(next_ms >= 0 ? next_ms - std::max(0.0, overrun) : remaining_ms, remaining_ms);
  for (const std::string& variant : tables.Backups(next)) {
    const double ms = tables.BudgetMs(next, variant);
    if (variant != planned && ms >= 0 && ms <= allowed) return {Kind::kReroute, variant, "behind"};
  }
  return {Kind::kDrop, "", kNoFasterBackup};
}

}  // namespace pipescale::router

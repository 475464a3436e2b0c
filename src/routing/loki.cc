#include "routing/loki.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace pipescale::routing {
namespace {

constexpr double kUnknown = std::numeric_limits<double>::infinity();

}  // namespace

LokiTables::LokiTables(const model::AccuracyScalingPlan& plan, const model::Pipeline& pipeline) {
  for (const model::VariantRoute& t : plan.routing) {
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
  const auto add = [&](const std::string& task, const std::string& variant) {
    std::vector<std::string>& list = variants_[task];
    if (std::find(list.begin(), list.end(), variant) == list.end()) list.push_back(variant);
  };
  for (const model::VariantRoute& t : plan.routing) {
    for (const auto& entry : t.to) add(t.task, entry.first);
  }
  for (const model::BackupWorker& b : plan.backups) add(b.task, b.variant);
  for (auto& entry : variants_) {
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

const std::vector<std::string>& LokiTables::Variants(const std::string& task) const {
  static const std::vector<std::string> kNone;
  auto it = variants_.find(task);
  return it == variants_.end() ? kNone : it->second;
}

Verdict JudgeLateness(DropPolicy policy, const std::string& planned,
                      std::span<const Option> options, double remaining_ms, bool last) {
  using Kind = Verdict::Kind;
  const auto go = [&] { return Verdict{Kind::kGo, planned, ""}; };
  const auto fits = [&](const Option& o) { return o.predicted_ms <= remaining_ms; };
  const auto it = std::find_if(options.begin(), options.end(),
                               [&](const Option& o) { return o.variant == planned; });
  double planned_ms = kUnknown;
  if (it != options.end()) planned_ms = it->predicted_ms;
  // No Ready pod of the planned variant: not known to be late.
  const bool late = std::isfinite(planned_ms) && planned_ms > remaining_ms;
  switch (policy) {
    case DropPolicy::kNone:
      return go();
    case DropPolicy::kLastTask:
      return last && late ? Verdict{Kind::kDrop, "", kLastTask} : go();
    case DropPolicy::kPerTask:
      return late ? Verdict{Kind::kDrop, "", kPerTaskBudget} : go();
    case DropPolicy::kReroute:
      break;
  }
  if (planned_ms <= remaining_ms) return go();
  const auto in_time = std::find_if(options.begin(), options.end(), fits);
  if (in_time != options.end()) return {Kind::kReroute, in_time->variant, ""};
  return late ? Verdict{Kind::kDrop, "", kNoFasterBackup} : go();
}

}  // namespace pipescale::routing

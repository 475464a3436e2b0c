// Loki's half in the request path (its section 5): MostAccurateFirst routing by the plan's
// tables, and what happens to a request that falls behind: per-task or last-task dropping, or
// opportunistic rerouting to a faster backup. Pure functions of the plan and the request.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "model/pipeline.h"
#include "model/plan.h"

namespace pipescale::router {

// The paper's ablation (its Fig. 7), weakest first; the router runs kReroute unless told.
enum class DropPolicy { kNone, kLastTask, kPerTask, kReroute };
// "none", "last-task", "per-task", "reroute": spec.router.dropPolicy and --drop-policy.
inline constexpr std::pair<DropPolicy, const char*> kDropPolicyNames[] = {
    {DropPolicy::kNone, "none"},
    {DropPolicy::kLastTask, "last-task"},
    {DropPolicy::kPerTask, "per-task"},
    {DropPolicy::kReroute, "reroute"}};
std::optional<DropPolicy> ParseDropPolicy(std::string_view name);

class LokiTables {
 public:
  LokiTables(const model::AccuracyScalingPlan& plan, const model::Pipeline& pipeline);

  // The variant of `task` a request gets, which came from `from` (the variant that served it
  // at the task before, "" at the first task), by the table of (path, task, from); `u` is
  // uniform in [0, 1). With no path named (the models decide), the table of the first path
  // that has one for (task, from). "" when the plan has none: any Ready pod of the task serves.
  std::string Route(const std::string& path, const std::string& task, const std::string& from,
                    double u) const;

  // The budget of `task` served by `variant` (ms), or -1 when the plan sets none.
  double BudgetMs(const std::string& task, const std::string& variant) const;

  // Variants of `task` with capacity left, most accurate first.
  const std::vector<std::string>& Backups(const std::string& task) const;

 private:
  // (path, task, from) -> (variant, cumulative fraction), most accurate first.
  std::map<std::tuple<std::string, std::string, std::string>,
           std::vector<std::pair<std::string, double>>>
      routes_;
  std::map<std::pair<std::string, std::string>, const std::vector<std::pair<std::string, double>>*>
      any_path_;                           // (task, from) -> the first path's table
  std::map<std::string, double> budgets_;  // "task/variant" -> ms
  std::map<std::string, std::vector<std::string>> backups_;  // task -> variants
};

// Why a request was dropped, as the router's drop counter names it.
inline constexpr const char* kPerTaskBudget = "per-task budget";
inline constexpr const char* kLastTask = "last task";
inline constexpr const char* kNoFasterBackup = "no faster backup";
inline constexpr const char* kDropReasons[] = {kPerTaskBudget, kLastTask, kNoFasterBackup};

// What becomes of a request about to be sent to `next` (planned: `planned`, "" for any), having
// spent `spent_ms` at the task before, whose budget is `budget_ms` (-1: none), with
// `remaining_ms` left before its deadline; `last` when `next` is the path's last task.
struct Verdict {
  enum class Kind { kGo, kReroute, kDrop };
  Kind kind = Kind::kGo;
  std::string variant;  // kGo: the planned one; kReroute: the backup chosen
  std::string reason;   // kDrop and kReroute: "per-task budget", "last task", "no faster backup"
  bool operator==(const Verdict&) const = default;
};
Verdict Decide(const LokiTables& tables, DropPolicy policy, const std::string& next,
               const std::string& planned, double spent_ms, double budget_ms, double remaining_ms,
               bool last);

}  // namespace pipescale::router

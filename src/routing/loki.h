// Loki's half in the request path (its section 5): MostAccurateFirst routing by the plan's
// tables, and what happens to a request that would fall behind: per-task or last-task dropping,
// or opportunistic rerouting to a variant that still makes it. Pure functions of the plan, the
// request and the queues it would meet.
#pragma once

#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "model/pipeline.h"
#include "model/plan.h"

namespace pipescale::routing {

// The policies are named in the model, where the spec that chooses one is validated.
using model::DropPolicy;
using model::ParseDropPolicy;

class LokiTables {
 public:
  LokiTables(const model::AccuracyScalingPlan& plan, const model::Pipeline& pipeline);

  // The variant of `task` a request gets, which came from `from` (the variant that served it
  // at the task before, "" at the first task), by the table of (path, task, from); `u` is
  // uniform in [0, 1). With no path named (the models decide), the table of the first path
  // that has one for (task, from). "" when the plan has none: any Ready pod of the task serves.
  std::string Route(const std::string& path, const std::string& task, const std::string& from,
                    double u) const;

  // The variants the plan runs for `task`, most accurate first: where a request may be
  // rerouted.
  const std::vector<std::string>& Variants(const std::string& task) const;

 private:
  // (path, task, from) -> (variant, cumulative fraction), most accurate first.
  std::map<std::tuple<std::string, std::string, std::string>,
           std::vector<std::pair<std::string, double>>>
      routes_;
  std::map<std::pair<std::string, std::string>, const std::vector<std::pair<std::string, double>>*>
      any_path_;  // (task, from) -> the first path's table
  std::map<std::string, std::vector<std::string>> variants_;  // task -> most accurate first
};

// Why a request was dropped, as the router's drop counter names it.
inline constexpr const char* kPerTaskBudget = "per-task budget";
inline constexpr const char* kLastTask = "last task";
inline constexpr const char* kNoFasterBackup = "no faster backup";
inline constexpr const char* kDropReasons[] = {kPerTaskBudget, kLastTask, kNoFasterBackup};

// One variant the next task could serve a request with, as the request would find it now: how
// long it would take there and at the tasks after it on its path (at each, the least loaded
// pod's work ahead and batch: routing/admission.h); infinite when the variant has no Ready pod.
struct Option {
  std::string variant;
  double predicted_ms = 0;
};

struct Verdict {
  enum class Kind { kGo, kReroute, kDrop };
  Kind kind = Kind::kGo;
  std::string variant;  // kGo: the planned one; kReroute: the one chosen
  std::string reason;   // kDrop: "per-task budget", "last task", "no faster backup"
  bool operator==(const Verdict&) const = default;
};

// What becomes of a request about to be sent to the next task with `remaining_ms` left before
// its deadline: `planned` is the table's variant, `options` the task's variants most accurate
// first (the planned one among them), `last` whether the task is the path's last. A task's
// budget is the path's slack: what is left of the SLO less what the tasks downstream are
// predicted to need at their current queues (not the plan's fixed 2 d(b)).
//  - none: it goes as planned;
//  - last-task: dropped before the last task when the planned variant would answer late;
//  - per-task: dropped before any task when the planned variant and the tasks after it would;
//  - reroute: sent instead to the most accurate variant that would answer in time, so demand
//    past a variant's capacity spills to the next one rather than queueing behind it; dropped
//    when none would.
// A planned variant with no Ready pod (starting up) is not known to be late: the request goes.
Verdict JudgeLateness(DropPolicy policy, const std::string& planned,
                      std::span<const Option> options, double remaining_ms, bool last);

}  // namespace pipescale::routing

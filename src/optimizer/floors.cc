#include "optimizer/floors.h"

#include <algorithm>
#include <cstdio>

#include "common/strings.h"
#include "model/limits.h"

namespace pipescale::optimizer {

namespace {

// A Kairos or MArk pool's member of `task` on `hardware_class`, or nullptr.
model::PoolMember* PoolMemberOf(model::Plan& plan, const std::string& task,
                                const std::string& hardware_class) {
  model::PoolPlan* pools = plan.pools();
  if (pools == nullptr) return nullptr;
  for (model::Pool& pool : pools->pools) {
    if (pool.task != task) continue;
    for (model::PoolMember& m : pool.members) {
      if (m.hardware_class == hardware_class) return &m;
    }
  }
  return nullptr;
}

// The note on the tasks without a floor that the plan runs on one replica; "" when none does.
std::string SingleReplicasNote(const model::Pipeline& pipeline, const model::Plan& plan) {
  if (pipeline.spec.scale_to_zero) return "";  // cold starts accepted
  std::string names;
  double price = 0, startup = 0;
  for (const model::Task& task : pipeline.spec.tasks) {
    if (task.min_replicas > 0) continue;
    int runs = 0;
    const model::HardwareClass* hw = nullptr;
    for (const model::TaskPlan& t : plan.tasks) {
      if (t.task != task.name || t.replicas <= 0) continue;
      runs += t.replicas;
      const int index = pipeline.HardwareClassIndex(t.hardware_class);
      if (index >= 0) hw = &pipeline.spec.hardware_classes[index];
    }
    if (runs != 1 || hw == nullptr) continue;
    (names += names.empty() ? "" : ", ") += task.name;
    price += hw->cost_per_hour;
    startup = std::max(startup, hw->startup_seconds);
  }
  if (names.empty()) return "";
  const std::string start_up =
      startup > 0 ? StrFormat("its start-up (up to %gs)", startup) : "its start-up";
  return StrFormat(
      "one replica: %s run one replica each: a restart of one of their pods holds its task's "
      "requests at the door for %s, and a pod killed loses what it held; "
      "spec.tasks[].minReplicas: 2 keeps one serving (+$%.3f/h in all)",
      names.c_str(), start_up.c_str(), price);
}

}  // namespace

void ApplyReplicaFloors(const model::Pipeline& pipeline, model::Plan& plan) {
  for (const model::Task& task : pipeline.spec.tasks) {
    if (task.min_replicas <= 0) continue;
    int runs = 0;
    model::TaskPlan* largest = nullptr;
    for (model::TaskPlan& t : plan.tasks) {
      if (t.task != task.name) continue;
      runs += t.replicas;
      if (largest == nullptr || t.replicas > largest->replicas) largest = &t;
    }
    if (largest == nullptr || runs >= task.min_replicas) continue;
    const int index = pipeline.HardwareClassIndex(largest->hardware_class);
    if (index < 0) continue;
    const model::HardwareClass& hw = pipeline.spec.hardware_classes[index];
    const int room = hw.max_replicas.value_or(limits::kMaxReplicas) - largest->replicas;
    const int added = std::min(task.min_replicas - runs, std::max(room, 0));
    largest->replicas += added;
    if (model::PoolMember* m = PoolMemberOf(plan, task.name, hw.name)) m->replicas += added;
    plan.cost_per_hour += added * hw.cost_per_hour;
    plan.floor_cost_per_hour += added * hw.cost_per_hour;
    char note[256];
    std::snprintf(note, sizeof note,
                  "minReplicas: %s runs %d replicas where the plan needs %d (+$%.3f/h)%s",
                  task.name.c_str(), runs + added, runs, added * hw.cost_per_hour,
                  runs + added < task.min_replicas ? "; its class has no room for more" : "");
    plan.report.notes.emplace_back(note);
  }
  const std::string single = SingleReplicasNote(pipeline, plan);
  if (!single.empty() && std::ranges::find(plan.report.notes, single) == plan.report.notes.end()) {
    plan.report.notes.push_back(single);
  }
}

}  // namespace pipescale::optimizer

#include "optimizer/floors.h"

#include <algorithm>
#include <cstdio>

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
}

}  // namespace pipescale::optimizer

#include "routing/loads.h"

namespace pipescale::routing {

void TaskNowAt(const TaskLoads& loads, int task, int variant, int rows, TaskNow& now) {
  if (const std::optional<double> ms = loads.MatchedMs(task, rows)) {
    now = MatchedTaskNow(*ms);
    return;
  }
  now.pods.clear();
  const int count = loads.PodCount(task);
  for (int i = 0; i < count; ++i) {
    const PodLoad pod = loads.Pod(task, i);
    if (variant < 0 || pod.variant == variant) {
      now.pods.push_back({pod.outstanding, pod.batch, pod.batch_ms});
    }
  }
  now.fill_ms = loads.FillMs(task, variant);
}

std::span<const TaskNow> TasksNow(const TaskLoads& loads, std::span<const int> tasks, int rows,
                                  std::vector<TaskNow>& out) {
  if (out.size() < tasks.size()) out.resize(tasks.size());
  for (size_t i = 0; i < tasks.size(); ++i) TaskNowAt(loads, tasks[i], -1, rows, out[i]);
  return {out.data(), tasks.size()};
}

}  // namespace pipescale::routing

#include "routing/admission.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace pipescale::routing {

TaskNow MatchedTaskNow(double predicted_ms) {
  return {.pods = {MainReplica{.outstanding = 0, .batch = 1, .batch_ms = predicted_ms}}};
}

double WorkAheadMs(const MainReplica& pod) {
  const int batch = std::max(1, pod.batch);
  return std::ceil(static_cast<double>(pod.outstanding) / batch) * pod.batch_ms;
}

double PredictedMs(std::span<const TaskNow> tasks) {
  double total = 0;
  for (const TaskNow& task : tasks) {
    double least = std::numeric_limits<double>::infinity();
    for (const MainReplica& pod : task.pods) {
      least = std::min(least, WorkAheadMs(pod) + pod.batch_ms);
    }
    total += task.fill_ms + least;
  }
  return total;
}

double AdmitShare(model::Priority priority) {
  switch (priority) {
    case model::Priority::kCritical:
      return std::numeric_limits<double>::infinity();
    case model::Priority::kStandard:
      return 1;
    case model::Priority::kSheddable:
      return 0.5;
  }
  return 1;
}

Door Admit(std::span<const TaskNow> tasks, double budget_ms) {
  if (std::any_of(tasks.begin(), tasks.end(), [](const TaskNow& t) { return t.pods.empty(); })) {
    return Door::kWaitForPods;
  }
  return PredictedMs(tasks) <= budget_ms ? Door::kAdmit : Door::kRefuse;
}

}  // namespace pipescale::routing

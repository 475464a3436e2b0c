#include "model/status.h"

namespace pipescale::model {

const TaskPlan* AppliedPlan::Find(const std::string& deployment) const {
  for (size_t i = 0; i < plan.tasks.size() && i < deployments.size(); ++i) {
    if (deployments[i] == deployment) return &plan.tasks[i];
  }
  return nullptr;
}

}  // namespace pipescale::model

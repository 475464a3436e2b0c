// One Deployment of a plan as the reconciler's steps see it: where the task runs, what the plan
// asks, what runs now, and the replicas the steps settle on; and the pipeline's Deployments as
// they were read.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "api/deployment_view.h"
#include "model/pipeline.h"

namespace pipescale::reconciler {

using Deployments = std::map<std::string, api::DeploymentView>;  // the pipeline's, by name

struct PlannedDeployment {
  const model::Task* task = nullptr;
  const model::Variant* variant = nullptr;
  const model::HardwareClass* hardware_class = nullptr;
  std::string name;                 // the Deployment's
  int planned = 0;                  // replicas the plan asks for
  int target = 0;                   // after stabilization and the budget guard
  int batch_size = 1;               // the plan's
  model::ServerQueue server_queue;  // the plan's
  std::optional<int> current;       // spec.replicas now; nullopt while it does not exist
  int running = 0;                  // pods still running or asked for: max(spec, status replicas)
};

}  // namespace pipescale::reconciler

// FA2 changes a batch size only together with the replicas, or when the running batch no
// longer meets the SLOs: every batch change restarts a Deployment's pods, and noise in the
// measured rate would otherwise flip between plans of equal replicas at every interval.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "model/pipeline.h"
#include "model/plan.h"

namespace pipescale::reconciler {

// Puts back the batch sizes the operator applied (`applied`, the status's plan) into `plan`
// when every Deployment still runs them at the plan's replicas and they meet every SLO at the
// workload. A batch changed by hand is not the operator's and is not kept.
void HoldAppliedBatches(const model::Pipeline& pipeline, const model::Workload& workload,
                        const nlohmann::json& applied,
                        const std::map<std::string, nlohmann::json>& deployments,
                        model::Plan& plan);

}  // namespace pipescale::reconciler

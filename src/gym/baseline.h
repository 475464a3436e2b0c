// The baselines as `pipescale simulate` names and deploys them: HPA, KEDA, KPA or a fixed count
// of replicas per task, each on the deployment an engineer makes without pipescale
// (optimizer/baseline_deployment.h), with the knobs a user turns in the policy's name.
#pragma once

#include <string>

#include "common/result.h"
#include "optimizer/baseline_deployment.h"

namespace pipescale::gym {

namespace engine {
class World;
}

// BASE[@CLASS][:KNOB=V[,KNOB=V]][+door], BASE one of hpa, keda, kpa, fixed-N; knobs target
// (0.05-1: HPA's averageUtilization, KEDA's rate per replica as a share of what one serves, KPA's
// target utilisation) and batch (the servers' max batch, 1-4096). +door puts pipescale's router
// admission in front, which the baselines otherwise run without.
inline constexpr const char* kBaselinePolicies =
    "hpa, keda, kpa, fixed:N (each [@CLASS][:target=SHARE][:batch=N][+door])";

struct BaselinePolicy {
  enum class Kind { kHpa, kKeda, kKpa, kFixed };
  Kind kind = Kind::kHpa;
  int fixed = 0;  // replicas per task, for kFixed
  optimizer::BaselineKnobs knobs;
  bool door = false;
};

// kInvalid names what is wrong.
Result<BaselinePolicy> ParseBaseline(const std::string& policy);

// The policy's name with its knobs as given: what a report and --tune print.
std::string BaselineName(const BaselinePolicy& policy);

// Deploys the baseline into `world` (its Deployments, servers, floor and autoscaler), the
// knobs' call overhead taken from the world's options. kInvalid when the class asked for is none
// of the pipeline's.
Status SetUpBaseline(engine::World& world, BaselinePolicy policy);

}  // namespace pipescale::gym

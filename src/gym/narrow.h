// The papers' comparison points that are an optimizer run on a narrower spec: what the operator
// would do had the user declared only part of the pipeline (one hardware class, the most accurate
// variants, no forecast). The operator's loop runs them like any optimizer.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "common/result.h"

namespace pipescale::gym {

// The named narrowings, for usage and error messages.
inline constexpr const char* kNarrowedPolicies =
    "loki-hardware-only, mark-reactive, OPTIMIZER@CLASS, operator-hpa, always-warm";

// The operator's `hpa` optimizer (spec.optimizer: hpa, what the cluster in a box runs) by the
// name the simulator gives it: `hpa` alone is the HorizontalPodAutoscaler controller's port, a
// baseline (gym/baseline.h). Both run the one baseline deployment; their control loops differ.
inline constexpr const char* kOperatorHpa = "operator-hpa";

// The policy name that runs `optimizer`, the spec's: its own, or kOperatorHpa for `hpa`, so a
// report never holds two rows of one name.
std::string PolicyOf(const std::string& optimizer);

// Narrows `object` (an InferencePipeline) for `policy` and returns the optimizer to run:
// - loki-hardware-only: Loki with each task's most accurate variant only (hardware scaling);
// - mark-reactive: MArk provisioning for the load it measures now, no forecast;
// - OPTIMIZER@CLASS: the optimizer with one hardware class, every other class and its profiles
//   removed (a homogeneous pool, Kairos's comparison point);
// - operator-hpa: hpa, `object` unchanged;
// - anything else: `policy` itself, `object` unchanged.
// kInvalid when CLASS is not a class of the pipeline or leaves a task without a variant.
Result<std::string> Narrow(const std::string& policy, nlohmann::json& object);

}  // namespace pipescale::gym

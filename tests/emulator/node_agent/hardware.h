// The emulated hardware and model: how fast a model runs on the node is a property of the node,
// and what a detector finds a property of its input, so the node agent gives an emulated model
// server the latency profile, start-up time, multiplicative factor and edges that its pipeline
// declares for the pod's variant on the pod's hardware class.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace pipescale::emulator {

// PIPESCALE_LATENCY_MS ("a,b,c"), PIPESCALE_STARTUP_SECONDS, PIPESCALE_MULTIPLICATIVE_FACTOR
// and PIPESCALE_NEXT ("task=ratio,...") for a pod labelled
// pipescale.io/{pipeline,task,variant,hardware-class}, from its InferencePipeline; empty when
// the pod is not a pipeline's or the pipeline does not say.
std::map<std::string, std::string> EmulatedHardware(const nlohmann::json& pod,
                                                    const std::optional<nlohmann::json>& pipeline);

}  // namespace pipescale::emulator

#include "node_agent/hardware.h"

#include "api/pipeline_parse.h"
#include "optimizer/fit.h"

namespace pipescale::emulator {

std::map<std::string, std::string> EmulatedHardware(const nlohmann::json& pod,
                                                    const std::optional<nlohmann::json>& object) {
  if (!object) return {};
  const nlohmann::json labels = pod["metadata"].value("labels", nlohmann::json::object());
  auto parsed = api::ParsePipeline(object->dump());
  if (!parsed.pipeline) return {};
  const model::Pipeline& p = *parsed.pipeline;
  const int ti = p.TaskIndex(labels.value("pipescale.io/task", ""));
  const std::string hw = labels.value("pipescale.io/hardware-class", "");
  const int hi = p.HardwareClassIndex(hw);
  if (ti < 0 || hi < 0) return {};
  for (const auto& v : p.spec.tasks[ti].variants) {
    if (v.name != labels.value("pipescale.io/variant", "")) continue;
    const model::Profile* profile = v.FindProfile(hw);
    if (profile == nullptr) return {};
    model::QuadraticLatency q = profile->latency.quadratic;
    if (profile->latency.kind == model::LatencyProfile::Kind::kTable) {
      auto fit = optimizer::FitQuadratic(profile->latency.points);
      q = fit ? fit->coefficients
              : model::QuadraticLatency{0, 0, profile->latency.points.front().ms};
    }
    std::string next;
    for (const model::Edge& e : p.spec.tasks[ti].next) {
      next += (next.empty() ? "" : ",") + e.task + "=" + std::to_string(e.ratio);
    }
    return {
        {"PIPESCALE_LATENCY_MS",
         std::to_string(q.a) + "," + std::to_string(q.b) + "," + std::to_string(q.c)},
        {"PIPESCALE_STARTUP_SECONDS", std::to_string(p.spec.hardware_classes[hi].startup_seconds)},
        {"PIPESCALE_MULTIPLICATIVE_FACTOR", std::to_string(v.multiplicative_factor)},
        {"PIPESCALE_NEXT", next}};
  }
  return {};
}

}  // namespace pipescale::emulator

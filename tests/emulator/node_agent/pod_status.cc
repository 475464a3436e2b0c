#include "node_agent/pod_status.h"

#include <algorithm>
#include <ctime>

#include "common/time.h"

namespace pipescale::emulator {
namespace {

using nlohmann::json;
using State = ContainerView::State;

json Condition(const std::string& type, bool status, const json& old_status,
               const std::string& reason = "") {
  std::string transition = Rfc3339Now();
  // Keep the transition time while the status stays the same, as a kubelet does.
  for (const json& c : old_status.value("conditions", json::array())) {
    if (c.value("type", "") == type && c.value("status", "") == (status ? "True" : "False")) {
      transition = c.value("lastTransitionTime", transition);
    }
  }
  json condition = {{"type", type},
                    {"status", status ? "True" : "False"},
                    {"lastProbeTime", nullptr},
                    {"lastTransitionTime", transition}};
  if (!reason.empty()) condition["reason"] = reason;
  return condition;
}

json ContainerStatus(const ContainerView& c) {
  json state;
  switch (c.state) {
    case State::kWaiting:
      state["waiting"] = {{"reason", c.reason}};
      if (!c.message.empty()) state["waiting"]["message"] = c.message;
      break;
    case State::kRunning:
      state["running"] = {{"startedAt", c.started_at}};
      break;
    case State::kTerminated:
      state["terminated"] = {{"exitCode", c.exit_code},
                             {"reason", c.reason},
                             {"startedAt", c.started_at},
                             {"finishedAt", c.finished_at}};
      break;
  }
  return {
      {"name", c.name},
      {"image", c.image},
      {"imageID", c.state == State::kWaiting && c.started_at.empty() ? "" : "local://" + c.image},
      {"ready", c.ready},
      {"started", c.state == State::kRunning},
      {"restartCount", c.restarts},
      {"state", state}};
}

bool Final(const ContainerView& c, const std::string& policy) {
  if (c.state != State::kTerminated) return false;
  return policy == "Never" || (policy == "OnFailure" && c.exit_code == 0);
}

}  // namespace

std::string Rfc3339Now() { return FormatRfc3339(static_cast<double>(std::time(nullptr))); }

std::string PodPhase(const PodView& pod) {
  const auto& cs = pod.containers;
  if (cs.empty()) return "Pending";
  const bool all_final = std::all_of(
      cs.begin(), cs.end(), [&](const ContainerView& c) { return Final(c, pod.restart_policy); });
  if (all_final) {
    const bool all_zero =
        std::all_of(cs.begin(), cs.end(), [](const ContainerView& c) { return c.exit_code == 0; });
    return all_zero ? "Succeeded" : "Failed";
  }
  const bool all_started = std::all_of(cs.begin(), cs.end(), [](const ContainerView& c) {
    return c.state != State::kWaiting || !c.started_at.empty();
  });
  return all_started ? "Running" : "Pending";
}

json PodStatus(const PodView& pod, const json& old_status) {
  const bool ready =
      !pod.containers.empty() && std::all_of(pod.containers.begin(), pod.containers.end(),
                                             [](const ContainerView& c) { return c.ready; });
  json containers = json::array();
  for (const ContainerView& c : pod.containers) containers.push_back(ContainerStatus(c));
  const std::string not_ready = ready ? "" : "ContainersNotReady";
  json status = {
      {"phase", PodPhase(pod)},
      {"hostIP", pod.host_ip},
      {"startTime", pod.start_time},
      {"conditions", json::array({Condition("Initialized", true, old_status),
                                  Condition("Ready", ready, old_status, not_ready),
                                  Condition("ContainersReady", ready, old_status, not_ready),
                                  Condition("PodScheduled", true, old_status)})},
      {"containerStatuses", containers},
      {"qosClass", old_status.value("qosClass", "BestEffort")}};
  if (!pod.pod_ip.empty()) {
    status["podIP"] = pod.pod_ip;
    status["podIPs"] = json::array({{{"ip", pod.pod_ip}}});
  }
  return status;
}

}  // namespace pipescale::emulator

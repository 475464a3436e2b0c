// What the node agent reports for a pod: the status a kubelet writes (phase, IPs, conditions,
// container states), computed from what it knows of each container. Pure, so it is tested
// apart from processes.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace pipescale::emulator {

struct ContainerView {
  std::string name, image;
  enum class State { kWaiting, kRunning, kTerminated } state = State::kWaiting;
  std::string reason, message;  // waiting or terminated
  int exit_code = 0;
  std::string started_at, finished_at;  // RFC 3339
  bool ready = false;
  int restarts = 0;
};

struct PodView {
  std::string pod_ip, host_ip = "127.0.0.1", start_time;
  std::string restart_policy = "Always";
  std::vector<ContainerView> containers;
};

// Pending until every container has started; Running while one runs or will restart;
// Succeeded or Failed once all have terminated for good (restartPolicy Never or OnFailure).
std::string PodPhase(const PodView& pod);

// The status object for PATCH pods/NAME/status (a JSON merge patch body's "status").
nlohmann::json PodStatus(const PodView& pod, const nlohmann::json& old_status);

// RFC 3339 UTC, as the API writes times.
std::string Rfc3339Now();

}  // namespace pipescale::emulator

// The kubelet's readiness probes for local processes: httpGet (a 2xx or 3xx answer) and
// tcpSocket (a connection), against the pod's own address, with a short timeout.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

namespace pipescale::emulator {

// Runs `probe` (a container's readinessProbe) against `pod_ip`; `container` resolves named
// ports. False when it fails or the probe kind is not one of these two.
bool RunProbe(const nlohmann::json& probe, const nlohmann::json& container,
              const std::string& pod_ip, std::chrono::milliseconds timeout);

// A port by number or by the name of one of the container's ports; 0 when unknown.
int ResolvePort(const nlohmann::json& port, const nlohmann::json& container);

}  // namespace pipescale::emulator

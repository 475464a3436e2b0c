// A pod ejected for a call it left unanswered comes back into picks only once it answers its
// model's readiness endpoint: a probe, not a client's call, finds out whether a hung pod (a frozen
// node, a stalled process) has come back, so no request pays half its budget to learn it again.
#pragma once

#include <memory>
#include <string>

#include "asio.h"
#include "routing_table.h"
#include "upstream.h"

namespace pipescale::router {

// A model pod's readiness endpoint for `task` (the Open Inference Protocol's model ready), which
// the router's own probes ask: an ejected pod's and a starting one's (starting.h).
inline std::string ModelReadyTarget(const std::string& task) {
  return "/v2/models/" + task + "/ready";
}

// How long a probe waits for the pod's answer: a live pod's readiness endpoint answers at once,
// whatever its queue (model servers serve it apart from inference).
inline constexpr double kProbeTimeoutMs = 1000;

// Probes `address`'s `ready_target` each time its ejection ends (`at_once`: first without
// waiting), keeping it ejected (and the next ejection longer, routing::EjectMs) until it answers
// 200; then it is back in picks. Ends then, or once no Endpoint holds the ejection (the pod left
// the table). Run one per ejection (Ejection::StartProbe).
asio::awaitable<void> ProbeUntilReady(std::weak_ptr<Ejection> ejection, std::string address,
                                      std::string ready_target, UpstreamPool& pool,
                                      bool at_once = false);

}  // namespace pipescale::router

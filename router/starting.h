// Pods started and not yet Ready, which the router probes itself: one that answers its model's
// readiness endpoint takes calls at once, rather than after the kubelet's next probe (up to its
// period later; a whole period where a start-up ends just after a probe) and the Ready status's
// way through the apiserver to this router's watch. A request held for a wake or a restart
// waits for the first pod that can answer it, as Knative's activator probes a revision's pods.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "asio.h"
#include "routing/endpoints.h"
#include "upstream.h"

namespace pipescale::router {

// How often a starting pod is probed: a held request waits at most this past the pod's start-up.
inline constexpr double kStartingProbeMs = 100;

class StartingProbes {
 public:
  // `answered` is called on the probes' own thread each time a pod first answers; Update's
  // result then includes it.
  explicit StartingProbes(std::function<void()> answered);
  ~StartingProbes();
  StartingProbes(const StartingProbes&) = delete;
  StartingProbes& operator=(const StartingProbes&) = delete;

  // The pods starting now, by task (routing::StartingEndpoints): probes each new one until it
  // answers, stops probing those no longer starting (Ready, deleted or gone), and returns those
  // that have answered, to be called as Ready ones are.
  std::map<std::string, std::vector<routing::PodEndpoint>> Update(
      const std::map<std::string, std::vector<routing::PodEndpoint>>& starting);

  // Ends the probes; `answered` is not called after this returns.
  void Stop();

 private:
  struct Probe {
    std::atomic<bool> answered{false};
  };
  asio::awaitable<void> Run(std::weak_ptr<Probe> probe, std::string address, std::string target);

  std::function<void()> answered_;
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  UpstreamPool pool_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<Probe>> probes_;  // by address
  std::thread thread_;
};

}  // namespace pipescale::router

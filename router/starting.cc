#include "starting.h"

#include <chrono>
#include <utility>

#include "common/log.h"
#include "guards.h"
#include "prober.h"

namespace pipescale::router {

StartingProbes::StartingProbes(std::function<void()> answered)
    : answered_(std::move(answered)),
      work_(asio::make_work_guard(io_)),
      pool_(io_.get_executor()),
      thread_([this] { io_.run(); }) {}

StartingProbes::~StartingProbes() { Stop(); }

void StartingProbes::Stop() {
  work_.reset();
  io_.stop();
  if (thread_.joinable()) thread_.join();
}

std::map<std::string, std::vector<routing::PodEndpoint>> StartingProbes::Update(
    const std::map<std::string, std::vector<routing::PodEndpoint>>& starting) {
  std::map<std::string, std::vector<routing::PodEndpoint>> answered;
  std::map<std::string, std::shared_ptr<Probe>> kept;
  std::lock_guard lock(mu_);
  for (const auto& [task, pods] : starting) {
    for (const routing::PodEndpoint& pod : pods) {
      std::shared_ptr<Probe>& probe = kept[pod.address];
      if (const auto it = probes_.find(pod.address); it != probes_.end()) probe = it->second;
      if (!probe) {
        probe = std::make_shared<Probe>();
        asio::co_spawn(io_, Run(probe, pod.address, ModelReadyTarget(task)),
                       ReportThrow{"router-starting-probe"});
      }
      if (probe->answered.load()) answered[task].push_back(pod);
    }
  }
  probes_ = std::move(kept);  // a probe whose pod left ends at its next look
  return answered;
}

asio::awaitable<void> StartingProbes::Run(std::weak_ptr<Probe> probe, std::string address,
                                          std::string target) {
  asio::steady_timer timer(io_.get_executor());
  for (;;) {
    const Result<UpstreamReply> reply = co_await pool_.Get(
        address, target, std::chrono::milliseconds(static_cast<long>(kProbeTimeoutMs)));
    const std::shared_ptr<Probe> held = probe.lock();
    if (!held) co_return;
    if (reply.ok() && reply->status == 200) {
      held->answered.store(true);
      Log("info", "a starting pod answered its readiness probe: calling it before it is Ready",
          {{"address", address}});
      answered_();
      co_return;
    }
    co_await SleepMs(timer, kStartingProbeMs);
  }
}

}  // namespace pipescale::router

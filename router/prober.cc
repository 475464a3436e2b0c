#include "prober.h"

#include <chrono>

#include "clock.h"

namespace pipescale::router {

asio::awaitable<void> ProbeUntilReady(std::weak_ptr<Ejection> ejection, std::string address,
                                      std::string ready_target, UpstreamPool& pool, bool at_once) {
  asio::steady_timer timer(pool.executor());
  for (bool first = true;; first = false) {
    double wait_ms = 0;
    if (const auto held = ejection.lock()) {
      wait_ms = held->until_ms.load(std::memory_order_relaxed) - SteadyNowMs();
      // Out of picks while the probe waits too: its answer, not the clock, lets it back.
      if (wait_ms <= 0) held->Hold(SteadyNowMs() + 2 * kProbeTimeoutMs);
    } else {
      co_return;
    }
    if (wait_ms > 0 && !(first && at_once)) {
      co_await SleepMs(timer, wait_ms);
      continue;
    }
    const Result<UpstreamReply> reply = co_await pool.Get(
        address, ready_target, std::chrono::milliseconds(static_cast<long>(kProbeTimeoutMs)));
    const auto held = ejection.lock();
    if (!held) co_return;
    if (reply.ok() && reply->status == 200) {
      held->Readmit();
      co_return;
    }
    held->Eject(SteadyNowMs());
  }
}

}  // namespace pipescale::router

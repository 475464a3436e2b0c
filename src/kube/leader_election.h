// Leader election on a coordination.k8s.io/v1 Lease, as client-go does it: the holder renews
// renewTime every retry period; anyone may take a Lease not renewed for leaseDurationSeconds.
// Optimistic concurrency (resourceVersion) decides races.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <string>

#include "common/result.h"
#include "kube/client.h"

namespace pipescale::kube {

class LeaderElector {
 public:
  struct Options {
    std::string namespace_name = "default";
    std::string name = "pipescale-operator";
    std::string identity;  // unique per process, e.g. hostname_pid
    std::chrono::seconds lease_duration{15};
    std::chrono::seconds renew_deadline{10};
    std::chrono::seconds retry_period{2};
  };
  using Clock = std::function<double()>;  // unix seconds

  LeaderElector(const Client& client, Options options, Clock clock);

  // One attempt to acquire or renew. True when we hold the lease afterwards. A throw (a bug,
  // or a Lease no apiserver would store) is counted and logged, and is a failed attempt.
  Result<bool> TryAcquireOrRenew();
  // Blocks, retrying every retry period, until we lead (true) or `stop` (false).
  bool Acquire(const std::atomic<bool>& stop);
  // Renews until `stop` (returns true) or until a renewal deadline passes without success
  // (leadership lost: false).
  bool Hold(const std::atomic<bool>& stop);
  // Gives the lease up so a successor need not wait for it to expire. Each of its two requests
  // waits at most kReleaseTimeout: a stopping process has its grace period, and a lease not
  // given up still expires.
  void Release();
  static constexpr std::chrono::seconds kReleaseTimeout{2};

 private:
  Result<bool> AcquireOrRenew();

  const Client& client_;
  Options options_;
  Clock clock_;
};

}  // namespace pipescale::kube

// The router replicas' exchange of their calls outstanding at each model pod (routing/
// peer_counts.h), over UDP on the port the router serves HTTP on: as soon as this router's counts
// change (the request path nudges it), and a heartbeat when they do not. A thread of its own; the
// request path reads atomics it writes.
#pragma once

#include <netinet/in.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/result.h"
#include "routing/peer_counts.h"

namespace pipescale::router {

class PeerLink {
 public:
  // Bound to UDP `host`:`port`; an error when it cannot be.
  static Result<std::unique_ptr<PeerLink>> Open(const std::string& host, unsigned short port);
  ~PeerLink();
  PeerLink(const PeerLink&) = delete;
  PeerLink& operator=(const PeerLink&) = delete;

  // The count the fresh peers report for `address`, kept current by the link's thread; `own` is
  // this router's count there, which the link reports to the peers while it lives.
  std::shared_ptr<const std::atomic<int>> Track(const std::string& address,
                                                const std::shared_ptr<std::atomic<int>>& own);
  // The router replicas' IPs (this one's own among them or not): where reports go, and the
  // only sources whose reports count.
  void SetPeers(std::vector<std::string> ips);
  // This router's count at a pod changed: report it now rather than at the next tick (a call
  // lasts tens of milliseconds; two routers reading a pod idle in the same tick both fill it).
  void Nudge() const;
  // The peers whose last report is fresh.
  int fresh_peers() const { return fresh_peers_.load(std::memory_order_relaxed); }

  // Starts the link's thread; `peers_changed` is called there with the fresh peers' number
  // each time it changes, `counts_changed` each time a count they report at a tracked pod does
  // (either may be null).
  void Start(std::function<void(int)> peers_changed, std::function<void()> counts_changed);

 private:
  PeerLink(int fd, int nudge_fd, unsigned short port);
  void Loop();
  bool Receive(double now_ms);             // whether a report came
  bool FromPeer(const sockaddr_in& from);  // whether a datagram's source is a router replica
  bool Publish(double now_ms);  // the fresh peers' sums into the tracked counts; whether one moved
  void Send(double now_ms);     // this router's report, when changed or due

  struct Tracked {
    std::weak_ptr<std::atomic<int>> own;
    std::shared_ptr<std::atomic<int>> peers = std::make_shared<std::atomic<int>>(0);
  };

  int fd_;
  int nudge_fd_;  // an eventfd
  unsigned short port_;
  std::uint64_t id_;
  std::mutex mu_;  // tracked_ and peers_ (the loop reads, discovery writes)
  std::map<std::string, Tracked> tracked_;
  std::vector<std::string> peers_;
  std::atomic<int> fresh_peers_{0};
  std::atomic<bool> stop_{false};
  routing::PeerBook book_;            // the loop's thread alone
  std::array<char, 65536> buffer_{};  // a datagram as received; the loop's thread alone
  std::string last_sent_;
  double last_sent_ms_ = -1e18;
  double last_published_ms_ = -1e18;
  std::function<void(int)> peers_changed_;
  std::function<void()> counts_changed_;
  std::thread thread_;
};

}  // namespace pipescale::router

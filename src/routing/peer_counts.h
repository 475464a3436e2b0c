// What a pipeline's router replicas tell each other: the calls each has outstanding at every
// model pod. Clients behind the routers' Service spread over them, so each router alone sees only
// its share of a pod's queue; the door and the picker read the whole queue as this router's count
// plus what its peers last reported (Dynamo's router replicas share their active requests the same
// way). Reports are whole snapshots, so a lost or late one costs nothing but staleness. Pure.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"

namespace pipescale::routing {

// How long a peer's last report counts: past it the peer is taken for gone (killed, or the
// network between dropped), and its calls for answered. Reports come every kPeerHeartbeatMs when
// nothing changes, so three may be lost in a row.
inline constexpr double kPeerFreshMs = 300;
inline constexpr double kPeerHeartbeatMs = 75;
// A report carries at most this many pods (a datagram of about 40 bytes each stays under 64 KB).
inline constexpr size_t kMaxPeerPods = 1500;
// A book holds at most this many peers' reports: a pipeline runs a handful of router replicas, and
// whatever else reaches the port must not grow it.
inline constexpr size_t kMaxPeers = 64;

struct PeerReport {
  std::uint64_t sender = 0;  // a random id per router process: its own reports come back to it
  std::vector<std::pair<std::string, int>> outstanding;  // pod address, calls (> 0 only)

  bool operator==(const PeerReport&) const = default;
};

// A report as one datagram: "pipescale-peers/1 SENDER\nADDRESS COUNT\n...".
std::string EncodePeerReport(const PeerReport& report);
// A datagram from the network (anything may arrive): the report, or why it is not one.
Result<PeerReport> DecodePeerReport(std::string_view datagram);

// The last report of each peer and when it came.
class PeerBook {
 public:
  // Replaces `report.sender`'s last report; forgets peers gone past kPeerFreshMs. A new
  // sender beyond kMaxPeers fresh ones is ignored.
  void Record(PeerReport report, double now_ms);
  // The calls the fresh peers have outstanding at each pod address.
  std::map<std::string, int> Outstanding(double now_ms) const;
  // The peers whose last report is fresh.
  int FreshPeers(double now_ms) const;

 private:
  std::map<std::uint64_t, std::pair<double, PeerReport>> last_;
};

// A pod's queue as this router reads it: its own calls there, its fresh peers' reported ones, and,
// for each Ready router replica that reports nothing (not yet, or a router that does not share),
// as many as its own again (clients spread evenly over the replicas).
int PodOutstanding(int own, int reported_by_peers, int routers, int fresh_peers);

}  // namespace pipescale::routing

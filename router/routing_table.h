// The pipeline's graph and its pods as one request sees them, replaced whole when either changes
// so that a walk reads one consistent view from its start to its end; it is the walk's view of
// the task loads (routing/loads.h), read from the pods' live counters.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "batcher.h"
#include "matcher.h"
#include "model/pipeline.h"
#include "peers.h"
#include "routing/graph.h"
#include "routing/loads.h"
#include "routing/loki.h"
#include "routing/walk.h"

namespace pipescale::router {

// A pod left out of picks for calls it left unanswered, until it answers a probe (prober.h).
struct Ejection {
  std::atomic<double> until_ms{0};     // SteadyNowMs() before which picks leave it out
  std::atomic<int> times{0};           // ejections since its last answer
  std::atomic<double> answered_ms{0};  // SteadyNowMs() of its last answer
  std::atomic<bool> probing{false};    // a probe runs for it
  // Left out for the n-th time in a row.
  void Eject(double now_ms) {
    until_ms.store(now_ms + routing::EjectMs(++times), std::memory_order_relaxed);
  }
  // Left out until `until` at least.
  void Hold(double until) {
    if (until_ms.load(std::memory_order_relaxed) < until)
      until_ms.store(until, std::memory_order_relaxed);
  }
  // It answered: the next ejection is the first again.
  void Answered(double now_ms) {
    answered_ms.store(now_ms, std::memory_order_relaxed);
    if (times.load(std::memory_order_relaxed) != 0) times.store(0, std::memory_order_relaxed);
  }
  // True for the one caller that is to run the pod's probe.
  bool StartProbe() {
    bool idle = false;
    return probing.compare_exchange_strong(idle, true);
  }
  // It answered the probe: back in picks, and a later ejection may start a probe again. The
  // count stays until a call is answered: a pod that answers its readiness but not its calls is
  // left out twice as long each time, rather than costing a client's call every probe.
  void Readmit() {
    until_ms.store(0, std::memory_order_relaxed);
    probing.store(false);
  }
};

struct Endpoint {
  std::string address;         // ip:port of a Ready pod
  double weight = 1;           // its planned capacity
  std::string variant;         // the model variant it serves ("" when not known)
  std::string hardware_class;  // the class it runs on ("" when not known)
  int variant_index = -1;      // the same, as the graph's indices (-1 when not known)
  int class_index = -1;
  int batch = 1;        // its batch size
  double batch_ms = 0;  // d(batch) on its class, 0 when not known
  std::string node;     // the node it runs on, "" when not known
  // Requests sent to the pod and not yet answered: shared by every Endpoint of the address, so a
  // new profile (a batch change) does not read a busy pod as idle.
  std::shared_ptr<std::atomic<int>> outstanding = std::make_shared<std::atomic<int>>(0);
  // The calls the other router replicas report at the pod (peers.h); null when they share none.
  std::shared_ptr<const std::atomic<int>> peers;
  // Picks leave the pod out while it is ejected (routing::EjectMs). Shared by every Endpoint of
  // the address, as `outstanding`.
  std::shared_ptr<Ejection> ejection = std::make_shared<Ejection>();
};

// A task served by a pool across hardware classes (Kairos's and MArk's pools.json).
struct TaskPool {
  std::shared_ptr<Matcher> matcher;  // Kairos: requests wait for a replica with none in flight
  int spill_class = -1;              // MArk: the warm burst class that takes late requests
  double rt_max_ms = 0;              // MArk: the response-time limit a main replica must meet
};

class RoutingTable final : public routing::TaskLoads {
 public:
  explicit RoutingTable(const model::Pipeline& pipeline);

  routing::Graph graph;
  std::vector<std::vector<std::shared_ptr<Endpoint>>> pods;  // by task
  std::shared_ptr<const routing::LokiTables> loki;           // a Loki plan's routing.json, or null
  std::vector<TaskPool> pools;                               // by task, from a pools.json
  // Batches the router forms, by task: (variant, its batcher), from a batching.json.
  std::vector<std::vector<std::pair<int, std::shared_ptr<Batcher>>>> batchers;
  // The pipeline's Ready router replicas (at least 1). Clients behind the routers' Service
  // spread over them, so each sees about this share of every pod's calls: a pod's load as this
  // router reads it adds what the others report (routing::PodOutstanding), so that the door and
  // the picker read the whole queue.
  int routers = 1;
  // Nudged as a pod's `outstanding` changes; null when the replicas share no counts.
  std::shared_ptr<const PeerLink> peer_link;
  // The pods restarting, by task (routing::RestartingPods).
  std::vector<int> restarting;

  // The batcher of `task` for `variant` (-1: the task's first) and its variant; null when the
  // router forms no batches there.
  std::pair<std::shared_ptr<Batcher>, int> BatcherFor(int task, int variant) const;
  // The first of the pipeline's tasks with no Ready pod, or none when each has one.
  std::optional<int> TaskWithoutPod() const;

  // routing::TaskLoads
  int PodCount(int task) const override;
  routing::PodLoad Pod(int task, int index) const override;
  double FillMs(int task, int variant) const override;
  std::optional<double> MatchedMs(int task, int rows) const override;
  std::optional<routing::SpillPool> Spill(int task) const override;
  bool Restarting(int task) const override { return restarting[task] > 0; }
};

}  // namespace pipescale::router

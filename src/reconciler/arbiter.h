// Divides the GPUs (or CPUs) that pipelines' classes share when their plans together need more
// than the nodes hold: each reconcile records what its plan needs of each pooled class, and every
// pipeline on the pool plans within its share (optimizer/share.h: guaranteedReplicas first,
// then by priority, then equal parts of the resource), so the first to reconcile no longer takes
// it all. A pipeline claims a pool once, however many of its classes take it, and its share is
// split among them by what each needs. Pipelines the arbiter has no record of keep what they
// run. Thread-safe; one per operator, shared by its reconcilers.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "model/pipeline.h"
#include "optimizer/share.h"
#include "reconciler/capacity.h"
#include "reconciler/decide.h"

namespace pipescale::reconciler {

class Arbiter {
 public:
  // Asks for a reconcile of a pipeline ("namespace/name") whose share may have moved.
  using Nudge = std::function<void(const std::string& pipeline)>;
  explicit Arbiter(Nudge nudge = nullptr) : nudge_(std::move(nudge)) {}

  // Sets `capacity`'s shares (classes[].share) and the Yielded entries for them, for `pipeline`.
  void Allot(const model::Pipeline& pipeline, ClusterCapacity& capacity, double now);
  // What the pipeline needs of each pooled class (Decision::needs, decided within `capacity`).
  void Record(const model::Pipeline& pipeline, const ClusterCapacity& capacity,
              const std::map<std::string, ClassNeed>& needs, double now);
  // The pipeline is gone.
  void Forget(const std::string& pipeline);
  // A pod of `pipeline` came or went: the pipelines it contends with look again, as its room
  // may be theirs now.
  void PodChanged(const std::string& pipeline);

  // A record older than this is read as absent (its pipeline keeps what it runs).
  static constexpr double kRecordSeconds = 600;
  // The least a division takes from running pipelines, as a share of the pool: a smaller gain
  // is not worth the pods it restarts.
  static constexpr double kMinGainShare = 0.1;
  // A burst's value per replica is kept for this many of the pipeline's scale-down windows. Its
  // own idle replicas wait one window (a restart if the burst returns); handing them to another
  // pipeline costs that one's start-ups too, and they come back with more when the burst does.
  // On Azure's traces (bench/gym-tenancy.sh, 5 seeds of an hour) one window made 352 pod starts
  // to first-come's 82, three 94, at 0.983x and 0.993x its goodput; six or nine add nothing.
  static constexpr double kValueWindows = 3;

 private:
  struct Entry {
    std::string pool;
    int priority = 0;
    int guaranteed = 0;
    int demand = 0;
    int minimum = 0;  // its tasks on the class
    // Requests per second per replica needed: the highest over kValueWindows of the pipeline's
    // scale-down windows (a burst that has left is the value its replicas keep).
    double value = 0;
    double value_at = 0;  // when that value was measured
    double unit = 1;
    double at = 0;
    // Whether the division could differ: a value within optimizer::kClearlyMore of the last
    // divides as it did.
    bool SameClaim(const Entry& o) const {
      return pool == o.pool && priority == o.priority && guaranteed == o.guaranteed &&
             demand == o.demand && minimum == o.minimum && unit == o.unit &&
             value <= o.value * optimizer::kClearlyMore &&
             o.value <= value * optimizer::kClearlyMore;
    }
  };
  // Allot for the pipeline's `classes` (indices into the spec's) that take one pool.
  void AllotPool(const model::Pipeline& pipeline, const std::vector<size_t>& classes,
                 ClusterCapacity& capacity, double now);
  void NudgeOthers(const std::string& pool, const std::string& pipeline);

  Nudge nudge_;
  std::mutex mu_;
  std::map<std::string, Entry> records_;  // by HolderKey
  // The pipelines last seen contending on each pool, by pool key.
  std::map<std::string, std::set<std::string>> contending_;
};

}  // namespace pipescale::reconciler

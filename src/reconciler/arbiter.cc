#include "reconciler/arbiter.h"

#include <algorithm>
#include <climits>
#include <limits>
#include <vector>

#include "optimizer/share.h"

namespace pipescale::reconciler {
namespace {

std::string PipelineOf(const std::string& holder) { return holder.substr(0, holder.rfind('@')); }

// The pipelines' claims on one pool, one each, the allotting pipeline's first.
struct Contest {
  std::vector<std::string> pipelines;
  std::vector<optimizer::Claim> claims;

  void Add(std::string pipeline, optimizer::Claim claim) {
    pipelines.push_back(std::move(pipeline));
    claims.push_back(claim);
  }
  // Whether two claims or more together need more than the pool holds.
  bool Contended(double capacity) const {
    double need = 0;
    int claiming = 0;
    for (const optimizer::Claim& c : claims) {
      if (c.demand == 0) continue;
      ++claiming;
      need = c.demand ? need + *c.demand * c.unit : std::numeric_limits<double>::infinity();
    }
    return claiming >= 2 && need > capacity + 1e-9;
  }
};

int Held(const PoolView& pool, const std::string& holder) {
  const auto it = pool.holders.find(holder);
  return it == pool.holders.end() ? 0 : it->second.pods;
}

// What a holder the arbiter has no record of claims: it keeps what it runs, and is given no more.
optimizer::Claim Keeps(const PoolView::Holding& h) {
  return {.priority = h.priority,
          .guaranteed = h.pods,
          .demand = h.pods,
          .held = h.pods,
          .unit = h.units / h.pods};
}

}  // namespace

void Arbiter::Allot(const model::Pipeline& pipeline, ClusterCapacity& capacity, double now) {
  std::lock_guard lock(mu_);
  // The pipeline's classes by the pool they take: it claims each pool once.
  std::map<std::string, std::vector<size_t>> by_pool;
  const size_t n = std::min(
      {capacity.pools.size(), pipeline.spec.hardware_classes.size(), capacity.classes.size()});
  for (size_t i = 0; i < n; ++i) {
    const PoolView& pool = capacity.pools[i];
    if (!pool.key.empty() && pool.unit > 0) by_pool[pool.key].push_back(i);
  }
  for (const auto& [key, classes] : by_pool) AllotPool(pipeline, classes, capacity, now);
}

void Arbiter::AllotPool(const model::Pipeline& pipeline, const std::vector<size_t>& classes,
                        ClusterCapacity& capacity, double now) {
  const std::string me = PipelineKey(pipeline);
  const PoolView& pool = capacity.pools[classes[0]];
  const auto fresh = [&](const Entry& e) {
    return e.pool == pool.key && now - e.at < kRecordSeconds;
  };
  // This pipeline's claim, a part per class (then any pods of classes it no longer has).
  std::vector<optimizer::Claim> mine;
  std::set<std::string> own;  // HolderKeys
  for (const size_t i : classes) {
    const model::HardwareClass& hw = pipeline.spec.hardware_classes[i];
    const std::string self = HolderKey(me, hw.name);
    own.insert(self);
    const auto it = records_.find(self);
    const Entry* planned = it != records_.end() && fresh(it->second) ? &it->second : nullptr;
    mine.push_back({.priority = capacity.priority,
                    .guaranteed = hw.guaranteed_replicas.value_or(0),
                    .demand = planned ? std::optional<int>(planned->demand) : std::nullopt,
                    .held = Held(pool, self),
                    .unit = capacity.pools[i].unit,
                    .minimum = planned ? planned->minimum : 0,
                    .value = planned ? planned->value : 0});
  }
  // The others', each pipeline's classes together: as recorded, else what they run.
  std::map<std::string, std::vector<optimizer::Claim>> others;
  std::set<std::string> recorded;  // HolderKeys
  for (const auto& [holder, e] : records_) {
    if (PipelineOf(holder) == me || !fresh(e)) continue;
    recorded.insert(holder);
    others[PipelineOf(holder)].push_back(
        {e.priority, e.guaranteed, e.demand, Held(pool, holder), e.unit, e.minimum, e.value});
  }
  for (const auto& [holder, h] : pool.holders) {
    if (h.pods <= 0 || recorded.contains(holder) || own.contains(holder)) continue;
    if (PipelineOf(holder) == me) {
      mine.push_back(Keeps(h));
    } else {
      others[PipelineOf(holder)].push_back(Keeps(h));
    }
  }
  Contest contest;
  contest.Add(me, optimizer::MergeClaims(mine));
  for (const auto& [other, parts] : others) contest.Add(other, optimizer::MergeClaims(parts));
  if (!contest.Contended(pool.capacity)) {
    // A pool no one contends for is forgotten (a node that joins or leaves makes a new one).
    if (const auto it = contending_.find(pool.key); it != contending_.end()) {
      it->second.erase(me);
      if (it->second.empty()) contending_.erase(it);
    }
    return;
  }
  contending_[pool.key].insert(contest.pipelines.begin(), contest.pipelines.end());
  double largest = 0;
  for (const optimizer::Claim& c : contest.claims) largest = std::max(largest, c.unit);
  const std::vector<int> shares = optimizer::DivideShares(
      pool.capacity, contest.claims, std::max(largest, kMinGainShare * pool.capacity));
  std::map<std::string, int> holders;  // the others' shares
  for (size_t k = 1; k < shares.size(); ++k) holders[contest.pipelines[k]] = shares[k];
  const std::vector<int> parts = optimizer::SplitShare(shares[0], mine);
  for (size_t j = 0; j < classes.size(); ++j) {
    ClassCapacity& c = capacity.classes[classes[j]];
    c.share = parts[j];
    // Yielded: held below what its plan needs (a pipeline not yet planned says nothing).
    const std::optional<int>& demand = mine[j].demand;
    if (!demand || *demand <= parts[j]) continue;
    capacity.yielded.push_back({.hardware_class = pipeline.spec.hardware_classes[classes[j]].name,
                                .holders = holders,
                                .share = parts[j],
                                .pool = c.pool});
  }
}

void Arbiter::Record(const model::Pipeline& pipeline, const ClusterCapacity& capacity,
                     const std::map<std::string, ClassNeed>& needs, double now) {
  const std::string me = PipelineKey(pipeline);
  std::set<std::string> moved;  // pools
  {
    std::lock_guard lock(mu_);
    const size_t n = std::min(capacity.pools.size(), pipeline.spec.hardware_classes.size());
    for (size_t i = 0; i < n; ++i) {
      const PoolView& pool = capacity.pools[i];
      const model::HardwareClass& hw = pipeline.spec.hardware_classes[i];
      const auto need = needs.find(hw.name);
      if (pool.key.empty() || pool.unit <= 0 || need == needs.end()) continue;
      Entry e{.pool = pool.key,
              .priority = capacity.priority,
              .guaranteed = hw.guaranteed_replicas.value_or(0),
              .demand = need->second.replicas,
              .minimum = need->second.tasks,
              .value = need->second.replicas > 0 ? need->second.rps / need->second.replicas : 0,
              .unit = pool.unit,
              .at = now};
      Entry& old = records_[HolderKey(me, hw.name)];
      e.value_at = now;
      if (old.value > e.value &&
          now - old.value_at < kValueWindows * pipeline.spec.behavior.scale_down_window_seconds) {
        e.value = old.value;
        e.value_at = old.value_at;
      }
      if (!old.SameClaim(e)) moved.insert(pool.key);
      old = std::move(e);
    }
  }
  for (const std::string& pool : moved) NudgeOthers(pool, me);
}

void Arbiter::Forget(const std::string& pipeline) {
  std::set<std::string> pools;
  {
    std::lock_guard lock(mu_);
    std::erase_if(records_, [&](const auto& r) {
      if (PipelineOf(r.first) != pipeline) return false;
      pools.insert(r.second.pool);
      return true;
    });
    for (auto it = contending_.begin(); it != contending_.end();) {
      if (it->second.erase(pipeline) > 0) pools.insert(it->first);
      it = it->second.empty() ? contending_.erase(it) : std::next(it);
    }
  }
  for (const std::string& pool : pools) NudgeOthers(pool, pipeline);
}

void Arbiter::PodChanged(const std::string& pipeline) {
  std::set<std::string> pools;
  {
    std::lock_guard lock(mu_);
    for (const auto& [pool, pipelines] : contending_) {
      if (pipelines.contains(pipeline)) pools.insert(pool);
    }
  }
  for (const std::string& pool : pools) NudgeOthers(pool, pipeline);
}

void Arbiter::NudgeOthers(const std::string& pool, const std::string& pipeline) {
  if (!nudge_) return;
  std::set<std::string> others;
  {
    std::lock_guard lock(mu_);
    for (const auto& [holder, e] : records_) {
      if (e.pool == pool) others.insert(PipelineOf(holder));
    }
    if (const auto it = contending_.find(pool); it != contending_.end()) {
      others.insert(it->second.begin(), it->second.end());
    }
  }
  others.erase(pipeline);
  for (const std::string& other : others) nudge_(other);
}

}  // namespace pipescale::reconciler

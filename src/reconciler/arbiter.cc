#include "reconciler/arbiter.h"

#include <algorithm>
#include <climits>
#include <limits>
#include <vector>

#include "optimizer/share.h"

namespace pipescale::reconciler {
namespace {

std::string PipelineOf(const std::string& holder) { return holder.substr(0, holder.rfind('@')); }

// The pipelines' claims on one pool, the allotting pipeline's class first.
struct Contest {
  std::vector<std::string> holders;  // HolderKeys
  std::vector<optimizer::Claim> claims;

  void Add(std::string holder, optimizer::Claim claim) {
    holders.push_back(std::move(holder));
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

}  // namespace

void Arbiter::Allot(const model::Pipeline& pipeline, ClusterCapacity& capacity, double now) {
  const std::string me = PipelineKey(pipeline);
  std::lock_guard lock(mu_);
  const size_t n = std::min(capacity.pools.size(), pipeline.spec.hardware_classes.size());
  for (size_t i = 0; i < n && i < capacity.classes.size(); ++i) {
    const PoolView& pool = capacity.pools[i];
    if (pool.key.empty() || pool.unit <= 0) continue;
    const model::HardwareClass& hw = pipeline.spec.hardware_classes[i];
    const std::string self = HolderKey(me, hw.name);
    const auto fresh = [&](const Entry& e) {
      return e.pool == pool.key && now - e.at < kRecordSeconds;
    };
    Contest contest;
    const auto mine = records_.find(self);
    const bool planned = mine != records_.end() && fresh(mine->second);
    contest.Add(self, {.priority = capacity.priority,
                       .guaranteed = hw.guaranteed_replicas.value_or(0),
                       .demand = planned ? std::optional<int>(mine->second.demand) : std::nullopt,
                       .held = Held(pool, self),
                       .unit = pool.unit,
                       .minimum = planned ? mine->second.minimum : 0,
                       .value = planned ? mine->second.value : 0});
    for (const auto& [holder, e] : records_) {
      if (holder == self || !fresh(e)) continue;
      contest.Add(holder, {e.priority, e.guaranteed, e.demand, Held(pool, holder), e.unit,
                           e.minimum, e.value});
    }
    for (const auto& [holder, h] : pool.holders) {
      if (h.pods <= 0 || std::ranges::find(contest.holders, holder) != contest.holders.end()) {
        continue;
      }
      // No record of what it needs: it keeps what it runs, and is given no more.
      contest.Add(holder, {h.priority, h.pods, h.pods, h.pods, h.units / h.pods});
    }
    if (!contest.Contended(pool.capacity)) {
      // A pool no one contends for is forgotten (a node that joins or leaves makes a new one).
      if (const auto it = contending_.find(pool.key); it != contending_.end()) {
        it->second.erase(me);
        if (it->second.empty()) contending_.erase(it);
      }
      continue;
    }
    std::set<std::string>& contending = contending_[pool.key];
    for (const std::string& holder : contest.holders) contending.insert(PipelineOf(holder));
    double largest = 0;
    for (const optimizer::Claim& c : contest.claims) largest = std::max(largest, c.unit);
    const std::vector<int> shares = optimizer::DivideShares(
        pool.capacity, contest.claims, std::max(largest, kMinGainShare * pool.capacity));
    ClassCapacity& c = capacity.classes[i];
    c.share = shares[0];
    // Yielded: held below what its plan needs (a pipeline not yet planned says nothing).
    const std::optional<int>& demand = contest.claims[0].demand;
    if (!demand || *demand <= shares[0]) continue;
    Yielded y{.hardware_class = hw.name, .share = shares[0], .pool = c.pool};
    for (size_t k = 1; k < shares.size(); ++k)
      y.holders[PipelineOf(contest.holders[k])] += shares[k];
    capacity.yielded.push_back(std::move(y));
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
          now - old.value_at < pipeline.spec.behavior.scale_down_window_seconds) {
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

#include "routing_table.h"

#include "clock.h"

namespace pipescale::router {

RoutingTable::RoutingTable(const model::Pipeline& pipeline)
    : graph(pipeline),
      pods(pipeline.spec.tasks.size()),
      pools(pipeline.spec.tasks.size()),
      batchers(pipeline.spec.tasks.size()),
      restarting(pipeline.spec.tasks.size(), 0) {}

std::pair<std::shared_ptr<Batcher>, int> RoutingTable::BatcherFor(int task, int variant) const {
  for (const auto& [v, batcher] : batchers[task]) {
    if (variant < 0 || v == variant) return {batcher, v};
  }
  return {nullptr, variant};
}

std::optional<int> RoutingTable::TaskWithoutPod() const {
  for (size_t task = 0; task < pods.size(); ++task) {
    if (pods[task].empty()) return static_cast<int>(task);
  }
  return std::nullopt;
}

int RoutingTable::PodCount(int task) const { return static_cast<int>(pods[task].size()); }

routing::PodLoad RoutingTable::Pod(int task, int index) const {
  const Endpoint& e = *pods[task][index];
  return {
      .variant = e.variant_index,
      .hardware_class = e.class_index,
      .outstanding = routing::PodOutstanding(e.outstanding->load(std::memory_order_relaxed),
                                             e.peers ? e.peers->load(std::memory_order_relaxed) : 0,
                                             routers, peer_link ? peer_link->fresh_peers() : 0),
      .batch = e.batch,
      .batch_ms = e.batch_ms,
      .weight = e.weight,
      .ejected = e.ejection->until_ms.load(std::memory_order_relaxed) > SteadyNowMs()};
}

double RoutingTable::FillMs(int task, int variant) const {
  const std::shared_ptr<Batcher> batcher = BatcherFor(task, variant).first;
  return batcher ? batcher->config().second : 0;
}

std::optional<double> RoutingTable::MatchedMs(int task, int rows) const {
  const std::shared_ptr<Matcher>& matcher = pools[task].matcher;
  return matcher ? matcher->PredictMs(rows) : std::nullopt;
}

std::optional<routing::SpillPool> RoutingTable::Spill(int task) const {
  const TaskPool& pool = pools[task];
  if (pool.spill_class < 0) return std::nullopt;
  return routing::SpillPool{.hardware_class = pool.spill_class, .rt_max_ms = pool.rt_max_ms};
}

}  // namespace pipescale::router

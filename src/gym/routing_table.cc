// What the router knows, rebuilt as its discovery rebuilds it (router/discovery.cc): the Ready
// pods of each task, each profiled at its batch as routing::Profile weighs it, and the plan's
// data plane from the routing ConfigMap (Loki's tables, Kairos's and MArk's pools, the batches
// the router forms), parsed by the same api functions.
#include "api/deployment.h"
#include "api/routing_parse.h"
#include "gym/world.h"
#include "routing/endpoints.h"

namespace pipescale::gym::engine {
namespace {

std::string DataText(const std::optional<nlohmann::json>& config_map, const char* key) {
  if (!config_map) return "";
  const nlohmann::json& data = config_map->value("data", nlohmann::json::object());
  return data.contains(key) && data[key].is_string() ? data[key].get<std::string>() : "";
}

}  // namespace

void World::ReadDataPlane() {
  const std::string loki_text = DataText(routing_config_map, api::kLokiRoutingKey);
  const std::string pools_text = DataText(routing_config_map, api::kPoolsRoutingKey);
  const std::string batch_text = DataText(routing_config_map, api::kBatchingKey);
  if (loki_text + '\x1f' + pools_text + '\x1f' + batch_text == data_plane_text) return;
  data_plane_text = loki_text + '\x1f' + pools_text + '\x1f' + batch_text;
  loki = nullptr;
  if (auto plan = api::ParseLokiRouting(loki_text); plan && !loki_text.empty()) {
    loki = std::make_shared<const routing::LokiTables>(*plan, pipeline);
  }
  ResetWalker();
  pool_plan.reset();
  if (auto read = api::ParsePoolsRouting(pools_text); read && !pools_text.empty()) {
    const optimizer::Descriptor* d = optimizer::FindOptimizer(read->optimizer);
    if (d != nullptr) pool_plan = std::make_pair(d->data_plane, read->plan);
  }
  std::vector<api::RouterBatch> batches;
  if (auto read = api::ParseBatching(batch_text); read && !batch_text.empty()) batches = *read;
  for (Batcher& b : batchers) b.wait_ms = -1;  // gone unless named again
  for (const api::RouterBatch& rb : batches) {
    const int task = pipeline.TaskIndex(rb.task);
    if (task < 0) continue;
    int variant = 0;
    const auto& vs = pipeline.spec.tasks[task].variants;
    for (size_t i = 0; i < vs.size(); ++i)
      variant = vs[i].name == rb.variant ? static_cast<int>(i) : variant;
    auto [it, added] =
        batcher_of.emplace(std::make_pair(task, variant), static_cast<int>(batchers.size()));
    if (added) batchers.push_back(Batcher{.task = task, .variant = variant});
    Batcher& b = batchers[it->second];
    if (!b.former) {
      b.former = std::make_unique<routing::BatchFormer>(rb.batch_size, rb.wait_ms);
    } else {
      b.former->Reconfigure(rb.batch_size, rb.wait_ms);
    }
    b.batch = rb.batch_size;
    b.wait_ms = rb.wait_ms;
  }
}

void World::RebuildRouting() {
  ReadDataPlane();
  ready.assign(pipeline.spec.tasks.size(), {});
  pod_weight.resize(pods.size());
  pod_batch_ms.resize(pods.size());
  pod_router_batch.resize(pods.size());
  for (int pi : live_pods) {
    const Pod& p = pods[pi];
    if (p.state != Pod::State::kReady) continue;
    const Deployment& d = deployments[p.deployment];
    const model::Task& task = pipeline.spec.tasks[d.task];
    routing::PodEndpoint e{.variant = task.variants[d.variant].name,
                           .hardware_class = pipeline.spec.hardware_classes[d.hw_class].name,
                           .batch = p.planned_batch};
    pod_router_batch[pi] = 0;
    if (auto b = batcher_of.find({d.task, d.variant});
        b != batcher_of.end() && batchers[b->second].wait_ms >= 0) {
      e.batch = batchers[b->second].batch;
      pod_router_batch[pi] = e.batch;
    }
    routing::Profile(pipeline, task.name, e);
    pod_weight[pi] = e.weight;
    pod_batch_ms[pi] = e.batch_ms;
    ready[d.task].push_back(pi);
  }
  RebuildPools();
}

void World::RebuildPools() {
  pools.clear();
  if (!pool_plan) return;
  for (const model::Pool& pool : pool_plan->second.pools) {
    const int task = pipeline.TaskIndex(pool.task);
    if (task < 0) continue;
    Pool& out = pools[task];
    if (pool_plan->first == optimizer::DataPlane::kSpillPools) {
      out.spill_class = pipeline.HardwareClassIndex(pool.spill_class);
      out.rt_max_ms = pool.qos_ms;
      continue;
    }
    auto& queue = kairos_queues[task];
    routing::KairosQueue::Options o{.qos_ms = pool.qos_ms};
    std::vector<routing::PoolReplica> replicas;
    std::map<std::string, int> classes;
    for (int pi : ready[task]) {
      const Deployment& d = deployments[pods[pi].deployment];
      const model::Variant& v = pipeline.spec.tasks[task].variants[d.variant];
      const std::string& cls = pipeline.spec.hardware_classes[d.hw_class].name;
      const int c =
          classes.emplace(v.name + "/" + cls, static_cast<int>(classes.size())).first->second;
      if (o.latency_ms.size() <= static_cast<size_t>(c)) {
        o.latency_ms.resize(c + 1);
        o.coefficient.resize(c + 1, 1);
      }
      const model::Profile* p = v.FindProfile(cls);
      const int top = v.max_batch;
      o.latency_ms[c] = [p, top](int rows) {
        return p ? p->latency.Ms(std::clamp(rows, 1, top)) : 1.0;
      };
      for (const model::PoolMember& m : pool.members) {
        if (m.hardware_class == cls) o.coefficient[c] = m.coefficient;
      }
      replicas.push_back({pi, c});
    }
    if (!queue) {
      queue = std::make_shared<routing::KairosQueue>(std::move(o));
    } else {
      queue->Reconfigure(std::move(o));
    }
    queue->SetReplicas(replicas);
    out.kairos = queue;
    out.has_replicas = !replicas.empty();
  }
  for (auto& [task, pool] : pools) {
    if (pool.kairos) MatchPool(task);
  }
}

}  // namespace pipescale::gym::engine

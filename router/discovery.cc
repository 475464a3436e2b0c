#include "discovery.h"

#include <algorithm>

#include "api/deployment.h"
#include "api/pipeline_parse.h"
#include "api/router_objects.h"
#include "api/routing_parse.h"
#include "common/guard.h"
#include "common/json_fields.h"
#include "common/log.h"

namespace pipescale::router {

namespace {

// The Kairos matcher's view of a task's replicas: each costed by its variant's profile on its
// class and its class's coefficient in the plan.
std::vector<Matcher::Replica> MatchedReplicas(const model::Pipeline& pipeline,
                                              const model::Pool& pool,
                                              const std::vector<std::shared_ptr<Endpoint>>& pods) {
  const int t = pipeline.TaskIndex(pool.task);
  std::vector<Matcher::Replica> out;
  for (const auto& e : pods) {
    const model::Variant* v = t < 0 ? nullptr : pipeline.spec.tasks[t].FindVariant(e->variant);
    const model::Profile* p = v == nullptr ? nullptr : v->FindProfile(e->hardware_class);
    std::function<double(int)> latency = [ms = e->batch_ms](int) { return ms; };
    // A client may send more rows than the batch the profile is validated to: cost it there.
    if (p != nullptr) {
      latency = [l = p->latency, top = v->max_batch](int rows) {
        return l.Ms(std::clamp(rows, 1, top));
      };
    }
    double coefficient = 1;
    for (const model::PoolMember& m : pool.members) {
      if (m.hardware_class == e->hardware_class) coefficient = m.coefficient;
    }
    out.push_back({e, e->variant + "/" + e->hardware_class, std::move(latency), coefficient});
  }
  return out;
}

void AddPools(const model::Pipeline& pipeline, const PoolsPart& pools, bool fcfs, Known& known,
              RoutingTable& table) {
  for (const model::Pool& pool : pools.plan.pools) {
    const int task = table.graph.TaskIndex(pool.task);
    if (task < 0) continue;  // a plan of another pipeline's tasks routes nothing here
    TaskPool& out = table.pools[task];
    if (pools.kind == optimizer::DataPlane::kSpillPools) {
      out.spill_class = table.graph.ClassIndex(pool.spill_class);
      out.rt_max_ms = pool.qos_ms;
      continue;
    }
    auto& matcher = known.matchers[pool.task];
    if (!matcher) matcher = std::make_shared<Matcher>(known.peers);
    matcher->Configure(pool.qos_ms, fcfs, MatchedReplicas(pipeline, pool, table.pods[task]));
    out.matcher = matcher;
  }
}

// The Endpoint of `pod` (a pod of `task`): the one `known` keeps for its address when profiled the
// same (with the requests outstanding there), else a new one that keeps the address's count.
std::shared_ptr<Endpoint> EndpointOf(const routing::Graph& graph, int task,
                                     const routing::PodEndpoint& pod, const Known& known) {
  const auto it = known.endpoints.find(pod.address);
  if (it != known.endpoints.end() && it->second->weight == pod.weight &&
      it->second->variant == pod.variant && it->second->hardware_class == pod.hardware_class &&
      it->second->batch == pod.batch && it->second->batch_ms == pod.batch_ms &&
      it->second->node == pod.node) {
    return it->second;
  }
  auto e = std::make_shared<Endpoint>();
  e->address = pod.address;
  e->weight = pod.weight;
  e->variant = pod.variant;
  e->hardware_class = pod.hardware_class;
  e->variant_index = graph.VariantIndex(task, pod.variant);
  e->class_index = graph.ClassIndex(pod.hardware_class);
  e->batch = pod.batch;
  e->batch_ms = pod.batch_ms;
  e->node = pod.node;
  if (it != known.endpoints.end()) {
    e->outstanding = it->second->outstanding;
    e->ejection = it->second->ejection;
  }
  if (known.peers) e->peers = known.peers->Track(pod.address, e->outstanding);
  return e;
}

}  // namespace

std::shared_ptr<const RoutingTable> MakeTable(
    const model::Pipeline& pipeline,
    const std::map<std::string, std::vector<routing::PodEndpoint>>& pods, Known& known,
    const DataPlaneParts& parts, bool fcfs, int routers,
    const std::map<std::string, int>& restarting) {
  auto table = std::make_shared<RoutingTable>(pipeline);
  for (const auto& [task, n] : restarting) {
    if (const int t = table->graph.TaskIndex(task); t >= 0) table->restarting[t] = n;
  }
  table->loki = parts.loki;
  table->routers = std::max(routers, 1);
  table->peer_link = known.peers;
  std::map<std::string, std::shared_ptr<Endpoint>> kept;
  std::map<std::string, int> router_batch;  // by "task/variant"
  for (const api::RouterBatch& b : parts.batches) {
    router_batch[b.task + "/" + b.variant] = b.batch_size;
  }
  for (const auto& [name, list] : pods) {
    const int task = table->graph.TaskIndex(name);
    if (task < 0) continue;  // a pod of a task the pipeline no longer lists
    for (routing::PodEndpoint pod : list) {
      // A pod of a variant whose batches the router forms serves each as one request: it is
      // profiled at the router's batch size, one request (a batch) at a time.
      if (const auto b = router_batch.find(name + "/" + pod.variant); b != router_batch.end()) {
        pod.batch = b->second;
        routing::Profile(pipeline, name, pod);
        pod.batch = 1;
      }
      std::shared_ptr<Endpoint> e = EndpointOf(table->graph, task, pod, known);
      kept[pod.address] = e;
      table->pods[task].push_back(std::move(e));
    }
  }
  known.endpoints = std::move(kept);
  if (parts.pools) AddPools(pipeline, *parts.pools, fcfs, known, *table);
  for (const api::RouterBatch& b : parts.batches) {
    const int task = table->graph.TaskIndex(b.task);
    if (task < 0) continue;
    // Kept across tables: a new batch size applies to the next batch formed.
    auto& batcher = known.batchers[b.task + "/" + b.variant];
    if (!batcher) batcher = std::make_shared<Batcher>(b.batch_size, b.wait_ms);
    batcher->Configure(b.batch_size, b.wait_ms);
    table->batchers[task].emplace_back(table->graph.VariantIndex(task, b.variant), batcher);
  }
  return table;
}

std::vector<api::RouterBatch> BatchesPartOf(const std::string& text, std::string& error) {
  auto read = api::ParseBatching(text);
  if (!read) {
    error = read.error().message;
    return {};
  }
  error.clear();
  return *read;
}

std::shared_ptr<const PoolsPart> PoolsPartOf(const std::string& text, std::string& error) {
  auto read = api::ParsePoolsRouting(text);
  if (!read) {
    error = read.error().message;
    return nullptr;
  }
  const optimizer::Descriptor* d = optimizer::FindOptimizer(read->optimizer);
  if (d == nullptr || (d->data_plane != optimizer::DataPlane::kMatchedPools &&
                       d->data_plane != optimizer::DataPlane::kSpillPools)) {
    error = std::string(api::kPoolsRoutingKey) + ": optimizer: " + read->optimizer +
            " hands no pools to the request path";
    return nullptr;
  }
  error.clear();
  return std::make_shared<const PoolsPart>(PoolsPart{d->data_plane, std::move((*read).plan)});
}

std::shared_ptr<const routing::LokiTables> LokiPartOf(const std::string& text,
                                                      const model::Pipeline& pipeline,
                                                      std::string& error) {
  auto plan = api::ParseLokiRouting(text);
  if (!plan) {
    error = plan.error().message;
    return nullptr;
  }
  error.clear();
  return std::make_shared<const routing::LokiTables>(*plan, pipeline);
}

Discovery::Discovery(const kube::Client& client, RouterConfig& config,
                     std::optional<model::Pipeline> fixed,
                     std::function<void(const RoutingTable&)> changed,
                     std::shared_ptr<PeerLink> peers)
    : config_(config), fixed_(std::move(fixed)), changed_(std::move(changed)) {
  known_.peers = std::move(peers);
  starting_ = std::make_unique<StartingProbes>(
      [this] { Guard("router-discovery", [this] { Rebuild(); }); });
  const std::string selector = "pipescale.io/pipeline=" + config.pipeline;
  auto rebuild = [this](const std::string&, const nlohmann::json&) { Rebuild(); };
  pods_ = std::make_unique<kube::Informer>(
      client,
      kube::Informer::Options{.type = kube::kPods,
                              .namespace_name = config.namespace_name,
                              .label_selector = selector,
                              .component = "router-discovery"},
      rebuild);
  config_maps_ = std::make_unique<kube::Informer>(
      client,
      kube::Informer::Options{.type = kube::kConfigMaps,
                              .namespace_name = config.namespace_name,
                              .label_selector = selector,
                              .component = "router-discovery"},
      rebuild);
  routers_ = std::make_unique<kube::Informer>(
      client,
      kube::Informer::Options{.type = kube::kPods,
                              .namespace_name = config.namespace_name,
                              .label_selector = "pipescale.io/router=" + config.pipeline,
                              .component = "router-discovery"},
      rebuild);
}

Discovery::~Discovery() {
  pods_->Stop();
  config_maps_->Stop();
  routers_->Stop();
  if (first_table_.joinable()) first_table_.join();  // Stop ended its wait
  starting_->Stop();  // its thread rebuilds too: stopped before the rest goes
}

void Discovery::Start() {
  pods_->Start();
  config_maps_->Start();
  routers_->Start();  // not waited for: until it lists, this router counts itself alone
  // An informer calls its handler only for objects it lists; when the one synced last listed
  // none (no model pod yet), no handler would run with both synced, and no table would be built
  // until something changed. So once both have synced, build it.
  first_table_ = std::thread([this] {
    constexpr auto kForever = std::chrono::hours(24 * 365);
    if (pods_->WaitForSync(kForever) && config_maps_->WaitForSync(kForever)) {
      Guard("router-discovery", [this] { Rebuild(); });
    }
  });
}

std::optional<model::Pipeline> Discovery::PipelineFromConfigMap(const nlohmann::json* data) {
  std::string error;
  if (data == nullptr) {
    error = "no ConfigMap " + config_.pipeline + "-routing yet";
  } else {
    const auto it = data->find(api::kPipelineKey);
    if (it == data->end() || !it->is_string()) {
      error = "ConfigMap " + config_.pipeline + "-routing has no " + api::kPipelineKey;
    } else {
      auto parsed = api::ParsePipeline(it->get<std::string>());
      if (parsed.pipeline) {
        last_error_.clear();
        return parsed.pipeline;
      }
      error = std::string(api::kPipelineKey) + ": " +
              (parsed.errors.empty() ? "invalid" : parsed.errors[0].ToString());
    }
  }
  if (error != last_error_) Log("warning", "keeping the last routing table", {{"reason", error}});
  last_error_ = error;
  return std::nullopt;
}

DataPlaneParts Discovery::PartsFromConfigMap(const nlohmann::json& data,
                                             const model::Pipeline& pipeline) {
  DataPlaneParts parts;
  std::string error;
  if (const auto it = data.find(api::kLokiRoutingKey); it != data.end() && it->is_string()) {
    parts.loki = LokiPartOf(it->get<std::string>(), pipeline, error);
  } else if (const auto p = data.find(api::kPoolsRoutingKey); p != data.end() && p->is_string()) {
    parts.pools = PoolsPartOf(p->get<std::string>(), error);
  }
  if (const auto b = data.find(api::kBatchingKey);
      error.empty() && b != data.end() && b->is_string()) {
    parts.batches = BatchesPartOf(b->get<std::string>(), error);
  }
  if (!error.empty() && error != last_parts_error_) {
    Log("warning", "routing to any Ready pod: the plan's data-plane part does not read",
        {{"reason", error}});
  }
  last_parts_error_ = error;
  return parts;
}

void Discovery::Rebuild() {
  std::lock_guard lock(mu_);
  if (!pods_->Synced() || !config_maps_->Synced()) return;
  const auto object =
      config_maps_->Get(config_.namespace_name + "/" + config_.pipeline + "-routing");
  nlohmann::json data = object ? object->value("data", nlohmann::json::object()) : nlohmann::json();
  if (!data.is_object()) data = nlohmann::json::object();  // from outside: anything may be there
  std::optional<model::Pipeline> pipeline =
      fixed_ ? fixed_ : PipelineFromConfigMap(object ? &data : nullptr);
  if (!pipeline) return;  // a broken or missing ConfigMap keeps what was routed before
  int routers = 0;
  std::vector<std::string> router_ips;  // Ready or not: a draining router still has calls out
  for (const nlohmann::json& pod : routers_->List()) {
    routers += routing::PodReady(pod) ? 1 : 0;
    router_ips.push_back(StringField(Member(pod, "status"), "podIP"));
  }
  std::erase(router_ips, "");
  if (known_.peers) known_.peers->SetPeers(std::move(router_ips));
  const std::vector<nlohmann::json> listed = pods_->List();
  auto pods = routing::ReadyEndpoints(*pipeline, listed);
  for (auto& [task, answered] : starting_->Update(routing::StartingEndpoints(*pipeline, listed))) {
    std::vector<routing::PodEndpoint>& list = pods[task];
    list.insert(list.end(), answered.begin(), answered.end());
  }
  auto table = MakeTable(*pipeline, pods, known_, PartsFromConfigMap(data, *pipeline), config_.fcfs,
                         routers, routing::RestartingPods(*pipeline, listed));
  if (changed_) changed_(*table);
  config_.table.store(std::move(table));
}

}  // namespace pipescale::router

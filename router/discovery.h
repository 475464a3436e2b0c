// Keeps a router's routing table current from the cluster without a restart: the pipeline from
// its routing ConfigMap (key pipeline.json, written by the operator) or from a file, and the
// Ready pods of each task from the Pod objects of the pipeline, with those started that have
// answered the router's own readiness probe (starting.h).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "api/plan_json.h"
#include "config.h"
#include "kube/informer.h"
#include "model/pipeline.h"
#include "optimizer/registry.h"
#include "routing/endpoints.h"
#include "routing_table.h"
#include "starting.h"

namespace pipescale::router {

// A Kairos or MArk plan's pools as the router applies them.
struct PoolsPart {
  optimizer::DataPlane kind = optimizer::DataPlane::kMatchedPools;
  model::PoolPlan plan;
};

// What a plan hands the request path besides the pipeline (each part null when absent).
struct DataPlaneParts {
  std::shared_ptr<const routing::LokiTables> loki;
  std::shared_ptr<const PoolsPart> pools;
  std::vector<api::RouterBatch> batches;  // batchSize.formedBy: router
};

// What outlives one routing table: the Endpoints by address (with the requests outstanding at
// each, also when a pod's profile changes) and the Kairos matchers by task (with their queues and
// replicas in flight).
struct Known {
  std::map<std::string, std::shared_ptr<Endpoint>> endpoints;
  std::map<std::string, std::shared_ptr<Matcher>> matchers;
  std::map<std::string, std::shared_ptr<Batcher>> batchers;  // by "task/variant"
  std::shared_ptr<PeerLink> peers;  // the other router replicas' counts; null when not shared
};

// A table for `pipeline` with these pods. An address in `known` that is profiled the same
// keeps its Endpoint; a pool's matcher is kept and given the new replicas; `known` is updated.
// `fcfs`: the matchers serve first come, first served (the baseline Kairos is measured against).
// `routers`: the pipeline's Ready router replicas (RoutingTable::routers); `restarting`: its
// pods restarting, by task (routing::RestartingPods).
std::shared_ptr<const RoutingTable> MakeTable(
    const model::Pipeline& pipeline,
    const std::map<std::string, std::vector<routing::PodEndpoint>>& pods, Known& known,
    const DataPlaneParts& parts = {}, bool fcfs = false, int routers = 1,
    const std::map<std::string, int>& restarting = {});

// A Loki plan's tables from the routing ConfigMap's `routing.json` text; null, with a reason in
// `error`, when it does not parse (the router then routes to any Ready pod).
std::shared_ptr<const routing::LokiTables> LokiPartOf(const std::string& text,
                                                      const model::Pipeline& pipeline,
                                                      std::string& error);

// The batches the router forms, from `batching.json` text; empty, with a reason in `error`,
// when it does not parse.
std::vector<api::RouterBatch> BatchesPartOf(const std::string& text, std::string& error);

// A Kairos or MArk plan's pools from `pools.json` text; null, with a reason in `error`, when
// it does not parse or names an optimizer without pools.
std::shared_ptr<const PoolsPart> PoolsPartOf(const std::string& text, std::string& error);

class Discovery {
 public:
  // `fixed`: the pipeline from a file; else it is read from the routing ConfigMap. A Loki
  // plan's tables come from the ConfigMap either way.
  // `changed` is called with each new table, on an informer's thread. `peers`: the link to the
  // other router replicas, told their IPs as they come and go (null: no counts shared).
  Discovery(const kube::Client& client, RouterConfig& config, std::optional<model::Pipeline> fixed,
            std::function<void(const RoutingTable&)> changed,
            std::shared_ptr<PeerLink> peers = nullptr);
  ~Discovery();
  Discovery(const Discovery&) = delete;
  Discovery& operator=(const Discovery&) = delete;

  // Starts following the cluster; the first table is built once both informers have synced.
  void Start();

 private:
  void Rebuild();
  // The pipeline's and the Loki plan's parts of the routing ConfigMap's `data` (null or {} when
  // there is no ConfigMap), each failure logged once.
  std::optional<model::Pipeline> PipelineFromConfigMap(const nlohmann::json* data);
  DataPlaneParts PartsFromConfigMap(const nlohmann::json& data, const model::Pipeline& pipeline);

  RouterConfig& config_;
  std::optional<model::Pipeline> fixed_;
  std::function<void(const RoutingTable&)> changed_;
  std::unique_ptr<kube::Informer> pods_, config_maps_;
  std::unique_ptr<kube::Informer> routers_;  // the pipeline's router pods, this one's peers
  // Probes the pods started and not yet Ready; those that answered are routed to as Ready.
  std::unique_ptr<StartingProbes> starting_;
  std::mutex mu_;
  Known known_;
  std::string last_error_, last_parts_error_;
  std::thread first_table_;  // waits for both informers' first lists (see Start)
};

}  // namespace pipescale::router

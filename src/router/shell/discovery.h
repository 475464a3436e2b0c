// Keeps a router's routing table current from the cluster without a restart: the pipeline from
// its routing ConfigMap (key pipeline.json, written by the operator) or from a file, and the
// Ready pods of each task from the Pod objects of the pipeline.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "kube/informer.h"
#include "model/pipeline.h"
#include "router/endpoints.h"
#include "router/shell/handler.h"

namespace pipescale::router {

// A table for `pipeline` with these pods. An address in `known` with the same weight keeps its
// Endpoint (and with it the count of requests outstanding there); `known` is updated.
std::shared_ptr<const RoutingTable> MakeTable(
    const model::Pipeline& pipeline, const std::map<std::string, std::vector<PodEndpoint>>& pods,
    std::map<std::string, std::shared_ptr<Endpoint>>& known,
    std::shared_ptr<const LokiTables> loki = nullptr);

// A Loki plan's tables from the routing ConfigMap's `routing.json` text; null, with a reason in
// `error`, when it does not parse (the router then routes to any Ready pod).
std::shared_ptr<const LokiTables> ReadLoki(const std::string& text, const model::Pipeline& pipeline,
                                           std::string& error);

class Discovery {
 public:
  // `fixed`: the pipeline from a file; else it is read from the routing ConfigMap. A Loki
  // plan's tables come from the ConfigMap either way.
  // `changed` is called with each new table, on an informer's thread.
  Discovery(const kube::Client& client, RouterConfig& config, std::optional<model::Pipeline> fixed,
            std::function<void(const RoutingTable&)> changed);
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
  std::shared_ptr<const LokiTables> LokiFromConfigMap(const nlohmann::json& data,
                                                      const model::Pipeline& pipeline);

  RouterConfig& config_;
  std::optional<model::Pipeline> fixed_;
  std::function<void(const RoutingTable&)> changed_;
  std::unique_ptr<kube::Informer> pods_, config_maps_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<Endpoint>> known_;
  std::string last_error_, last_loki_error_;
  std::thread first_table_;  // waits for both informers' first lists (see Start)
};

}  // namespace pipescale::router

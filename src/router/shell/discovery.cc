#include "router/shell/discovery.h"

#include "api/pipeline_parse.h"
#include "api/router_objects.h"
#include "api/routing_parse.h"
#include "common/log.h"

namespace pipescale::router {

std::shared_ptr<const RoutingTable> MakeTable(
    const model::Pipeline& pipeline, const std::map<std::string, std::vector<PodEndpoint>>& pods,
    std::map<std::string, std::shared_ptr<Endpoint>>& known,
    std::shared_ptr<const LokiTables> loki) {
  auto table = std::make_shared<RoutingTable>(RoutingTable{Graph(pipeline), {}, std::move(loki)});
  std::map<std::string, std::shared_ptr<Endpoint>> kept;
  for (const auto& [task, list] : pods) {
    for (const PodEndpoint& pod : list) {
      auto it = known.find(pod.address);
      std::shared_ptr<Endpoint> e;
      if (it != known.end() && it->second->weight == pod.weight &&
          it->second->variant == pod.variant) {
        e = it->second;
      } else {
        e = std::make_shared<Endpoint>();
        e->address = pod.address;
        e->weight = pod.weight;
        e->variant = pod.variant;
      }
      kept[pod.address] = e;
      table->endpoints[task].push_back(std::move(e));
    }
  }
  known = std::move(kept);
  return table;
}

std::shared_ptr<const LokiTables> ReadLoki(const std::string& text, const model::Pipeline& pipeline,
                                           std::string& error) {
  auto plan = api::ParseLokiRouting(text);
  if (!plan) {
    error = plan.error().message;
    return nullptr;
  }
  error.clear();
  return std::make_shared<const LokiTables>(*plan, pipeline);
}

Discovery::Discovery(const kube::Client& client, RouterConfig& config,
                     std::optional<model::Pipeline> fixed,
                     std::function<void(const RoutingTable&)> changed)
    : config_(config), fixed_(std::move(fixed)), changed_(std::move(changed)) {
  const std::string selector = "pipescale.io/pipeline=" + config.pipeline;
  auto rebuild = [this](const std::string&, const nlohmann::json&) { Rebuild(); };
  pods_ = std::make_unique<kube::Informer>(
      client,
      kube::Informer::Options{
          .type = kube::kPods, .namespace_name = config.namespace_name, .label_selector = selector},
      rebuild);
  config_maps_ = std::make_unique<kube::Informer>(
      client,
      kube::Informer::Options{.type = kube::kConfigMaps,
                              .namespace_name = config.namespace_name,
                              .label_selector = selector},
      rebuild);
}

Discovery::~Discovery() {
  pods_->Stop();
  config_maps_->Stop();
  if (first_table_.joinable()) first_table_.join();  // Stop ended its wait
}

void Discovery::Start() {
  pods_->Start();
  config_maps_->Start();
  // An informer calls its handler only for objects it lists; when the one synced last listed
  // none (no model pod yet), no handler would run with both synced, and no table would be built
  // until something changed. So once both have synced, build it.
  first_table_ = std::thread([this] {
    constexpr auto kForever = std::chrono::hours(24 * 365);
    if (pods_->WaitForSync(kForever) && config_maps_->WaitForSync(kForever)) {
      Rebuild();
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

std::shared_ptr<const LokiTables> Discovery::LokiFromConfigMap(const nlohmann::json& data,
                                                               const model::Pipeline& pipeline) {
  const auto it = data.find(api::kLokiRoutingKey);
  if (it == data.end() || !it->is_string()) return nullptr;  // not a Loki plan
  std::string error;
  auto loki = ReadLoki(it->get<std::string>(), pipeline, error);
  if (!error.empty() && error != last_loki_error_) {
    Log("warning", "routing to any Ready pod: the Loki plan's tables do not read",
        {{"reason", error}});
  }
  last_loki_error_ = error;
  return loki;
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
  const auto pods = ReadyEndpoints(*pipeline, pods_->List());
  auto table = MakeTable(*pipeline, pods, known_, LokiFromConfigMap(data, *pipeline));
  if (changed_) changed_(*table);
  config_.table.store(std::move(table));
}

}  // namespace pipescale::router

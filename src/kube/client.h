// A Kubernetes API client over libcurl (http/client.h): get, create, update, JSON merge patch,
// delete, and streaming watches, with TLS verified against the configured CA. What it buffers is
// capped: an answer, and each event of a watch. Knows no resource types beyond the paths it is
// given.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "common/result.h"
#include "kube/config.h"

namespace pipescale::kube {

// Where a kind of object lives in the API.
struct ResourceType {
  std::string api_version;  // "v1" for the core group, else "group/version"
  std::string plural;
  bool namespaced = true;
};

inline const ResourceType kDeployments{"apps/v1", "deployments", true};
inline const ResourceType kConfigMaps{"v1", "configmaps", true};
inline const ResourceType kEvents{"v1", "events", true};
inline const ResourceType kLeases{"coordination.k8s.io/v1", "leases", true};
inline const ResourceType kNodes{"v1", "nodes", false};
inline const ResourceType kPods{"v1", "pods", true};
inline const ResourceType kPriorityClasses{"scheduling.k8s.io/v1", "priorityclasses", false};
inline const ResourceType kCustomResourceDefinitions{"apiextensions.k8s.io/v1",
                                                     "customresourcedefinitions", false};

// /api/v1/namespaces/ns/configmaps, /apis/apps/v1/deployments (ns empty: all namespaces).
std::string CollectionPath(const ResourceType& type, const std::string& ns);
std::string ObjectPath(const ResourceType& type, const std::string& ns, const std::string& name,
                       const std::string& subresource = "");
// Percent-encodes a query parameter value.
std::string QueryEscape(const std::string& value);

struct WatchEvent {
  std::string type;  // ADDED, MODIFIED, DELETED, BOOKMARK or ERROR
  nlohmann::json object;
};

// What a client buffers and how long it waits.
struct ClientLimits {
  // The largest answer read whole: a list of every pod of a big cluster is tens of MiB, so a
  // generous cap that only a runaway list or a hostile server passes.
  size_t max_answer_bytes = size_t{256} << 20;
  // The largest event of a watch (one object): the apiserver stores objects of at most about
  // 1.5 MiB (etcd's request limit).
  size_t max_event_bytes = size_t{16} << 20;
  std::chrono::seconds timeout{30};  // of each request; a watch lasts as the server keeps it
};

// Thread-safe: every call uses its own connection state.
class Client {
 public:
  explicit Client(ClusterConfig config, ClientLimits limits = {});

  // Error kinds: 404 kNotFound, 409 kConflict, 410 kExpired, 429/5xx/network kTransient,
  // other 4xx kInvalid, and kInvalid for an answer past limits.max_answer_bytes. Messages say
  // what was done to what, with the server's message.
  Result<nlohmann::json> Get(const std::string& path) const;
  Result<nlohmann::json> Create(const std::string& collection_path,
                                const nlohmann::json& object) const;
  Result<nlohmann::json> Update(const std::string& path, const nlohmann::json& object) const;
  Result<nlohmann::json> MergePatch(const std::string& path, const nlohmann::json& patch) const;
  // Built-in types only: lists such as containers and env merge by name instead of replacing.
  Result<nlohmann::json> StrategicMergePatch(const std::string& path,
                                             const nlohmann::json& patch) const;
  Status Delete(const std::string& path) const;

  // Streams `path` (with ?watch=1 and friends already in it), calling `on_event` per event.
  // Returns Done when the server ends the stream, `on_event` returns false, or `stop` turns
  // true; an error if the request fails, the server answers with an error status, or an event
  // is larger than limits.max_event_bytes (kInvalid).
  Status Watch(const std::string& path, const std::function<bool(const WatchEvent&)>& on_event,
               const std::atomic<bool>& stop) const;

  const ClusterConfig& config() const { return config_; }
  // Requests sent so far, watches included (shared by copies of this client).
  long requests() const { return requests_->load(std::memory_order_relaxed); }

 private:
  Result<nlohmann::json> Send(const char* method, const std::string& path, const std::string& body,
                              const std::string& content_type) const;

  ClusterConfig config_;
  ClientLimits limits_;
  std::shared_ptr<std::atomic<long>> requests_ = std::make_shared<std::atomic<long>>(0);
};

}  // namespace pipescale::kube

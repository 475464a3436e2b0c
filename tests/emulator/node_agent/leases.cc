#include "node_agent/leases.h"

#include <chrono>
#include <thread>

#include "common/log.h"
#include "common/time.h"

namespace pipescale::emulator {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

constexpr const char* kLeaseNamespace = "kube-node-lease";
// A kubelet's default: the lifecycle controller's grace period decides, this only bounds it.
constexpr int kLeaseDurationSeconds = 40;

double UnixSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

void NodeLeases::Set(std::map<std::string, std::string> nodes) {
  std::lock_guard lock(mu_);
  nodes_ = std::move(nodes);
}

void NodeLeases::Run(const std::atomic<bool>& stop) {
  while (!stop) {
    std::map<std::string, std::string> nodes;
    {
      std::lock_guard lock(mu_);
      nodes = nodes_;
    }
    for (const auto& [node, uid] : nodes) Renew(node, uid);
    for (int i = 0; i < 10 && !stop; ++i) std::this_thread::sleep_for(100ms);
  }
}

void NodeLeases::Renew(const std::string& node, const std::string& uid) {
  const json spec = {{"holderIdentity", node},
                     {"leaseDurationSeconds", kLeaseDurationSeconds},
                     {"renewTime", FormatRfc3339(UnixSeconds(), 6)}};
  auto renewed =
      client_.MergePatch(kube::ObjectPath(kube::kLeases, kLeaseNamespace, node), {{"spec", spec}});
  if (renewed || renewed.error().kind != ErrorKind::kNotFound) return;
  const json lease = {
      {"apiVersion", "coordination.k8s.io/v1"},
      {"kind", "Lease"},
      {"metadata",
       {{"name", node},
        {"namespace", kLeaseNamespace},
        {"ownerReferences",
         json::array({{{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}, {"uid", uid}}})}}},
      {"spec", spec}};
  auto created = client_.Create(kube::CollectionPath(kube::kLeases, kLeaseNamespace), lease);
  if (!created && created.error().kind != ErrorKind::kConflict) {
    Log("warning", "cannot create the node's lease",
        {{"node", node}, {"error", created.error().message}});
  }
}

}  // namespace pipescale::emulator

#include "node_agent/nodes.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "api/document.h"
#include "common/log.h"

namespace pipescale::emulator {
namespace {

using nlohmann::json;

std::string Now() {
  char buffer[32];
  const std::time_t t = std::time(nullptr);
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buffer;
}

json ReadyCondition() {
  const std::string now = Now();
  return json::array({{{"type", "Ready"},
                       {"status", "True"},
                       {"reason", "KubeletReady"},
                       {"message", "pipescale node agent is posting ready status"},
                       {"lastHeartbeatTime", now},
                       {"lastTransitionTime", now}}});
}

json NodeObject(const std::string& name, const json& entry) {
  json capacity = entry.value("capacity", json::object());
  if (!capacity.contains("pods")) capacity["pods"] = "110";
  for (auto& [k, v] : capacity.items()) {
    if (v.is_number()) v = v.dump();
  }
  json labels = entry.value("labels", json::object());
  labels["kubernetes.io/hostname"] = name;
  labels["kubernetes.io/os"] = "linux";
  labels["node.pipescale.io/emulated"] = "true";
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", name}, {"labels", labels}}},
          {"spec", {{"taints", entry.value("taints", json::array())}}},
          {"status",
           {{"capacity", capacity},
            {"allocatable", capacity},
            {"conditions", ReadyCondition()},
            {"addresses", json::array({{{"type", "InternalIP"}, {"address", "127.0.0.1"}},
                                       {{"type", "Hostname"}, {"address", name}}})},
            {"nodeInfo",
             {{"kubeletVersion", "v1.20.2"},
              {"kubeProxyVersion", "v1.20.2"},
              {"containerRuntimeVersion", "pipescale-node-agent://1"},
              {"operatingSystem", "linux"},
              {"architecture", "amd64"},
              {"osImage", "emulated"},
              {"kernelVersion", ""},
              {"machineID", ""},
              {"systemUUID", ""},
              {"bootID", ""}}}}}};
}

long long MTime(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return -1;
  return static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
}

}  // namespace

Result<std::vector<json>> ReadNodesFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error{ErrorKind::kNotFound, "cannot read nodes file " + path};
  std::stringstream text;
  text << in.rdbuf();
  auto doc = api::ParseDocument(text.str());
  if (!doc) return doc.error();
  if (!doc->is_object() || !(*doc)["nodes"].is_array()) {
    return Error{ErrorKind::kInvalid, path + ": expected {nodes: [...]}"};
  }
  std::vector<json> nodes;
  for (const json& entry : (*doc)["nodes"]) {
    if (!entry.is_object() || !entry.value("name", json()).is_string()) {
      return Error{ErrorKind::kInvalid, path + ": every node needs a name"};
    }
    const int count = entry.value("count", 1);
    const std::string name = entry["name"];
    for (int i = 1; i <= count; ++i) {
      nodes.push_back(NodeObject(count == 1 ? name : name + "-" + std::to_string(i), entry));
    }
  }
  return nodes;
}

Status Nodes::Register(const json& node) {
  const std::string name = node["metadata"]["name"];
  auto created = client_.Create(kube::CollectionPath(kube::kNodes, ""), node);
  if (!created && created.error().kind != ErrorKind::kConflict) return created.error();
  // The TaintNodesByCondition admission plugin adds not-ready:NoSchedule to a new Node and,
  // with no node lifecycle controller, nothing would lift it: set the file's taints.
  auto spec = client_.MergePatch(kube::ObjectPath(kube::kNodes, "", name),
                                 {{"metadata", {{"labels", node["metadata"]["labels"]}}},
                                  {"spec", {{"taints", node["spec"]["taints"]}}}});
  if (!spec) return spec.error();
  auto status = client_.MergePatch(kube::ObjectPath(kube::kNodes, "", name, "status"),
                                   {{"status", node["status"]}});
  if (!status) return status.error();
  return Done();
}

void Nodes::Heartbeat(const std::string& name) {
  (void)client_.MergePatch(kube::ObjectPath(kube::kNodes, "", name, "status"),
                           {{"status", {{"conditions", ReadyCondition()}}}});
}

void Nodes::Sync() {
  const long long mtime = MTime(file_);
  if (mtime != mtime_) {
    auto nodes = ReadNodesFile(file_);
    if (!nodes) {
      Log("error", "nodes file", {{"error", nodes.error().message}});
      mtime_ = mtime;
      return;
    }
    std::set<std::string> fresh;
    bool ok = true;
    for (const json& node : *nodes) {
      fresh.insert(node["metadata"]["name"]);
      if (auto s = Register(node); !s) {
        Log("warning", "cannot register node", {{"error", s.error().message}});
        ok = false;
      }
    }
    for (const std::string& gone : names_) {
      if (!fresh.contains(gone)) (void)client_.Delete(kube::ObjectPath(kube::kNodes, "", gone));
    }
    names_ = fresh;
    if (ok) mtime_ = mtime;  // else retry on the next sync
    last_heartbeat_ = std::chrono::steady_clock::now();
    Log("info", "nodes registered", {{"count", std::to_string(names_.size())}});
  }
  if (std::chrono::steady_clock::now() - last_heartbeat_ > std::chrono::seconds(10)) {
    for (const std::string& name : names_) Heartbeat(name);
    last_heartbeat_ = std::chrono::steady_clock::now();
  }
}

void Nodes::DeleteAll() {
  for (const std::string& name : names_)
    (void)client_.Delete(kube::ObjectPath(kube::kNodes, "", name));
  names_.clear();
}

}  // namespace pipescale::emulator

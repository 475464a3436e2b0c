#include "api/nodes_file.h"

#include <cstdint>
#include <ctime>

#include "api/document.h"
#include "common/file.h"
#include "model/limits.h"

namespace pipescale::api {
namespace {

using nlohmann::json;

std::string Now() {
  char buffer[32];
  const std::time_t t = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&t, &utc);
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buffer;
}

}  // namespace

json NodeReadyConditions() {
  const std::string now = Now();
  return json::array({{{"type", "Ready"},
                       {"status", "True"},
                       {"reason", "KubeletReady"},
                       {"message", "pipescale node agent is posting ready status"},
                       {"lastHeartbeatTime", now},
                       {"lastTransitionTime", now}}});
}

namespace {

json NodeObject(const std::string& name, const json& entry) {
  json capacity = entry.value("capacity", json::object());
  if (!capacity.contains("pods")) capacity["pods"] = "110";
  // Quantities are strings in a Node, as the apiserver serialises them.
  for (json& v : capacity) {
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
            {"conditions", NodeReadyConditions()},
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

}  // namespace

Result<std::vector<json>> ParseNodesFile(const std::string& text, const std::string& source) {
  auto doc = ParseDocument(text);
  if (!doc) return Error{ErrorKind::kInvalid, source + ": " + doc.error().message};
  if (!doc->is_object() || !(*doc)["nodes"].is_array()) {
    return Error{ErrorKind::kInvalid, source + ": expected {nodes: [...]}"};
  }
  std::vector<json> nodes;
  for (const json& entry : (*doc)["nodes"]) {
    if (!entry.is_object() || !entry.value("name", json()).is_string()) {
      return Error{ErrorKind::kInvalid, source + ": every node needs a name"};
    }
    const json count = entry.value("count", json(1));
    // Read at full width: 2^32 + 1 is too many, not 1.
    const bool in_range = count.is_number_unsigned()
                              ? count.get<std::uint64_t>() - 1 < limits::kMaxNodes
                              : count.is_number_integer() && count.get<std::int64_t>() >= 1 &&
                                    count.get<std::int64_t>() <= limits::kMaxNodes;
    if (!in_range) {
      return Error{ErrorKind::kInvalid, source + ": count must be a whole number 1.." +
                                            std::to_string(limits::kMaxNodes)};
    }
    const std::string name = entry["name"];
    const int n = count.get<int>();
    for (int i = 1; i <= n; ++i) {
      nodes.push_back(NodeObject(n == 1 ? name : name + "-" + std::to_string(i), entry));
    }
  }
  return nodes;
}

Result<std::vector<json>> ReadNodesFile(const std::string& path) {
  auto text = ReadFileText(path, "nodes file");
  if (!text) return text.error();
  return ParseNodesFile(*text, path);
}

}  // namespace pipescale::api

// The emulated nodes of the node agent: read from a small YAML file, registered as real Node
// objects (capacity and allocatable as a kubelet and its device plugins would report them),
// kept Ready with heartbeats (and Leases, node_agent/leases.h), and removed when they leave the
// file.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "api/nodes_file.h"
#include "common/result.h"
#include "kube/client.h"

namespace pipescale::emulator {

using api::ReadNodesFile;  // the file's format is api/nodes_file.h's

class Nodes {
 public:
  Nodes(const kube::Client& client, std::string file) : client_(client), file_(std::move(file)) {}

  // Re-reads the file when it changed, creates or updates its nodes and deletes those that
  // left it; renews every node's Ready condition at most every 10 s. Whether it registered them
  // (the names and uids may have changed).
  bool Sync();
  void DeleteAll();
  bool Owns(const std::string& node) const { return names_.contains(node); }
  const std::set<std::string>& names() const { return names_; }
  // The registered nodes' uids, by name.
  const std::map<std::string, std::string>& uids() const { return uids_; }

 private:
  Status Register(const nlohmann::json& node);
  void Heartbeat(const std::string& name);

  const kube::Client& client_;
  std::string file_;
  long long mtime_ = -1;
  std::set<std::string> names_;
  std::map<std::string, std::string> uids_;
  std::chrono::steady_clock::time_point last_heartbeat_{};
};

}  // namespace pipescale::emulator

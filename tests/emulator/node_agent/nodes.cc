#include "node_agent/nodes.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "api/nodes_file.h"
#include "common/log.h"

namespace pipescale::emulator {
namespace {

using nlohmann::json;

long long MTime(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return -1;
  return static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
}

}  // namespace

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
  uids_[name] = (*spec)["metadata"].value("uid", "");
  auto status = client_.MergePatch(kube::ObjectPath(kube::kNodes, "", name, "status"),
                                   {{"status", node["status"]}});
  if (!status) return status.error();
  return Done();
}

void Nodes::Heartbeat(const std::string& name) {
  (void)client_.MergePatch(kube::ObjectPath(kube::kNodes, "", name, "status"),
                           {{"status", {{"conditions", api::NodeReadyConditions()}}}});
}

bool Nodes::Sync() {
  const long long mtime = MTime(file_);
  bool registered = false;
  if (mtime != mtime_) {
    auto nodes = ReadNodesFile(file_);
    if (!nodes) {
      Log("error", "nodes file", {{"error", nodes.error().message}});
      mtime_ = mtime;
      return false;
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
    std::erase_if(uids_, [&](const auto& entry) { return !fresh.contains(entry.first); });
    if (ok) mtime_ = mtime;  // else retry on the next sync
    last_heartbeat_ = std::chrono::steady_clock::now();
    Log("info", "nodes registered", {{"count", std::to_string(names_.size())}});
    registered = true;
  }
  if (std::chrono::steady_clock::now() - last_heartbeat_ > std::chrono::seconds(10)) {
    for (const std::string& name : names_) Heartbeat(name);
    last_heartbeat_ = std::chrono::steady_clock::now();
  }
  return registered;
}

void Nodes::DeleteAll() {
  for (const std::string& name : names_)
    (void)client_.Delete(kube::ObjectPath(kube::kNodes, "", name));
  names_.clear();
  uids_.clear();
}

}  // namespace pipescale::emulator

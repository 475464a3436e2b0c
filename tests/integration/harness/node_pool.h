// Emulated nodes of a test's own: a pipescale-node-agent with its own nodes file and its own
// pod network (127.<network>.x.y). Its nodes carry the label and the NoSchedule taint
// pipescale.io/pool=<name>, so only pods that select and tolerate the pool land there and a
// test's capacity is not shared with the rest of the cluster.
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "integration/harness/process.h"

namespace pipescale::testing {

class NodePool {
 public:
  // `nodes`: entries of the nodes file ({name, count, capacity, labels}); names are prefixed
  // with `name`, labels and taints added. `images` adds to the agent's image table
  // (image -> binary) beside the model server. `pool` (default `name`) is the label and taint:
  // agents of one pool run nodes a class admitted to it shares, and each can be lost alone.
  NodePool(const std::string& name, const nlohmann::json& nodes,
           const std::map<std::string, std::string>& images = {}, const std::string& pool = "");
  ~NodePool();  // stops the agent, which deletes its nodes

  // The nodes lost as a power cut loses them: the agent killed (SIGKILL), every process of their
  // pods with it, their Leases no longer renewed. Whether the agent was running.
  bool Lose();
  // The nodes back, as after a reboot: the agent again, which removes the pods deleted meanwhile
  // and starts those still bound to its nodes.
  void Return();
  // The nodes frozen, as a hung kernel or a partition freezes them: the agent and every process
  // of their pods stopped (SIGSTOP), their connections open and unanswered, their Leases stale.
  // Thaw() resumes them. Whether the agent was running.
  bool Freeze();
  void Thaw();
  NodePool(const NodePool&) = delete;
  NodePool& operator=(const NodePool&) = delete;

  // Rewrites the nodes file; the agent registers new nodes and deletes those gone.
  void SetNodes(const nlohmann::json& nodes);
  // A hardware class's nodeSelector and tolerations for the pool, merged into `hw`.
  nlohmann::json Admit(nlohmann::json hw) const;
  // Names of the pool's nodes that are registered and Ready now.
  int ReadyNodes() const;
  std::string Log() const { return agent_->Log(); }
  // What a container of a pod on the pool wrote (stdout and stderr).
  std::string ContainerLog(const std::string& ns, const std::string& pod,
                           const std::string& container) const;

 private:
  std::string name_, pool_;
  std::string file_;
  std::vector<std::string> argv_;
  int starts_ = 0;
  std::string work_dir_;
  std::unique_ptr<Process> agent_;
};

}  // namespace pipescale::testing

// The nodes' Leases in kube-node-lease, renewed every second on a thread of their own, as a
// kubelet renews its node's: the node lifecycle controller reads them to tell a live node from a
// lost one, so a stall of the agent's pod loop must not look like a lost node.
#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <string>

#include "kube/client.h"

namespace pipescale::emulator {

class NodeLeases {
 public:
  explicit NodeLeases(const kube::Client& client) : client_(client) {}

  // The nodes to renew (name -> uid, the Lease's owner, so it goes with its Node).
  void Set(std::map<std::string, std::string> nodes);
  // Renews every node's Lease each second until `stop`.
  void Run(const std::atomic<bool>& stop);

 private:
  void Renew(const std::string& node, const std::string& uid);

  const kube::Client& client_;
  std::mutex mu_;
  std::map<std::string, std::string> nodes_;
};

}  // namespace pipescale::emulator

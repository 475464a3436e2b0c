#include "integration/harness/node_pool.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "integration/harness/local_env.h"
#include "kube/client.h"

namespace pipescale::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

const char* kPoolKey = "pipescale.io/pool";

}  // namespace

NodePool::NodePool(const std::string& name, const json& nodes,
                   const std::map<std::string, std::string>& images, const std::string& pool)
    : name_(name),
      pool_(pool.empty() ? name : pool),
      file_(::testing::TempDir() + "/nodes-" + name + ".yaml"),
      work_dir_(::testing::TempDir() + "/pods-" + name) {
  SetNodes(nodes);
  const LocalEnv& env = LocalEnv::Get();
  const std::string bin = env.Var("PIPESCALE_EMULATORS");
  // A pod network of the agent's own, apart from the cluster's agent (network 1).
  const int network = 2 + static_cast<int>(std::hash<std::string>()(name) % 250);
  argv_ = {bin + "/pipescale-node-agent",
           "--kubeconfig",
           env.Var("KUBECONFIG"),
           "--nodes",
           file_,
           "--work-dir",
           work_dir_,
           "--network",
           std::to_string(network),
           "--delete-nodes-on-exit",
           "--image",
           "pipescale/model-server=" + bin + "/pipescale-model-server"};
  for (const auto& [image, binary] : images) {
    argv_.push_back("--image");
    argv_.push_back(image + "=" + binary);
  }
  Return();
}

NodePool::~NodePool() { (void)agent_->Stop(SIGTERM, 30s); }

bool NodePool::Lose() {
  const bool running = agent_->Running();
  (void)agent_->Stop(SIGKILL, 10s);
  return running;
}

namespace {

// The agent and the processes of its pods (its children), agent first.
std::vector<pid_t> AgentAndPods(pid_t agent) {
  std::vector<pid_t> out = {agent};
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    std::getline(stat, line);
    // pid (comm) state ppid ...: comm may hold spaces, so read past its closing parenthesis.
    const size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 1));
    std::string state;
    pid_t ppid = 0;
    if (rest >> state >> ppid && ppid == agent) out.push_back(std::stoi(name));
  }
  return out;
}

}  // namespace

bool NodePool::Freeze() {
  if (!agent_->Running()) return false;
  for (const pid_t pid : AgentAndPods(agent_->pid())) kill(pid, SIGSTOP);
  return true;
}

void NodePool::Thaw() {
  for (const pid_t pid : AgentAndPods(agent_->pid())) kill(pid, SIGCONT);
}

void NodePool::Return() {
  const std::string log = ::testing::TempDir() + "/node-agent-" + name_ +
                          (starts_++ > 0 ? "-" + std::to_string(starts_) : "") + ".log";
  agent_ = std::make_unique<Process>(argv_, log);
}

void NodePool::SetNodes(const json& nodes) {
  json entries = json::array();
  for (json n : nodes) {
    n["name"] = name_ + "-" + n.value("name", "node");
    n["labels"][kPoolKey] = pool_;
    n["taints"] = json::array({{{"key", kPoolKey}, {"value", pool_}, {"effect", "NoSchedule"}}});
    entries.push_back(n);
  }
  // Written whole and renamed, so the agent never reads half a file.
  std::ofstream(file_ + ".tmp") << json{{"nodes", entries}}.dump();
  std::filesystem::rename(file_ + ".tmp", file_);
}

json NodePool::Admit(json hw) const {
  hw["nodeSelector"][kPoolKey] = pool_;
  if (!hw["tolerations"].is_array()) hw["tolerations"] = json::array();
  hw["tolerations"].push_back(
      {{"key", kPoolKey}, {"operator", "Equal"}, {"value", pool_}, {"effect", "NoSchedule"}});
  return hw;
}

std::string NodePool::ContainerLog(const std::string& ns, const std::string& pod,
                                   const std::string& container) const {
  std::ifstream in(work_dir_ + "/" + ns + "_" + pod + "/" + container + ".log");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

int NodePool::ReadyNodes() const {
  const kube::Client client(LocalEnv::Get().Config());
  auto nodes = client.Get("/api/v1/nodes?labelSelector=" + kube::QueryEscape(kPoolKey) + "%3D" +
                          kube::QueryEscape(pool_));
  if (!nodes.ok()) return -1;
  int ready = 0;
  for (const json& node : (*nodes)["items"]) {
    for (const json& c : node["status"].value("conditions", json::array())) {
      if (c.value("type", "") == "Ready" && c.value("status", "") == "True") ++ready;
    }
  }
  return ready;
}

}  // namespace pipescale::testing

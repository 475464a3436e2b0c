// pipescale-node-agent: test and demo tooling only, never needed in a real cluster. It plays
// the kubelet for emulated nodes so that the local cluster runs real Pods: see agent.h.
//
//   pipescale-node-agent --kubeconfig F --nodes NODES.yaml --work-dir DIR
//       --image NAME=BINARY [--image ...] [--network N] [--delete-nodes-on-exit]
#include <signal.h>

#include <cstdio>
#include <filesystem>
#include <thread>

#include "common/flags.h"
#include "kube/config.h"
#include "node_agent/agent.h"

int main(int argc, char** argv) {
  using namespace pipescale;
  emulator::AgentOptions options;
  std::string kubeconfig;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    const std::string value = i + 1 < argc ? argv[i + 1] : "";
    if (flag == "--delete-nodes-on-exit") {
      options.delete_nodes_on_exit = true;
      continue;
    }
    ++i;
    if (flag == "--kubeconfig") {
      kubeconfig = value;
    } else if (flag == "--nodes") {
      options.nodes_file = value;
    } else if (flag == "--work-dir") {
      options.work_dir = value;
    } else if (flag == "--network") {
      auto network = ParseInteger(flag, value, 1, 254);
      if (!network) {
        std::fprintf(stderr, "%s\n", network.error().message.c_str());
        return 2;
      }
      options.network = *network;
    } else if (flag == "--image" && value.find('=') != std::string::npos) {
      options.images[value.substr(0, value.find('='))] = value.substr(value.find('=') + 1);
    } else {
      std::fprintf(stderr, "unknown or malformed flag %s\n", flag.c_str());
      return 2;
    }
  }
  if (kubeconfig.empty() || options.nodes_file.empty() || options.work_dir.empty()) {
    std::fprintf(stderr,
                 "usage: pipescale-node-agent --kubeconfig F --nodes FILE --work-dir DIR "
                 "--image NAME=BINARY... [--network 1-254] [--delete-nodes-on-exit]\n");
    return 2;
  }
  auto config = kube::LoadKubeconfig(kubeconfig);
  if (!config) {
    std::fprintf(stderr, "%s\n", config.error().message.c_str());
    return 1;
  }
  if (auto nodes = emulator::ReadNodesFile(options.nodes_file); !nodes) {
    std::fprintf(stderr, "%s\n", nodes.error().message.c_str());
    return 2;
  }
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  std::filesystem::create_directories(options.work_dir);
  const kube::Client client(*config);
  emulator::Agent agent(client, options);
  std::atomic<bool> stop{false};
  std::thread run([&] { agent.Run(stop); });
  int signal = 0;
  sigwait(&signals, &signal);
  stop = true;
  run.join();
  return 0;
}

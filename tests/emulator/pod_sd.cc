// pipescale-pod-sd: test and demo tooling. Debian's Prometheus is built without
// kubernetes_sd_configs, so this serves the same targets over http_sd_configs: one per
// container port of every Pod with an address, labelled with the __meta_kubernetes_pod_*
// labels Prometheus's pod role would give it, so a real cluster's relabel rules carry over.
//
//   pipescale-pod-sd --kubeconfig F --port-file F   (listens on 127.0.0.1, a free port)
#include <civetweb.h>
#include <signal.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "kube/config.h"
#include "kube/informer.h"

namespace {

using namespace pipescale;
using nlohmann::json;

std::string Sanitize(const std::string& name) {
  std::string out = name;
  for (char& c : out) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
  }
  return out;
}

json PodLabels(const json& pod) {
  const json& meta = pod["metadata"];
  const json& status = pod.value("status", json::object());
  std::string ready = "unknown";
  for (const json& c : status.value("conditions", json::array())) {
    if (c.value("type", "") == "Ready") ready = c.value("status", "") == "True" ? "true" : "false";
  }
  json labels = {{"__meta_kubernetes_namespace", meta.value("namespace", "")},
                 {"__meta_kubernetes_pod_name", meta.value("name", "")},
                 {"__meta_kubernetes_pod_uid", meta.value("uid", "")},
                 {"__meta_kubernetes_pod_ip", status.value("podIP", "")},
                 {"__meta_kubernetes_pod_host_ip", status.value("hostIP", "")},
                 {"__meta_kubernetes_pod_node_name", pod["spec"].value("nodeName", "")},
                 {"__meta_kubernetes_pod_phase", status.value("phase", "")},
                 {"__meta_kubernetes_pod_ready", ready}};
  for (const char* kind : {"label", "annotation"}) {
    const json& map = meta.value(std::string(kind) + "s", json::object());
    for (const auto& [k, v] : map.items()) {
      const std::string name = Sanitize(k);
      labels["__meta_kubernetes_pod_" + std::string(kind) + "_" + name] = v;
      labels["__meta_kubernetes_pod_" + std::string(kind) + "present_" + name] = "true";
    }
  }
  for (const json& owner : meta.value("ownerReferences", json::array())) {
    if (!owner.value("controller", false)) continue;
    labels["__meta_kubernetes_pod_controller_kind"] = owner.value("kind", "");
    labels["__meta_kubernetes_pod_controller_name"] = owner.value("name", "");
  }
  return labels;
}

// Prometheus's pod role: a target per declared container port, else one per container at the
// bare pod address.
json Targets(const std::vector<json>& pods) {
  json groups = json::array();
  for (const json& pod : pods) {
    const std::string ip = pod.value("status", json::object()).value("podIP", "");
    if (ip.empty()) continue;
    const json base = PodLabels(pod);
    for (const json& c : pod["spec"].value("containers", json::array())) {
      json labels = base;
      labels["__meta_kubernetes_pod_container_name"] = c.value("name", "");
      labels["__meta_kubernetes_pod_container_image"] = c.value("image", "");
      labels["__meta_kubernetes_pod_container_init"] = "false";
      const json ports = c.value("ports", json::array());
      if (ports.empty()) groups.push_back({{"targets", {ip}}, {"labels", labels}});
      for (const json& p : ports) {
        json l = labels;
        const int port = p.value("containerPort", 0);
        l["__meta_kubernetes_pod_container_port_name"] = p.value("name", "");
        l["__meta_kubernetes_pod_container_port_number"] = std::to_string(port);
        l["__meta_kubernetes_pod_container_port_protocol"] = p.value("protocol", "TCP");
        groups.push_back({{"targets", {ip + ":" + std::to_string(port)}}, {"labels", l}});
      }
    }
  }
  return groups;
}

int OnTargets(mg_connection* conn, void* data) {
  const auto* pods = static_cast<kube::Informer*>(data);
  const std::string body = Targets(pods->List()).dump();
  mg_printf(conn,
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
            body.size());
  mg_write(conn, body.data(), body.size());
  return 200;
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> flags;
  for (int i = 1; i + 1 < argc; i += 2) flags[argv[i]] = argv[i + 1];
  if (!flags.contains("--kubeconfig") || !flags.contains("--port-file")) {
    std::fprintf(stderr, "usage: pipescale-pod-sd --kubeconfig F --port-file F\n");
    return 2;
  }
  auto config = kube::LoadKubeconfig(flags["--kubeconfig"]);
  if (!config) {
    std::fprintf(stderr, "%s\n", config.error().message.c_str());
    return 1;
  }
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  const kube::Client client(*config);
  kube::Informer pods(client, {.type = {"v1", "pods", true}}, [](const auto&, const auto&) {});
  pods.Start();
  const char* options[] = {"listening_ports", "127.0.0.1:0", "num_threads", "4", nullptr};
  mg_callbacks callbacks{};
  mg_context* ctx = mg_start(&callbacks, nullptr, options);
  if (ctx == nullptr) {
    std::fprintf(stderr, "cannot listen\n");
    return 1;
  }
  mg_set_request_handler(ctx, "/", OnTargets, &pods);
  mg_server_port ports[1];
  mg_get_server_ports(ctx, 1, ports);
  const std::string file = flags["--port-file"];
  std::ofstream(file + ".tmp") << ports[0].port << "\n";
  std::rename((file + ".tmp").c_str(), file.c_str());
  int signal = 0;
  sigwait(&signals, &signal);
  mg_stop(ctx);
  pods.Stop();
  return 0;
}

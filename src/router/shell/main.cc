// pipescale-router: one pipeline's front door. Clients send Open Inference Protocol requests
// to the pipeline as one model; the router walks its DAG over the model pods and measures
// every path.
//
//   pipescale-router --pipeline-file FILE --endpoints TASK=IP:PORT[,IP:PORT][;TASK=...]
//       [--listen 0.0.0.0:8080] [--metrics-listen 0.0.0.0:9090] [--threads N] [--port-file F]
//       [--grace-ms 50] [--max-in-flight 4096]
// SIGTERM stops accepting, finishes the requests in flight (up to 25 s) and exits 0.
#include <prometheus/exposer.h>
#include <prometheus/registry.h>

#include <csignal>
#include <fstream>
#include <iostream>
#include <map>
#include <thread>

#include "api/pipeline_parse.h"
#include "router/shell/server.h"

namespace {

using pipescale::router::Endpoint;
using pipescale::router::Graph;
using pipescale::router::RouterConfig;
using pipescale::router::RouterMetrics;
using pipescale::router::Server;

// "detect=127.0.0.2:8080,127.0.0.3:8080;classify=127.0.0.4:8080"
bool ParseEndpoints(const std::string& text, RouterConfig& config) {
  std::stringstream tasks(text);
  for (std::string item; std::getline(tasks, item, ';');) {
    const auto eq = item.find('=');
    if (eq == std::string::npos) return false;
    auto& pods = config.endpoints[item.substr(0, eq)];
    std::stringstream addresses(item.substr(eq + 1));
    for (std::string a; std::getline(addresses, a, ',');) {
      auto e = std::make_unique<Endpoint>();
      e->address = a;
      pods.push_back(std::move(e));
    }
  }
  return true;
}

std::pair<std::string, unsigned short> HostPort(const std::string& text) {
  const auto colon = text.rfind(':');
  return {text.substr(0, colon), static_cast<unsigned short>(std::atoi(text.c_str() + colon + 1))};
}

int Run(std::map<std::string, std::string> flags) {
  auto parsed = pipescale::api::ParsePipelineFile(flags["--pipeline-file"]);
  if (!parsed.pipeline) {
    std::cerr << "pipescale-router: " << flags["--pipeline-file"] << ": "
              << (parsed.errors.empty() ? "invalid" : parsed.errors[0].ToString()) << "\n";
    return 2;
  }
  RouterConfig config{.pipeline = parsed.pipeline->name,
                      .namespace_name = parsed.pipeline->namespace_name,
                      .graph = Graph(*parsed.pipeline)};
  if (!ParseEndpoints(flags["--endpoints"], config)) {
    std::cerr << "pipescale-router: --endpoints must read TASK=IP:PORT[,IP:PORT][;TASK=...]\n";
    return 2;
  }
  config.grace = std::chrono::milliseconds(std::atoi(flags["--grace-ms"].c_str()));
  config.max_in_flight = std::atoi(flags["--max-in-flight"].c_str());

  auto registry = std::make_shared<prometheus::Registry>();
  RouterMetrics metrics(*registry, config);
  prometheus::Exposer exposer(flags["--metrics-listen"]);
  exposer.RegisterCollectable(registry);

  Server server(config, metrics, std::atoi(flags["--threads"].c_str()));
  const auto [host, port] = HostPort(flags["--listen"]);
  auto bound = server.Listen(host, port);
  if (!bound) {
    std::cerr << "pipescale-router: " << bound.error().message << "\n";
    return 1;
  }
  if (!flags["--port-file"].empty()) {
    std::ofstream(flags["--port-file"] + ".tmp")
        << *bound << " " << exposer.GetListeningPorts().front() << "\n";
    std::rename((flags["--port-file"] + ".tmp").c_str(), flags["--port-file"].c_str());
  }
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  server.Start();
  std::cerr << "pipescale-router: serving pipeline " << config.pipeline << " on " << host << ":"
            << *bound << "\n";
  int signal = 0;
  sigwait(&signals, &signal);
  server.Drain(std::chrono::seconds(25));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> flags = {
      {"--listen", "0.0.0.0:8080"}, {"--metrics-listen", "0.0.0.0:9090"},
      {"--threads", "1"},           {"--grace-ms", "50"},
      {"--max-in-flight", "4096"},  {"--port-file", ""},
      {"--pipeline-file", ""},      {"--endpoints", ""}};
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    if (auto eq = arg.find('='); eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    } else if (i + 1 < argc) {
      value = argv[++i];
    }
    if (!flags.contains(arg)) {
      std::cerr << "pipescale-router: unknown flag " << arg << "\n";
      return 2;
    }
    flags[arg] = value;
  }
  return Run(flags);
}

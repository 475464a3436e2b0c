// pipescale-router: one pipeline's front door. Clients send Open Inference Protocol requests
// to the pipeline as one model; the router walks its DAG over the model pods and measures
// every path.
//
//   pipescale-router (--pipeline NAME --namespace NS | --pipeline-file FILE)
//       [--endpoints TASK=IP:PORT[@VARIANT[/CLASS[/BATCH]]][,...][;TASK=...]] [--kubeconfig F]
//       [--listen 0.0.0.0:8080] [--metrics-listen 0.0.0.0:9090] [--threads N] [--port-file F]
//       [--grace-ms 50] [--max-in-flight 4096] [--drain-seconds 5] [--routing-file F]
//       [--drop-policy none|last-task|per-task|reroute] [--pools-file F]
//       [--pool-dispatch matching|fcfs] [--spill on|off] [--batching-file F]
//       [--admission on|off] [--max-body-bytes 4194304]
// The pipeline comes from the file, else from its routing ConfigMap, and a Loki plan's tables
// (MostAccurateFirst routing, backups) from the ConfigMap's routing.json or
// --routing-file; requests that fall behind are handled by --drop-policy. A Kairos or MArk
// plan's pools come from pools.json or --pools-file: Kairos's matcher runs each pool (or, to
// compare, first come first served), MArk's main classes spill to the burst class (unless
// --spill off). Variants whose batches the router forms (batching.json or --batching-file) have
// their requests queued and sent in batches of the plan's size. A request for a named path that
// the pods' queues would serve past its SLO is refused at once with 503 and Retry-After, and one
// whose path has a task without a Ready pod waits for it within its deadline (unless
// --admission off). A body past --max-body-bytes is answered 413. The pods come from
// --endpoints, else from the cluster (the kubeconfig, $KUBECONFIG or the pod's service
// account), followed as they change. SIGTERM drains: the router serves on for --drain-seconds
// while it reports not ready and closes connections after each answer (clients move to another
// replica), then stops accepting, finishes the requests in flight (up to 20 s) and exits 0;
// both fit in a pod's default 30 s grace period.
#include <prometheus/exposer.h>
#include <prometheus/registry.h>

#include <charconv>
#include <csignal>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <thread>

#include "api/pipeline_parse.h"
#include "common/file.h"
#include "discovery.h"
#include "kube/config.h"
#include "metrics/panics.h"
#include "server.h"

namespace {

using pipescale::router::Discovery;
using pipescale::router::MakeTable;
using pipescale::router::PodEndpoint;
using pipescale::router::RouterConfig;
using pipescale::router::RouterMetrics;
using pipescale::router::RoutingTable;
using pipescale::router::Server;
using Flags = std::map<std::string, std::string>;

// "detect=127.0.0.2:8080,127.0.0.3:8080;classify=127.0.0.4:8080@b7/gpu/8", where "@VARIANT"
// names the variant a pod serves (Loki's tables route by variant), "/CLASS" its hardware class
// and "/BATCH" its batch size (the pools cost replicas by both), each profiled by `pipeline`.
std::optional<std::map<std::string, std::vector<PodEndpoint>>> ParseEndpoints(
    const std::string& text, const pipescale::model::Pipeline& pipeline) {
  std::map<std::string, std::vector<PodEndpoint>> out;
  std::stringstream tasks(text);
  for (std::string item; std::getline(tasks, item, ';');) {
    const auto eq = item.find('=');
    if (eq == std::string::npos) return std::nullopt;
    const std::string task = item.substr(0, eq);
    auto& pods = out[task];
    std::stringstream addresses(item.substr(eq + 1));
    for (std::string a; std::getline(addresses, a, ',');) {
      const auto at = a.find('@');
      PodEndpoint pod{.name = a.substr(0, at), .address = a.substr(0, at)};
      std::stringstream rest(at == std::string::npos ? "" : a.substr(at + 1));
      std::string batch;
      std::getline(rest, pod.variant, '/');
      std::getline(rest, pod.hardware_class, '/');
      std::getline(rest, batch, '/');
      pod.batch = std::max(1, std::atoi(batch.c_str()));
      Profile(pipeline, task, pod);
      pods.push_back(std::move(pod));
    }
  }
  return out;
}

// --routing-file (a Loki plan's routing.json), --pools-file (a Kairos or MArk plan's
// pools.json) and --batching-file (the batches the router forms, batching.json), for a router
// not reading them from its ConfigMap; false after saying why.
bool ReadParts(Flags& flags, const pipescale::model::Pipeline& pipeline,
               pipescale::router::DataPlaneParts& parts) {
  for (const std::string flag : {"--routing-file", "--pools-file", "--batching-file"}) {
    if (flags[flag].empty()) continue;
    const auto text = pipescale::ReadFileText(flags[flag]);
    std::string error = text ? "" : "cannot be read";
    if (text && flag == "--routing-file") {
      parts.loki = pipescale::router::ReadLoki(*text, pipeline, error);
    } else if (text && flag == "--pools-file") {
      parts.pools = pipescale::router::ReadPools(*text, error);
    } else if (text) {
      parts.batches = pipescale::router::ReadBatches(*text, error);
    }
    if (!error.empty()) {
      std::cerr << "pipescale-router: " << flags[flag] << ": " << error << "\n";
      return false;
    }
  }
  return true;
}

std::pair<std::string, unsigned short> HostPort(const std::string& text) {
  const auto colon = text.rfind(':');
  return {text.substr(0, colon), static_cast<unsigned short>(std::atoi(text.c_str() + colon + 1))};
}

// The pipeline named by the flags: its file's, or its name and namespace alone.
bool ReadPipeline(Flags& flags, std::optional<pipescale::model::Pipeline>& file) {
  if (flags["--pipeline-file"].empty()) {
    if (!flags["--pipeline"].empty()) return true;
    std::cerr << "pipescale-router: --pipeline NAME or --pipeline-file FILE is required\n";
    return false;
  }
  auto parsed = pipescale::api::ParsePipelineFile(flags["--pipeline-file"]);
  if (!parsed.pipeline) {
    std::cerr << "pipescale-router: " << flags["--pipeline-file"] << ": "
              << (parsed.errors.empty() ? "invalid" : parsed.errors[0].ToString()) << "\n";
    return false;
  }
  file = parsed.pipeline;
  flags["--pipeline"] = file->name;
  flags["--namespace"] = file->namespace_name;
  return true;
}

void WritePortFile(const std::string& file, unsigned short port, unsigned short metrics) {
  if (file.empty()) return;
  std::ofstream(file + ".tmp") << port << " " << metrics << "\n";
  std::rename((file + ".tmp").c_str(), file.c_str());
}

// SIGTERM and SIGINT, blocked in every thread from the start (threads inherit the mask of
// the thread that creates them), so they reach only sigwait; one that comes while the router
// drains stays pending instead of killing it.
const sigset_t& TerminationSignals() {
  static const sigset_t kSignals = [] {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGTERM);
    sigaddset(&s, SIGINT);
    return s;
  }();
  return kSignals;
}

int Serve(RouterConfig& config, Flags& flags, RouterMetrics& metrics, unsigned short metrics_port) {
  Server server(config, metrics, std::atoi(flags["--threads"].c_str()));
  const auto [host, port] = HostPort(flags["--listen"]);
  auto bound = server.Listen(host, port);
  if (!bound) {
    std::cerr << "pipescale-router: " << bound.error().message << "\n";
    return 1;
  }
  WritePortFile(flags["--port-file"], *bound, metrics_port);
  server.Start();
  std::cerr << "pipescale-router: serving pipeline " << config.namespace_name << "/"
            << config.pipeline << " on " << host << ":" << *bound << "\n";
  int signal = 0;
  sigwait(&TerminationSignals(), &signal);
  server.Drain(std::chrono::seconds(std::atoi(flags["--drain-seconds"].c_str())),
               std::chrono::seconds(20));
  return 0;
}

int Run(Flags flags) {
  std::optional<pipescale::model::Pipeline> file;
  if (!ReadPipeline(flags, file)) return 2;
  RouterConfig config{.pipeline = flags["--pipeline"], .namespace_name = flags["--namespace"]};
  config.grace = std::chrono::milliseconds(std::atoi(flags["--grace-ms"].c_str()));
  config.max_in_flight = std::atoi(flags["--max-in-flight"].c_str());
  const auto drop_policy = pipescale::router::ParseDropPolicy(flags["--drop-policy"]);
  if (!drop_policy) {
    std::cerr << "pipescale-router: --drop-policy must be none, last-task, per-task or reroute\n";
    return 2;
  }
  config.drop_policy = *drop_policy;
  if (flags["--pool-dispatch"] != "matching" && flags["--pool-dispatch"] != "fcfs") {
    std::cerr << "pipescale-router: --pool-dispatch must be matching or fcfs\n";
    return 2;
  }
  config.fcfs = flags["--pool-dispatch"] == "fcfs";
  if (flags["--spill"] != "on" && flags["--spill"] != "off") {
    std::cerr << "pipescale-router: --spill must be on or off\n";
    return 2;
  }
  config.spill = flags["--spill"] == "on";
  if (flags["--admission"] != "on" && flags["--admission"] != "off") {
    std::cerr << "pipescale-router: --admission must be on or off\n";
    return 2;
  }
  config.admission = flags["--admission"] == "on";
  const std::string& max_body_flag = flags["--max-body-bytes"];
  std::int64_t max_body = 0;
  const auto [end, error] =
      std::from_chars(max_body_flag.data(), max_body_flag.data() + max_body_flag.size(), max_body);
  if (error != std::errc() || end != max_body_flag.data() + max_body_flag.size() ||
      max_body < pipescale::api::limits::kMinBodyBytes ||
      max_body > pipescale::api::limits::kMaxBodyBytes) {
    std::cerr << "pipescale-router: --max-body-bytes must be an integer from "
              << pipescale::api::limits::kMinBodyBytes << " to "
              << pipescale::api::limits::kMaxBodyBytes << "\n";
    return 2;
  }
  config.max_body_bytes = static_cast<size_t>(max_body);
  auto registry = std::make_shared<prometheus::Registry>();
  RouterMetrics metrics(*registry, config);
  prometheus::Exposer exposer(flags["--metrics-listen"]);
  exposer.RegisterCollectable(registry);
  // The exposer holds collectables by weak_ptr: this one must live as long as it, or
  // pipescale_panics_total is never served.
  const auto panics = std::make_shared<pipescale::metrics::PanicCollector>();
  exposer.RegisterCollectable(panics);
  const unsigned short metrics_port = exposer.GetListeningPorts().front();

  if (!flags["--endpoints"].empty()) {
    const auto pods = file ? ParseEndpoints(flags["--endpoints"], *file) : std::nullopt;
    if (!pods) {
      std::cerr << "pipescale-router: --endpoints must read "
                   "TASK=IP:PORT[@VARIANT[/CLASS[/BATCH]]][,...][;TASK=...] "
                   "and needs --pipeline-file\n";
      return 2;
    }
    pipescale::router::DataPlaneParts parts;
    if (!ReadParts(flags, *file, parts)) return 2;
    pipescale::router::Known known;
    config.table.store(MakeTable(*file, *pods, known, parts, config.fcfs));
    metrics.Declare(config.table.load()->graph);
    return Serve(config, flags, metrics, metrics_port);
  }
  auto cluster = pipescale::kube::LoadClusterConfig(flags["--kubeconfig"]);
  if (!cluster) {
    std::cerr << "pipescale-router: " << cluster.error().message << "\n";
    return 2;
  }
  const pipescale::kube::Client client(*cluster);
  Discovery discovery(client, config, file,
                      [&metrics](const RoutingTable& table) { metrics.Declare(table.graph); });
  discovery.Start();
  // Serve at once: until the pipeline and its pods are known, requests get 503 and the
  // readiness probe fails, so no Service sends any here.
  return Serve(config, flags, metrics, metrics_port);
}

}  // namespace

int main(int argc, char** argv) {
  pthread_sigmask(SIG_BLOCK, &TerminationSignals(), nullptr);
  Flags flags = {
      {"--listen", "0.0.0.0:8080"},
      {"--metrics-listen", "0.0.0.0:9090"},
      {"--threads", "1"},
      {"--grace-ms", "50"},
      {"--max-in-flight", "4096"},
      {"--port-file", ""},
      {"--pipeline-file", ""},
      {"--pipeline", ""},
      {"--namespace", "default"},
      {"--kubeconfig", ""},
      {"--endpoints", ""},
      {"--drain-seconds", "5"},
      {"--routing-file", ""},
      {"--drop-policy", "reroute"},
      {"--pools-file", ""},
      {"--pool-dispatch", "matching"},
      {"--spill", "on"},
      {"--admission", "on"},
      {"--max-body-bytes", std::to_string(pipescale::model::RouterSpec{}.max_body_bytes)},
      {"--batching-file", ""}};
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

// pipescale-router: one pipeline's front door. Clients send Open Inference Protocol requests
// to the pipeline as one model; the router walks its DAG over the model pods and measures
// every path.
//
//   pipescale-router (--pipeline NAME --namespace NS | --pipeline-file FILE)
//       [--endpoints TASK=IP:PORT[@VARIANT[/CLASS[/BATCH[/NODE]]]][,...][;TASK=...]]
//       [--kubeconfig F]
//       [--listen 0.0.0.0:8080] [--metrics-listen 0.0.0.0:9090] [--threads N] [--port-file F]
//       [--grace-ms 50] [--max-in-flight 4096] [--drain-seconds 5] [--routing-file F]
//       [--drop-policy none|last-task|per-task|reroute] [--pools-file F]
//       [--pool-dispatch matching|fcfs] [--spill on|off] [--batching-file F]
//       [--admission on|off] [--max-body-bytes 4194304] [--peers on|off]
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
// account), followed as they change; the router replicas found there tell each other their calls
// outstanding at each pod over UDP on the --listen port (unless --peers off), so that each reads
// a pod's whole queue. SIGTERM drains: the router serves on for --drain-seconds
// while it reports not ready and closes connections after each answer (clients move to another
// replica), then stops accepting, finishes the requests in flight (up to 20 s, or the longest a
// path holds a request where that is longer: model::RouterFinishSeconds) and exits 0; the
// operator gives its pods the grace period both take. A numeric flag or an address that is not one,
// or out of range, exits 2 naming the flag (common/flags.h): --threads in [1, 64],
// --drain-seconds in [0, 3600], --grace-ms in [0, 60000], --max-in-flight in [1, 1000000].
#include <prometheus/exposer.h>
#include <prometheus/registry.h>

#include <cmath>
#include <csignal>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

#include "api/pipeline_parse.h"
#include "api/router_objects.h"
#include "common/file.h"
#include "common/flags.h"
#include "discovery.h"
#include "kube/config.h"
#include "metrics.h"
#include "metrics/panics.h"
#include "model/pipeline.h"
#include "server.h"

namespace {

using pipescale::router::Discovery;
using pipescale::router::MakeTable;
using pipescale::router::RouterConfig;
using pipescale::router::RouterMetrics;
using pipescale::router::RoutingTable;
using pipescale::router::Server;
using pipescale::routing::PodEndpoint;
using Flags = std::map<std::string, std::string>;

constexpr const char* kEndpointsSyntax =
    "TASK=IP:PORT[@VARIANT[/CLASS[/BATCH[/NODE]]]][,...][;TASK=...]";

// One pod of --endpoints: "127.0.0.4:8080@b7/gpu/8/node-1".
pipescale::Result<PodEndpoint> ParsePod(const std::string& text) {
  const auto at = text.find('@');
  PodEndpoint pod{.name = text.substr(0, at), .address = text.substr(0, at)};
  if (auto address = pipescale::ParseHostPort("--endpoints", pod.address, 1); !address) {
    return address.error();
  }
  std::stringstream rest(at == std::string::npos ? "" : text.substr(at + 1));
  std::string batch;
  std::getline(rest, pod.variant, '/');
  std::getline(rest, pod.hardware_class, '/');
  std::getline(rest, batch, '/');
  std::getline(rest, pod.node, '/');
  if (!batch.empty()) {
    auto b = pipescale::ParseInteger("--endpoints", batch, 1, pipescale::api::limits::kMaxBatch);
    if (!b) return b.error();
    pod.batch = *b;
  }
  return pod;
}

// "detect=127.0.0.2:8080,127.0.0.3:8080;classify=127.0.0.4:8080@b7/gpu/8", where "@VARIANT"
// names the variant a pod serves (Loki's tables route by variant), "/CLASS" its hardware class,
// "/BATCH" its batch size (the pools cost replicas by both) and "/NODE" the node it runs on
// (a pod that hangs makes its node's others suspect), each profiled by `pipeline` when there
// is one.
pipescale::Result<std::map<std::string, std::vector<PodEndpoint>>> ParseEndpoints(
    const std::string& text, const pipescale::model::Pipeline* pipeline) {
  std::map<std::string, std::vector<PodEndpoint>> out;
  std::stringstream tasks(text);
  for (std::string item; std::getline(tasks, item, ';');) {
    const auto eq = item.find('=');
    if (eq == std::string::npos) return pipescale::FlagError("--endpoints", kEndpointsSyntax, item);
    const std::string task = item.substr(0, eq);
    auto& pods = out[task];
    std::stringstream addresses(item.substr(eq + 1));
    for (std::string a; std::getline(addresses, a, ',');) {
      auto pod = ParsePod(a);
      if (!pod) return pod.error();
      if (pipeline != nullptr) pipescale::routing::Profile(*pipeline, task, *pod);
      pods.push_back(std::move(*pod));
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
      parts.loki = pipescale::router::LokiPartOf(*text, pipeline, error);
    } else if (text && flag == "--pools-file") {
      parts.pools = pipescale::router::PoolsPartOf(*text, error);
    } else if (text) {
      parts.batches = pipescale::router::BatchesPartOf(*text, error);
    }
    if (!error.empty()) {
      std::cerr << "pipescale-router: " << flags[flag] << ": " << error << "\n";
      return false;
    }
  }
  return true;
}

// The numbers and addresses of the flags, read before anything starts.
struct Numbers {
  pipescale::HostPort listen;
  int threads = 1;
  int drain_seconds = 5;
  int grace_ms = 50;
  int max_in_flight = 4096;
  std::int64_t max_body_bytes = 0;
};

// Every numeric flag (and address) checked, so that a typo is refused with the flag's name
// instead of read as 0 (`--max-in-flight x` answered every request 503) or a random port.
pipescale::Result<Numbers> ReadNumbers(Flags& flags) {
  using pipescale::ParseInteger;
  Numbers n;
  auto listen = pipescale::ParseHostPort("--listen", flags["--listen"], 0);
  if (!listen) return listen.error();
  n.listen = *listen;
  if (auto m = pipescale::ParseHostPort("--metrics-listen", flags["--metrics-listen"], 0); !m) {
    return m.error();
  }
  struct IntFlag {
    const char* name;
    int min, max;
    int* value;
  };
  // Threads as spec.router.threads allows; the drain within an hour, the grace within a minute.
  for (const IntFlag& f : {IntFlag{"--threads", 1, 64, &n.threads},
                           IntFlag{"--drain-seconds", 0, 3600, &n.drain_seconds},
                           IntFlag{"--grace-ms", 0, 60000, &n.grace_ms},
                           IntFlag{"--max-in-flight", 1, 1000000, &n.max_in_flight}}) {
    auto parsed = ParseInteger(f.name, flags[f.name], f.min, f.max);
    if (!parsed) return parsed.error();
    *f.value = *parsed;
  }
  auto body =
      ParseInteger("--max-body-bytes", flags["--max-body-bytes"],
                   pipescale::api::limits::kMinBodyBytes, pipescale::api::limits::kMaxBodyBytes);
  if (!body) return body.error();
  n.max_body_bytes = *body;
  if (!flags["--endpoints"].empty()) {
    if (auto pods = ParseEndpoints(flags["--endpoints"], nullptr); !pods) return pods.error();
  }
  return n;
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

// The link to the other router replicas, on UDP at the address the router serves HTTP on; null
// when it cannot be bound (the router then reads a pod's queue as its own share of it).
std::shared_ptr<pipescale::router::PeerLink> OpenPeers(const pipescale::HostPort& listen,
                                                       RouterConfig& config,
                                                       RouterMetrics& metrics) {
  auto link = pipescale::router::PeerLink::Open(listen.host, listen.port);
  if (!link) {
    std::cerr << "pipescale-router: not sharing counts with the other replicas: "
              << link.error().message << "\n";
    return nullptr;
  }
  std::shared_ptr<pipescale::router::PeerLink> shared = std::move(*link);
  // A pool replica the others freed may take a query waiting here.
  const auto rematch = [&config] {
    const std::shared_ptr<const RoutingTable> table = config.table.load();
    if (!table) return;
    for (const pipescale::router::TaskPool& pool : table->pools) {
      if (pool.matcher) pool.matcher->Rematch();
    }
  };
  shared->Start([&gauge = metrics.peers()](int peers) { gauge.Set(peers); }, rematch);
  return shared;
}

int Serve(RouterConfig& config, Flags& flags, const Numbers& numbers, RouterMetrics& metrics,
          unsigned short metrics_port) {
  Server server(config, metrics, numbers.threads);
  const std::string& host = numbers.listen.host;
  auto bound = server.Listen(host, numbers.listen.port);
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
  // What it has may include requests held through a wake or a restart: their hold.
  const std::shared_ptr<const RoutingTable> table = config.table.load();
  const double finish_s =
      pipescale::model::RouterFinishSeconds(table ? table->graph.ColdHoldMs(-1) : 0);
  server.Drain(std::chrono::seconds(numbers.drain_seconds),
               std::chrono::milliseconds(std::lround(1000 * finish_s)));
  return 0;
}

int Run(Flags flags) {
  const auto numbers = ReadNumbers(flags);
  if (!numbers) {
    std::cerr << "pipescale-router: " << numbers.error().message << "\n";
    return 2;
  }
  std::optional<pipescale::model::Pipeline> file;
  if (!ReadPipeline(flags, file)) return 2;
  RouterConfig config{.pipeline = flags["--pipeline"], .namespace_name = flags["--namespace"]};
  config.policy.grace_ms = numbers->grace_ms;
  config.max_in_flight = numbers->max_in_flight;
  const auto drop_policy = pipescale::model::ParseDropPolicy(flags["--drop-policy"]);
  if (!drop_policy) {
    std::cerr << "pipescale-router: --drop-policy must be none, last-task, per-task or reroute\n";
    return 2;
  }
  config.policy.drop = *drop_policy;
  if (flags["--pool-dispatch"] != "matching" && flags["--pool-dispatch"] != "fcfs") {
    std::cerr << "pipescale-router: --pool-dispatch must be matching or fcfs\n";
    return 2;
  }
  config.fcfs = flags["--pool-dispatch"] == "fcfs";
  if (flags["--spill"] != "on" && flags["--spill"] != "off") {
    std::cerr << "pipescale-router: --spill must be on or off\n";
    return 2;
  }
  config.policy.spill = flags["--spill"] == "on";
  if (flags["--admission"] != "on" && flags["--admission"] != "off") {
    std::cerr << "pipescale-router: --admission must be on or off\n";
    return 2;
  }
  config.policy.admission = flags["--admission"] == "on";
  if (flags["--peers"] != "on" && flags["--peers"] != "off") {
    std::cerr << "pipescale-router: --peers must be on or off\n";
    return 2;
  }
  config.max_body_bytes = static_cast<size_t>(numbers->max_body_bytes);
  auto registry = std::make_shared<prometheus::Registry>();
  RouterMetrics metrics(*registry, config);
  // The metrics address is the user's: one that cannot be bound is an error, not a crash.
  std::optional<prometheus::Exposer> exposer;
  try {
    exposer.emplace(flags["--metrics-listen"]);
  } catch (const std::exception& e) {
    std::cerr << "pipescale-router: --metrics-listen " << flags["--metrics-listen"]
              << ": cannot serve metrics there: " << e.what() << "\n";
    return 1;
  }
  exposer->RegisterCollectable(registry);
  exposer->RegisterCollectable(metrics.arrival_collectable());
  exposer->RegisterCollectable(metrics.door_collectable());
  exposer->RegisterCollectable(metrics.door_collectable(), pipescale::api::kRouterDoorPath);
  // The exposer holds collectables by weak_ptr: this one must live as long as it, or
  // pipescale_panics_total is never served.
  const auto panics = std::make_shared<pipescale::metrics::PanicCollector>();
  exposer->RegisterCollectable(panics);
  const unsigned short metrics_port = exposer->GetListeningPorts().front();

  if (!flags["--endpoints"].empty()) {
    if (!file) {
      std::cerr << "pipescale-router: --endpoints needs --pipeline-file\n";
      return 2;
    }
    const auto pods = ParseEndpoints(flags["--endpoints"], &*file);
    if (!pods) {
      std::cerr << "pipescale-router: " << pods.error().message << "\n";
      return 2;
    }
    pipescale::router::DataPlaneParts parts;
    if (!ReadParts(flags, *file, parts)) return 2;
    pipescale::router::Known known;
    config.pods_follow = false;
    config.table.store(MakeTable(*file, *pods, known, parts, config.fcfs));
    metrics.Declare(config.table.load()->graph);
    return Serve(config, flags, *numbers, metrics, metrics_port);
  }
  auto cluster = pipescale::kube::LoadClusterConfig(flags["--kubeconfig"]);
  if (!cluster) {
    std::cerr << "pipescale-router: " << cluster.error().message << "\n";
    return 2;
  }
  const pipescale::kube::Client client(*cluster);
  std::shared_ptr<pipescale::router::PeerLink> peers;
  if (flags["--peers"] == "on") peers = OpenPeers(numbers->listen, config, metrics);
  Discovery discovery(
      client, config, file, [&metrics](const RoutingTable& table) { metrics.Declare(table.graph); },
      peers);
  discovery.Start();
  // Serve at once: until the pipeline and its pods are known, requests get 503 and the
  // readiness probe fails, so no Service sends any here.
  return Serve(config, flags, *numbers, metrics, metrics_port);
}

}  // namespace

int main(int argc, char** argv) {
  pthread_sigmask(SIG_BLOCK, &TerminationSignals(), nullptr);
  Flags flags = {
      {"--listen", "0.0.0.0:8080"},
      {"--metrics-listen", "0.0.0.0:9090"},
      {"--threads", "1"},
      {"--grace-ms", std::to_string(static_cast<int>(pipescale::routing::kGraceMs))},
      {"--max-in-flight", "4096"},
      {"--port-file", ""},
      {"--pipeline-file", ""},
      {"--pipeline", ""},
      {"--namespace", "default"},
      {"--kubeconfig", ""},
      {"--endpoints", ""},
      {"--drain-seconds", std::to_string(pipescale::model::kRouterDrainSeconds)},
      {"--routing-file", ""},
      {"--drop-policy", "reroute"},
      {"--pools-file", ""},
      {"--pool-dispatch", "matching"},
      {"--spill", "on"},
      {"--admission", "on"},
      {"--max-body-bytes", std::to_string(pipescale::model::RouterSpec{}.max_body_bytes)},
      {"--batching-file", ""},
      {"--peers", "on"}};
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
  try {
    return Run(flags);
  } catch (const std::exception& e) {  // last resort: say what, rather than abort silently
    std::cerr << "pipescale-router: unexpected exception: " << e.what() << "\n";
    return 1;
  }
}

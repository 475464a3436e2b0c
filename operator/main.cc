// pipescale-operator: watches InferencePipelines and keeps their Deployments at the plan.
#include <civetweb.h>
#include <malloc.h>
#include <prometheus/exposer.h>
#include <prometheus/registry.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstring>
#include <memory>
#include <thread>

#include "api/router_objects.h"
#include "common/guard.h"
#include "common/json_fields.h"
#include "common/log.h"
#include "common/strings.h"
#include "controller/controller.h"
#include "flags.h"
#include "kube/config.h"
#include "kube/discovery.h"
#include "kube/informer.h"
#include "kube/leader_election.h"
#include "metrics/panics.h"
#include "metrics/router_scrape.h"
#include "metrics/source.h"
#include "operator_metrics.h"
#include "quick_look.h"
#include "reconciler/idle.h"
#include "reconciler/reconciler.h"
#include "reconciler/surge.h"
#include "solver/child_process.h"

namespace pipescale::operator_main {
namespace {

using namespace std::chrono_literals;

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// ":8081" listens on every address; civetweb and prometheus-cpp want "0.0.0.0:8081".
std::string BindAddress(const std::string& address) {
  return address.rfind(':', 0) == 0 ? "0.0.0.0" + address : address;
}

// This executable, for running itself as a child (--solve-milp).
std::string SelfPath() {
  char path[4096];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  return n > 0 ? std::string(path, static_cast<size_t>(n)) : "/proc/self/exe";
}

// The pods informer's index of the router pods by their pipeline ("namespace/name").
constexpr const char* kRouterIndex = "router";

// Read by civetweb's threads, which outlive Run when it throws.
std::atomic<bool> g_ready{false};  // NOLINT(cppcoreguidelines-avoid-non-const-global-variables)

int Health(mg_connection* conn, void* ready_only) {
  const bool ok = ready_only == nullptr || g_ready.load();
  const char* body = ok ? "ok\n" : "not ready\n";
  mg_printf(conn,
            "HTTP/1.1 %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\nConnection: "
            "close\r\n\r\n%s",
            ok ? "200 OK" : "503 Service Unavailable", std::strlen(body), body);
  return ok ? 200 : 503;
}

// One set of informers and a controller, for the time we lead.
class Operator {
 public:
  Operator(const kube::Client& client, const Flags& flags, prometheus::Registry& registry,
           OperatorMetrics& metrics)
      : client_(client),
        flags_(flags),
        metrics_(metrics),
        shared_queries_(
            std::chrono::milliseconds(static_cast<long>(flags.metrics_max_age_seconds * 1000))) {
    const std::vector<std::string> namespaces =
        flags.namespaces.empty() ? std::vector<std::string>{""} : flags.namespaces;
    controller_ = std::make_unique<controller::Controller>(
        "inferencepipeline", [this](const std::string& key) { return Reconcile(key); }, registry,
        flags.workers);
    // The capacity model counts every node and every pod (all of them take room), from their
    // events; a change to one of a pipeline's pods (say, Unschedulable) reconciles it.
    // Each decoded to the little the count reads: the cluster's every pod is in the cache.
    nodes_ = std::make_unique<kube::TypedInformer<reconciler::NodeRoom>>(
        client, kube::InformerOptions{.type = kube::kNodes}, reconciler::ReadNode,
        [this](const std::string& key, const reconciler::NodeRoom& node) {
          // The cache holds the change before it is delivered: gone from it means deleted.
          if (nodes_->Contains(key)) {
            cluster_.SetNode(key, node);
          } else {
            cluster_.RemoveNode(key);
          }
        });
    pods_ = std::make_unique<kube::TypedInformer<reconciler::PodShare>>(
        client,
        kube::InformerOptions{.type = kube::kPods,
                              .indexes = {{kRouterIndex, reconciler::RouterOf}}},
        reconciler::ReadPod, [this](const std::string& key, const reconciler::PodShare& pod) {
          if (pods_->Contains(key)) {
            cluster_.SetPod(key, pod);
          } else {
            cluster_.RemovePod(key);
          }
          const std::string& pipeline = pod.pipeline.empty() ? pod.router_of : pod.pipeline;
          if (!pipeline.empty()) controller_->Enqueue(pipeline);
          // Room it takes or frees is room the pipelines sharing its pool divide.
          if (!pod.pipeline.empty()) arbiter_.PodChanged(pod.pipeline);
        });
    // A pipeline's priority decides whose pods its room counts: the classes' values, as they are.
    priority_classes_ = std::make_unique<kube::TypedInformer<reconciler::PriorityClassValue>>(
        client, kube::InformerOptions{.type = kube::kPriorityClasses},
        reconciler::ReadPriorityClass,
        [this](const std::string& key, const reconciler::PriorityClassValue& value) {
          if (priority_classes_->Contains(key)) {
            cluster_.SetPriorityClass(key, value);
          } else {
            cluster_.RemovePriorityClass(key);
          }
        });
    const auto enqueue = [this](const std::string& key) {
      if (!key.empty()) controller_->Enqueue(key);
    };
    // Asked once: the version a cluster serves does not change while the operator runs.
    const std::optional<std::string> budget_api =
        kube::FirstServedVersion(client, reconciler::kDisruptionBudgetVersions);
    for (const std::string& ns : namespaces) {
      const size_t index = pipelines_.size();
      pipelines_.push_back(std::make_unique<reconciler::PipelineInformer>(
          client,
          kube::InformerOptions{.type = reconciler::kInferencePipelines, .namespace_name = ns},
          api::ReadPipelineObject,
          [this, index, enqueue](const std::string& key, const api::PipelineObject& pipeline) {
            // Started after the reconcilers exist (Start), so the index is filled.
            if (!reconcilers_[index]->EchoOfOwnWrite(key, pipeline)) enqueue(key);
          }));
      // A Deployment changed (a hand edit, say): reconcile its pipeline.
      deployments_.push_back(std::make_unique<reconciler::DeploymentInformer>(
          client, reconciler::DeploymentWatch(ns), api::ReadDeployment,
          [enqueue](const std::string&, const api::DeploymentView& d) {
            enqueue(reconciler::PipelineOf(d.meta));
          }));
      owned_.push_back(std::make_unique<reconciler::OwnedObjects>(client, ns, enqueue, budget_api));
      reconcilers_.push_back(std::make_unique<reconciler::Reconciler>(
          client, *pipelines_.back(), *deployments_.back(), *owned_.back(),
          [this](const model::Pipeline& p) { return ReadMetrics(p); }, Now,
          [this](const model::Pipeline& p, int intervals, double now) {
            return metrics::ReadRateHistory(PrometheusFor(p), p, intervals, now, &shared_queries_);
          }));
      reconcilers_.back()->WatchCapacity(cluster_);
      reconcilers_.back()->ShareWith(arbiter_);
      reconcilers_.back()->SetRouterClusterRole(flags.router_cluster_role);
      // One tenant's MILP must not abort the process that plans every tenant's pipelines.
      reconcilers_.back()->SetMilpSolver(solver::ChildProcessSolver({SelfPath(), "--solve-milp"}));
    }
    std::vector<const reconciler::PipelineInformer*> watched;
    for (const auto& informer : pipelines_) watched.push_back(informer.get());
    surge_watch_ = std::make_unique<QuickLook>(
        "surge watch", reconciler::kSurgeLookSeconds, watched,
        [this](const model::Pipeline& p, const model::PipelineStatus& status) {
          if (!reconciler::SurgeWatched(p, status)) return false;
          const auto recent = metrics::ReadRecentRates(PrometheusFor(p), p, &shared_queries_);
          return recent.ok() && reconciler::Surging(p, status, *recent);
        },
        enqueue);
    door_watch_ = std::make_unique<QuickLook>(
        "door watch", reconciler::kDoorLookSeconds, std::move(watched),
        [this](const model::Pipeline& p, const model::PipelineStatus& status) {
          if (!reconciler::DoorWatched(p, status)) return false;
          const auto held = metrics::ReadDoorWaiting(RouterDoorUrls(p));
          return held.ok() && reconciler::WakesNow(p, status, *held);
        },
        enqueue);
  }

  // Starts the informers and the workers at once: a namespace the operator may not read (a
  // 403 its informer logs and retries) must not stop the others.
  void Start() {
    for (auto& i : pipelines_) i->Start();
    for (auto& i : deployments_) i->Start();
    for (auto& o : owned_) o->Start();
    nodes_->Start();
    pods_->Start();
    priority_classes_->Start();
    controller_->Start();
    surge_watch_->Start();
    door_watch_->Start();
  }

  // Waits until the pipelines and Deployments of at least one watched namespace are listed
  // (capacity waits for nothing: until the nodes are listed only the spec's limits apply).
  // False only when stopped.
  bool WaitUntilServing(const std::atomic<bool>& stop) const {
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    bool warned = false;
    while (!stop) {
      for (size_t i = 0; i < pipelines_.size(); ++i) {
        if (pipelines_[i]->Synced() && deployments_[i]->Synced()) return true;
      }
      if (!warned && std::chrono::steady_clock::now() > deadline) {
        Log("error",
            "no watched namespace could be listed in 60 s; not ready until one is "
            "(the errors above say why)");
        warned = true;
      }
      std::this_thread::sleep_for(100ms);
    }
    return false;
  }

  void Stop() {
    // Every watch is asked first and joined after, so the stop takes one watch's second to
    // notice rather than one per informer in turn (nine of them took 4-5 s, and over the
    // pod's grace period on a busy machine).
    for (auto& i : pipelines_) i->RequestStop();
    for (auto& i : deployments_) i->RequestStop();
    for (auto& o : owned_) o->RequestStop();
    nodes_->RequestStop();
    pods_->RequestStop();
    priority_classes_->RequestStop();
    surge_watch_->Stop();  // they queue into the controller
    door_watch_->Stop();
    controller_->Stop();
    for (auto& i : pipelines_) i->Stop();
    for (auto& i : deployments_) i->Stop();
    for (auto& o : owned_) o->Stop();
    nodes_->Stop();
    pods_->Stop();
    priority_classes_->Stop();
  }

 private:
  metrics::PrometheusClient PrometheusFor(const model::Pipeline& p) const {
    return metrics::PrometheusClient(p.spec.metrics.prometheus_url.empty()
                                         ? flags_.prometheus_url
                                         : p.spec.metrics.prometheus_url);
  }

  Result<model::MetricsSnapshot> ReadMetrics(const model::Pipeline& p) const {
    auto snapshot = metrics::ReadSnapshot(PrometheusFor(p), p, &shared_queries_);
    if (snapshot.ok() && p.spec.scale_to_zero) AddHeldAtRouters(p, *snapshot);
    return snapshot;
  }

  // The requests held at the doors of `p`'s routers now, read from them (metrics/router_scrape.h)
  // over what Prometheus last scraped: a held request wakes its path without waiting for the
  // next scrape. A router that does not answer leaves Prometheus's count as it is.
  void AddHeldAtRouters(const model::Pipeline& p, model::MetricsSnapshot& m) const {
    const auto held = metrics::ReadDoorWaiting(RouterDoorUrls(p));
    if (!held.ok()) return;
    for (const auto& [path, n] : *held) {
      if (n > 0) m.door_waiting[path] = std::max(m.door_waiting[path], n);
    }
  }

  // Where `p`'s router pods serve the requests held at their doors (the pods informer indexes
  // them by pipeline).
  std::vector<std::string> RouterDoorUrls(const model::Pipeline& p) const {
    std::vector<std::string> urls;
    for (const auto& pod : pods_->ByIndex(kRouterIndex, p.namespace_name + "/" + p.name)) {
      if (pod->terminal || pod->ip.empty()) continue;
      urls.push_back("http://" + pod->ip + ":" + std::to_string(api::kRouterMetricsPort) +
                     api::kRouterDoorPath);
    }
    return urls;
  }

  Result<std::optional<std::chrono::milliseconds>> Reconcile(const std::string& key) {
    const std::string ns = key.substr(0, key.find('/'));
    const std::string name = key.substr(key.find('/') + 1);
    // With one informer for all namespaces there is one reconciler; else the namespace's own.
    size_t index = 0;
    for (size_t i = 0; i < flags_.namespaces.size(); ++i) {
      if (flags_.namespaces[i] == ns) index = i;
    }
    if (!deployments_[index]->Synced() || !owned_[index]->Synced()) {
      // Its objects unseen, a plan would recreate what exists or miss what to scale.
      return Error{ErrorKind::kTransient, "the Deployments, ConfigMaps or routers of namespace " +
                                              ns + " are not listed yet"};
    }
    auto outcome = reconcilers_[index]->Reconcile(key);
    if (!outcome) {
      Log("error", "reconcile failed",
          {{"pipeline", key},
           {"kind", ErrorKindName(outcome.error().kind)},
           {"error", outcome.error().message}});
      return outcome.error();
    }
    metrics_.CountReverts(ns, name, outcome->reverted_fields);
    metrics_.CountRollouts(ns, name, outcome->rollouts);
    const bool exists = pipelines_[index]->Contains(key);
    if (outcome->plan) {
      metrics_.Record(ns, name, *outcome, Now());
    } else if (!exists) {
      metrics_.Forget(ns, name);
    }
    if (exists) metrics_.RecordConditions(ns, name, outcome->conditions);
    // A surge is planned for between the interval's looks: the log says why a plan moved then.
    for (const auto& [path, rps] : outcome->surges) {
      Log("info", "planned for a surge",
          {{"pipeline", key}, {"path", path}, {"rps", StrFormat("%.1f", rps)}});
    }
    if (outcome->deployment_writes > 0 || outcome->events > 0) {
      Log("info", "reconciled",
          {{"pipeline", key},
           {"deploymentWrites", std::to_string(outcome->deployment_writes)},
           {"replicas", outcome->plan ? std::to_string(outcome->plan->TotalReplicas()) : "-"}});
    }
    if (!outcome->requeue_after_seconds) return std::optional<std::chrono::milliseconds>{};
    return std::optional<std::chrono::milliseconds>{
        std::chrono::milliseconds(static_cast<long>(*outcome->requeue_after_seconds * 1000))};
  }

  const kube::Client& client_;
  const Flags& flags_;
  OperatorMetrics& metrics_;
  // One answer to each default query for every pipeline (mutable: a cache behind a const read).
  mutable metrics::SharedQueries shared_queries_;
  std::unique_ptr<controller::Controller> controller_;
  reconciler::ClusterView cluster_;
  // Divides the pools the pipelines' classes share; it asks the controller to reconcile a
  // pipeline whose share may have moved.
  reconciler::Arbiter arbiter_{[this](const std::string& key) { controller_->Enqueue(key); }};
  std::unique_ptr<kube::TypedInformer<reconciler::NodeRoom>> nodes_;
  std::unique_ptr<kube::TypedInformer<reconciler::PodShare>> pods_;
  std::unique_ptr<kube::TypedInformer<reconciler::PriorityClassValue>> priority_classes_;
  std::vector<std::unique_ptr<reconciler::PipelineInformer>> pipelines_;
  std::vector<std::unique_ptr<reconciler::DeploymentInformer>> deployments_;
  std::vector<std::unique_ptr<reconciler::OwnedObjects>> owned_;
  std::vector<std::unique_ptr<reconciler::Reconciler>> reconcilers_;
  std::unique_ptr<QuickLook> surge_watch_;
  std::unique_ptr<QuickLook> door_watch_;
};

// Blocks until one of `signals` arrives, and meanwhile hands the heap's free pages back every
// 10 s: glibc keeps what a scrape of 5000 pipelines' series or a burst of plans freed (54 of 210
// MiB measured), and the pod's memory limit counts it.
int AwaitSignalTrimmingTheHeap(const sigset_t& signals) {
  const timespec every{.tv_sec = 10, .tv_nsec = 0};
  for (;;) {
    const int signal = sigtimedwait(&signals, nullptr, &every);
    if (signal > 0) return signal;
    malloc_trim(0);  // EAGAIN (the 10 s passed) or EINTR
  }
}

int Run(int argc, char** argv) {
  auto flags = ParseFlags(argc, argv);
  if (!flags) {
    const bool help = flags.error().kind == ErrorKind::kNotFound;
    std::fputs((flags.error().message + "\n").c_str(), help ? stdout : stderr);
    return help ? 0 : 2;
  }
  SetLogFormat(flags->log_format == "json" ? LogFormat::kJson : LogFormat::kText);
  auto config = kube::LoadClusterConfig(flags->kubeconfig);
  if (!config) {
    Log("error", "cannot load the cluster configuration", {{"error", config.error().message}});
    return 1;
  }
  const kube::Client client(*config, {.max_answer_bytes = flags->kube_max_answer_bytes});

  // Signals go to the main thread's sigwait; every other thread inherits this mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto registry = std::make_shared<prometheus::Registry>();
  std::unique_ptr<prometheus::Exposer> exposer;
  try {
    exposer = std::make_unique<prometheus::Exposer>(BindAddress(flags->metrics_bind_address));
  } catch (const std::exception& e) {  // civetweb throws when it cannot bind
    Log("error", "cannot serve metrics",
        {{"address", flags->metrics_bind_address}, {"error", e.what()}});
    return 1;
  }
  exposer->RegisterCollectable(registry);
  const auto panics = std::make_shared<metrics::PanicCollector>();
  exposer->RegisterCollectable(panics);
  OperatorMetrics metrics(*registry);
  exposer->RegisterCollectable(metrics.pipelines());

  const std::string health_address = BindAddress(flags->health_probe_bind_address);
  const char* options[] = {"listening_ports", health_address.c_str(), "num_threads", "2", nullptr};
  mg_callbacks callbacks{};
  mg_context* health = mg_start(&callbacks, nullptr, options);
  if (health == nullptr) {
    Log("error", "cannot serve health probes", {{"address", flags->health_probe_bind_address}});
    return 1;
  }
  mg_set_request_handler(health, "/healthz", Health, nullptr);
  mg_set_request_handler(health, "/readyz", Health, &g_ready);

  char host[256] = "pipescale";
  gethostname(host, sizeof host);
  kube::LeaderElector elector(client,
                              {.namespace_name = flags->leader_election_namespace.empty()
                                                     ? config->default_namespace
                                                     : flags->leader_election_namespace,
                               .name = flags->leader_election_id,
                               .identity = std::string(host) + "_" + std::to_string(getpid())},
                              Now);

  std::atomic<bool> stop{false};
  int exit_code = 0;
  Operator op(client, *flags, *registry, metrics);
  // What leads: acquire, serve, hold. A throw here is a bug that leaves the operator in no
  // known state, so it fails fast: counted, logged, and the process exits 1 as when it loses
  // the Lease; the kubelet restarts it with its own backoff and another replica takes over.
  const auto lead = [&] {
    if (flags->leader_elect) {
      // A replica standing by is ready: it can take over, and a rolling update of the operator
      // must not wait for the old leader to go.
      g_ready = true;
      Log("info", "waiting for leadership", {{"lease", flags->leader_election_id}});
      if (!elector.Acquire(stop)) return;
      g_ready = false;
      Log("info", "leading", {{"lease", flags->leader_election_id}});
    }
    metrics.SetLeader(true);
    op.Start();
    if (!op.WaitUntilServing(stop)) return;
    g_ready = true;
    std::string namespaces;
    for (const std::string& ns : flags->namespaces)
      namespaces += (namespaces.empty() ? "" : ",") + ns;
    Log("info", "started", {{"namespaces", namespaces.empty() ? "*" : namespaces}});
    if (flags->leader_elect && !elector.Hold(stop)) {
      metrics.SetLeader(false);
      Log("error", "lost leadership; exiting so another replica can take over");
      exit_code = 1;
      kill(getpid(), SIGTERM);
    }
  };
  std::thread run([&] {
    if (!Guard("operator", lead)) {
      exit_code = 1;
      kill(getpid(), SIGTERM);
    }
  });

  const int signal = AwaitSignalTrimmingTheHeap(signals);
  // No other thread calls strsignal, whose buffer is what makes it unsafe.
  Log("info", "shutting down", {{"signal", strsignal(signal)}});  // NOLINT(concurrency-mt-unsafe)
  stop = true;
  g_ready = false;
  const auto stopping = std::chrono::steady_clock::now();
  run.join();
  const auto led = std::chrono::steady_clock::now();
  op.Stop();
  // A stop slower than the pod's grace period gets SIGKILL: which half took the time.
  const auto ms = [](auto d) {
    return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count());
  };
  Log("info", "stopped",
      {{"leadingMs", ms(led - stopping)},
       {"workersAndWatchesMs", ms(std::chrono::steady_clock::now() - led)}});
  const auto stopped = std::chrono::steady_clock::now();
  if (flags->leader_elect) elector.Release();
  const auto released = std::chrono::steady_clock::now();
  mg_stop(health);
  // Once seen, a stop that overran its grace period (a test's 10 s, once in CI) after "stopped":
  // the lease's release or the health endpoint's.
  Log("info", "exiting",
      {{"releaseMs", ms(released - stopped)},
       {"healthMs", ms(std::chrono::steady_clock::now() - released)}});
  return exit_code;
}

}  // namespace
}  // namespace pipescale::operator_main

int main(int argc, char** argv) {
  // The operator solves its MILPs in children of itself (solver/child_process.h).
  if (argc == 2 && std::string_view(argv[1]) == "--solve-milp") {
    return pipescale::solver::ServeMilp(stdin, stdout);
  }
  // glibc gives every thread (workers, informers, HTTP servers) its own heap arena; two arenas
  // keep the resident set near what is in use, at no measurable cost for a controller.
  mallopt(M_ARENA_MAX, 2);  // NOLINT(concurrency-mt-unsafe): no other thread runs yet
  try {
    return pipescale::operator_main::Run(argc, argv);
  } catch (const std::exception& e) {  // last resort: log, do not crash silently
    pipescale::Log("fatal", "unexpected exception", {{"error", e.what()}});
    return 1;
  }
}

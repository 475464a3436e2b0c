// pipescale-kubelet-standin: test and demo tooling only, never needed in a real cluster. With
// no kubelet on the local apiserver nothing runs a Deployment's pods, so this watches the
// pipelines' Deployments and keeps spec.replicas pipescale-model-server processes per
// Deployment, with the batch size from the pod template's env and the latency profile of the
// variant on its hardware class from the InferencePipeline. It registers them with Prometheus
// (file service discovery) and reports status.replicas/readyReplicas back.
//
//   pipescale-kubelet-standin --kubeconfig F --model-server BIN --targets-dir DIR --work-dir DIR
//       [--namespace NS]
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "api/deployment.h"
#include "api/pipeline_parse.h"
#include "common/log.h"
#include "kube/config.h"
#include "kube/informer.h"
#include "optimizer/fit.h"

namespace {

using namespace pipescale;
using nlohmann::json;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

const kube::ResourceType kPipelines{"pipescale.io/v1alpha1", "inferencepipelines", true};

struct Pod {
  pid_t pid = -1;
  int port = 0;
};

struct Spec {
  int replicas = 0;
  int batch = 1;
  std::string latency;  // "a,b,c" for --latency-ms
  json labels;
  bool operator==(const Spec& o) const {
    return replicas == o.replicas && batch == o.batch && latency == o.latency;
  }
};

class Standin {
 public:
  // `ns`: only that namespace's Deployments (empty: every namespace), so that a test's stand-in
  // does not start pods for what other tests on the same cluster left behind.
  Standin(const kube::Client& client, std::string model_server, std::string targets_dir,
          std::string work_dir, const std::string& ns)
      : client_(client),
        model_server_(std::move(model_server)),
        targets_dir_(std::move(targets_dir)),
        work_dir_(std::move(work_dir)),
        deployments_(client,
                     {.type = kube::kDeployments,
                      .namespace_name = ns,
                      .label_selector = "pipescale.io/pipeline"},
                     [](const std::string&, const json&) {}),
        pipelines_(client, {.type = kPipelines, .namespace_name = ns},
                   [](const std::string&, const json&) {}) {}

  void Run(const std::atomic<bool>& stop) {
    deployments_.Start();
    pipelines_.Start();
    deployments_.WaitForSync(30s);
    pipelines_.WaitForSync(30s);
    while (!stop) {
      Sync();
      std::this_thread::sleep_for(300ms);
    }
    for (auto& [key, pods] : pods_) Resize(key, pods, 0, {});
    deployments_.Stop();
    pipelines_.Stop();
  }

 private:
  // What a Deployment asks for; nullopt when its pipeline or profile cannot be found.
  std::optional<Spec> Desired(const json& d) {
    const json& labels = d["metadata"]["labels"];
    const std::string ns = d["metadata"]["namespace"];
    auto object = pipelines_.Get(ns + "/" + labels.value("pipescale.io/pipeline", ""));
    if (!object) return std::nullopt;
    auto parsed = api::ParsePipeline(object->dump());
    if (!parsed.pipeline) return std::nullopt;
    const model::Pipeline& p = *parsed.pipeline;
    const int ti = p.TaskIndex(labels.value("pipescale.io/task", ""));
    if (ti < 0) return std::nullopt;
    for (const auto& v : p.spec.tasks[ti].variants) {
      if (v.name != labels.value("pipescale.io/variant", "")) continue;
      const model::Profile* profile =
          v.FindProfile(labels.value("pipescale.io/hardware-class", ""));
      if (profile == nullptr) return std::nullopt;
      model::QuadraticLatency q = profile->latency.quadratic;
      if (profile->latency.kind == model::LatencyProfile::Kind::kTable) {
        auto fit = optimizer::FitQuadratic(profile->latency.points);
        q = fit ? fit->coefficients
                : model::QuadraticLatency{0, 0, profile->latency.points.front().ms};
      }
      Spec spec;
      spec.replicas = d["spec"].value("replicas", 1);
      spec.batch = api::ReadManagedFields(d, v.batch_env).batch_size.value_or(1);
      spec.latency = std::to_string(q.a) + "," + std::to_string(q.b) + "," + std::to_string(q.c);
      spec.labels = {{"namespace", ns},
                     {"pipeline", p.name},
                     {"task", labels.value("pipescale.io/task", "")},
                     {"variant", v.name},
                     {"hardware_class", labels.value("pipescale.io/hardware-class", "")},
                     {"deployment", d["metadata"]["name"]}};
      return spec;
    }
    return std::nullopt;
  }

  Pod Launch(const std::string& key, const Spec& spec, int index) {
    const std::string port_file =
        work_dir_ + "/" + std::to_string(getpid()) + "-" + std::to_string(launches_++) + ".port";
    std::remove(port_file.c_str());
    Pod pod;
    pod.pid = fork();
    if (pod.pid == 0) {
      setenv("MAX_BATCH_SIZE", std::to_string(spec.batch).c_str(), 1);
      const std::string log = work_dir_ + "/" + spec.labels.value("deployment", "x") + "-" +
                              std::to_string(index) + ".log";
      freopen(log.c_str(), "w", stderr);
      execl(model_server_.c_str(), model_server_.c_str(), "--port", "0", "--port-file",
            port_file.c_str(), "--latency-ms", spec.latency.c_str(), "--max-wait-ms", "1000",
            static_cast<char*>(nullptr));
      _exit(127);
    }
    for (int i = 0; i < 100; ++i) {
      std::ifstream in(port_file);
      if (in >> pod.port) break;
      std::this_thread::sleep_for(20ms);
    }
    std::remove(port_file.c_str());
    Log("info", "started model server", {{"deployment", key}, {"port", std::to_string(pod.port)}});
    return pod;
  }

  void Resize(const std::string& key, std::vector<Pod>& pods, int n, const Spec& spec) {
    while (static_cast<int>(pods.size()) > n) {
      kill(pods.back().pid, SIGTERM);
      waitpid(pods.back().pid, nullptr, 0);
      pods.pop_back();
    }
    while (static_cast<int>(pods.size()) < n) {
      pods.push_back(Launch(key, spec, static_cast<int>(pods.size())));
    }
  }

  void WriteTargets(const std::string& key, const std::vector<Pod>& pods, const Spec& spec) {
    std::string file = key;
    std::replace(file.begin(), file.end(), '/', '_');
    file = targets_dir_ + "/pod-" + file + ".json";
    json targets = json::array();
    for (const Pod& p : pods) {
      if (p.port > 0) targets.push_back("127.0.0.1:" + std::to_string(p.port));
    }
    std::ofstream(file + ".tmp")
        << json::array({{{"targets", targets}, {"labels", spec.labels}}}).dump();
    fs::rename(file + ".tmp", file);
  }

  void Sync() {
    std::map<std::string, bool> seen;
    for (const json& d : deployments_.List()) {
      const std::string key = kube::ObjectKey(d);
      seen[key] = true;
      auto spec = Desired(d);
      if (!spec) continue;
      auto& pods = pods_[key];
      auto& running = specs_[key];
      if (running.batch != spec->batch || running.latency != spec->latency) {
        Resize(key, pods, 0, *spec);  // a new pod template: replace every pod
      }
      Resize(key, pods, spec->replicas, *spec);
      if (!(running == *spec)) {
        running = *spec;
        WriteTargets(key, pods, *spec);
        const int ready = static_cast<int>(
            std::count_if(pods.begin(), pods.end(), [](const Pod& p) { return p.port > 0; }));
        const std::string ns = d["metadata"]["namespace"];
        (void)client_.MergePatch(
            kube::ObjectPath(kube::kDeployments, ns, d["metadata"]["name"], "status"),
            {{"status",
              {{"observedGeneration", d["metadata"].value("generation", 0)},
               {"replicas", spec->replicas},
               {"updatedReplicas", spec->replicas},
               {"readyReplicas", ready},
               {"availableReplicas", ready}}}});
      }
    }
    for (auto it = pods_.begin(); it != pods_.end();) {
      if (seen.contains(it->first)) {
        ++it;
        continue;
      }
      Resize(it->first, it->second, 0, {});
      std::string file = it->first;
      std::replace(file.begin(), file.end(), '/', '_');
      std::remove((targets_dir_ + "/pod-" + file + ".json").c_str());
      specs_.erase(it->first);
      it = pods_.erase(it);
    }
  }

  const kube::Client& client_;
  std::string model_server_;
  std::string targets_dir_;
  std::string work_dir_;
  kube::Informer deployments_;
  kube::Informer pipelines_;
  std::map<std::string, std::vector<Pod>> pods_;
  std::map<std::string, Spec> specs_;
  int launches_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> flags;
  for (int i = 1; i + 1 < argc; i += 2) flags[argv[i]] = argv[i + 1];
  for (const char* required : {"--kubeconfig", "--model-server", "--targets-dir", "--work-dir"}) {
    if (!flags.contains(required)) {
      std::fprintf(stderr, "%s is required\n", required);
      return 2;
    }
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
  fs::create_directories(flags["--work-dir"]);
  Standin standin(client, flags["--model-server"], flags["--targets-dir"], flags["--work-dir"],
                  flags["--namespace"]);
  std::atomic<bool> stop{false};
  std::thread run([&] { standin.Run(stop); });
  int signal = 0;
  sigwait(&signals, &signal);
  stop = true;
  run.join();
  return 0;
}

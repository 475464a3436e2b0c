// pipescale-loadgen: test and demo tooling. Sends Open Inference Protocol requests along a
// pipeline's execution paths (each hop to a Ready pod of the task, weighted round robin by its
// unbatched rate, found through the pod discovery endpoint Prometheus uses), open loop with
// Poisson arrivals at the rates of a trace, and exports what a gateway would:
// pipescale_requests_total and pipescale_request_duration_seconds per path. It registers itself
// with Prometheus by a file in --targets-dir.
//
//   pipescale-loadgen -f PIPELINE.yaml --namespace NS --pods-url URL --targets-dir DIR
//                     --trace RPS:SECONDS[,RPS:SECONDS...] [--workers 256]
#include <curl/curl.h>
#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <thread>

#include "api/pipeline_parse.h"

namespace {

using namespace pipescale;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

struct Job {
  int path;
  Clock::time_point arrived;
};

size_t Discard(char*, size_t size, size_t n, void*) { return size * n; }

// One Open Inference Protocol request: a 1x4 FP32 tensor, as a small image feature would be.
constexpr const char* kInferBody =
    R"({"inputs": [{"name": "input", "shape": [1, 4], "datatype": "FP32", "data": [0.1, 0.2, 0.3, 0.4]}]})";

// Each task's model servers, weighted by what one of them serves unbatched (1000 / d(1) of
// its variant on its hardware class): smooth weighted round robin, MArk's balancer. Equal
// weights, plain round robin, where a task runs on one class.
class Endpoints {
 public:
  Endpoints(std::string url, std::string ns, const model::Pipeline& pipeline)
      : url_(std::move(url)), ns_(std::move(ns)), pipeline_(pipeline) {}

  void Reload() {
    std::map<std::string, std::vector<Endpoint>> fresh;
    const auto j = nlohmann::json::parse(Fetch(url_), nullptr, false);
    if (!j.is_array()) return;
    const std::string label = "__meta_kubernetes_pod_label_pipescale_io_";
    for (const auto& group : j) {
      const auto& l = group["labels"];
      if (l.value("__meta_kubernetes_namespace", "") != ns_ ||
          l.value(label + "pipeline", "") != pipeline_.name ||
          l.value("__meta_kubernetes_pod_ready", "") != "true") {
        continue;
      }
      const std::string task = l.value(label + "task", "");
      const double weight =
          Weight(task, l.value(label + "variant", ""), l.value(label + "hardware_class", ""));
      for (const auto& t : group["targets"]) {
        fresh[task].push_back({t.get<std::string>(), weight, 0});
      }
    }
    std::lock_guard lock(mu_);
    // Keep each endpoint's running credit across reloads, so the rotation does not restart.
    for (auto& [task, list] : fresh) {
      for (Endpoint& e : list) {
        for (const Endpoint& old : endpoints_[task]) {
          if (old.target == e.target) e.credit = old.credit;
        }
      }
    }
    endpoints_ = std::move(fresh);
  }

  std::string Next(const std::string& task) {
    std::lock_guard lock(mu_);
    auto it = endpoints_.find(task);
    if (it == endpoints_.end() || it->second.empty()) return "";
    double total = 0;
    Endpoint* best = nullptr;
    for (Endpoint& e : it->second) {
      e.credit += e.weight;
      total += e.weight;
      if (best == nullptr || e.credit > best->credit) best = &e;
    }
    best->credit -= total;
    return best->target;
  }

 private:
  struct Endpoint {
    std::string target;
    double weight = 1;
    double credit = 0;
  };

  double Weight(const std::string& task, const std::string& variant,
                const std::string& hardware_class) const {
    const int t = pipeline_.TaskIndex(task);
    if (t < 0) return 1;
    for (const auto& v : pipeline_.spec.tasks[t].variants) {
      if (v.name != variant) continue;
      if (const auto* profile = v.FindProfile(hardware_class)) return 1000 / profile->latency.Ms(1);
    }
    return 1;
  }

  static std::string Fetch(const std::string& url) {
    std::string body;
    CURL* curl = curl_easy_init();
    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl, CURLOPT_TIMEOUT, 5L);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
    curl_easy_setopt(
        curl, CURLOPT_WRITEFUNCTION, +[](char* p, size_t size, size_t n, void* out) {
          static_cast<std::string*>(out)->append(p, size * n);
          return size * n;
        });
    if (curl_easy_perform(curl) != CURLE_OK) body.clear();
    curl_easy_cleanup(curl);
    return body;
  }

  std::string url_, ns_;
  const model::Pipeline& pipeline_;
  std::mutex mu_;
  std::map<std::string, std::vector<Endpoint>> endpoints_;
};

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> flags = {{"--workers", "256"}};
  for (int i = 1; i + 1 < argc; i += 2) flags[argv[i]] = argv[i + 1];
  auto parsed = api::ParsePipelineFile(flags["-f"]);
  if (!parsed.pipeline) {
    for (const auto& e : parsed.errors) std::fprintf(stderr, "%s\n", e.ToString().c_str());
    return 2;
  }
  const model::Pipeline& pipeline = *parsed.pipeline;
  const std::string ns = flags.contains("--namespace") ? flags["--namespace"] : "default";
  std::vector<std::pair<double, double>> trace;  // (rps, seconds)
  std::stringstream ts(flags["--trace"]);
  for (std::string step; std::getline(ts, step, ',');) {
    const auto colon = step.find(':');
    trace.emplace_back(std::stod(step.substr(0, colon)), std::stod(step.substr(colon + 1)));
  }
  if (trace.empty()) {
    std::fprintf(stderr, "--trace RPS:SECONDS[,...] is required\n");
    return 2;
  }

  curl_global_init(CURL_GLOBAL_DEFAULT);
  auto registry = std::make_shared<prometheus::Registry>();
  auto& requests = prometheus::BuildCounter()
                       .Name("pipescale_requests_total")
                       .Help("Requests entering each execution path")
                       .Register(*registry);
  auto& failures = prometheus::BuildCounter()
                       .Name("pipescale_request_failures_total")
                       .Help("Requests that found no endpoint or failed a hop")
                       .Register(*registry);
  auto& durations = prometheus::BuildHistogram()
                        .Name("pipescale_request_duration_seconds")
                        .Help("End-to-end latency of each execution path")
                        .Register(*registry);
  std::vector<prometheus::Counter*> request_counters, failure_counters;
  std::vector<prometheus::Histogram*> duration_histograms;
  double total_weight = 0;
  for (const auto& p : pipeline.spec.paths) {
    const std::map<std::string, std::string> labels = {
        {"namespace", ns}, {"pipeline", pipeline.name}, {"path", p.name}};
    request_counters.push_back(&requests.Add(labels));
    failure_counters.push_back(&failures.Add(labels));
    duration_histograms.push_back(
        &durations.Add(labels, prometheus::Histogram::BucketBoundaries{0.01, 0.025, 0.05, 0.1, 0.25,
                                                                       0.5, 1, 2.5, 5, 10, 25}));
    total_weight += p.weight;
  }
  prometheus::Exposer exposer("127.0.0.1:0");
  exposer.RegisterCollectable(registry);
  const std::string target_file =
      flags["--targets-dir"] + "/loadgen-" + ns + "-" + pipeline.name + ".json";
  std::ofstream(target_file + ".tmp")
      << R"([{"targets": ["127.0.0.1:)" << exposer.GetListeningPorts().front() << "\"]}]";
  fs::rename(target_file + ".tmp", target_file);

  Endpoints endpoints(flags["--pods-url"], ns, pipeline);
  endpoints.Reload();
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Job> jobs;
  std::atomic<bool> stop{false};
  std::vector<std::thread> workers;
  for (int w = 0; w < std::stoi(flags["--workers"]); ++w) {
    workers.emplace_back([&] {
      CURL* curl = curl_easy_init();
      curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, Discard);
      curl_easy_setopt(curl, CURLOPT_TIMEOUT, 30L);
      curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
      curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
      curl_easy_setopt(curl, CURLOPT_POSTFIELDS, kInferBody);
      while (true) {
        Job job;
        {
          std::unique_lock lock(mu);
          cv.wait(lock, [&] { return stop || !jobs.empty(); });
          if (stop && jobs.empty()) break;
          job = jobs.front();
          jobs.pop_front();
        }
        bool ok = true;
        for (const auto& task : pipeline.spec.paths[job.path].tasks) {
          const std::string endpoint = endpoints.Next(task);
          if (endpoint.empty()) {
            ok = false;
            break;
          }
          const std::string url = "http://" + endpoint + "/v2/models/" + task + "/infer";
          curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
          long code = 0;
          if (curl_easy_perform(curl) != CURLE_OK ||
              (curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code), code != 200)) {
            ok = false;
            break;
          }
        }
        if (ok) {
          duration_histograms[job.path]->Observe(
              std::chrono::duration<double>(Clock::now() - job.arrived).count());
        } else {
          failure_counters[job.path]->Increment();
        }
      }
      curl_easy_cleanup(curl);
      curl_slist_free_all(headers);
    });
  }
  std::thread reload([&] {
    while (!stop) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      endpoints.Reload();
    }
  });

  // Open loop: Poisson arrivals per path at the trace's rate, split by path weight.
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> uniform(0, 1);
  for (const auto& [rps, seconds] : trace) {
    std::fprintf(stderr, "loadgen: %.1f rps for %.0f s\n", rps, seconds);
    const auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(seconds));
    auto next = Clock::now();
    while (Clock::now() < end) {
      if (rps <= 0) {
        std::this_thread::sleep_until(end);
        break;
      }
      next += std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double>(-std::log(1 - uniform(rng)) / rps));
      std::this_thread::sleep_until(next);
      double pick = uniform(rng) * total_weight;
      int path = 0;
      while (path + 1 < static_cast<int>(pipeline.spec.paths.size()) &&
             (pick -= pipeline.spec.paths[path].weight) > 0) {
        ++path;
      }
      request_counters[path]->Increment();
      {
        std::lock_guard lock(mu);
        jobs.push_back({path, Clock::now()});
      }
      cv.notify_one();
    }
  }
  stop = true;
  cv.notify_all();
  for (auto& w : workers) w.join();
  reload.join();
  std::remove(target_file.c_str());
  return 0;
}

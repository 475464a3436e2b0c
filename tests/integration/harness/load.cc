#include "integration/harness/load.h"

#include <cstdio>
#include <fstream>

#include "integration/harness/local_env.h"

namespace pipescale::testing {

using namespace std::chrono_literals;

Load::Load(const std::string& ns, const std::string& pipeline,
           const std::map<std::string, double>& rates_rps)
    : Load(ns, {{pipeline, rates_rps}}) {}

Load::Load(const std::string& ns, const std::map<std::string, std::map<std::string, double>>& rates)
    : registry_(std::make_shared<prometheus::Registry>()) {
  auto& family = prometheus::BuildCounter()
                     .Name("pipescale_requests_total")
                     .Help("Requests entering each execution path")
                     .Register(*registry_);
  for (const auto& [pipeline, by_path] : rates) {
    for (const auto& [path, rate] : by_path) {
      const std::string key = rates.size() == 1 ? path : pipeline + "/" + path;
      paths_[key] = {&family.Add({{"namespace", ns}, {"pipeline", pipeline}, {"path", path}}),
                     rate};
    }
  }
  exposer_.RegisterCollectable(registry_);
  const std::string name = rates.size() == 1 ? rates.begin()->first : "many";
  target_file_ =
      LocalEnv::Get().Var("PIPESCALE_TARGETS_DIR") + "/load-" + ns + "-" + name + ".json";
  std::ofstream(target_file_ + ".tmp")
      << R"([{"targets": ["127.0.0.1:)" << exposer_.GetListeningPorts().front() << "\"]}]";
  std::rename((target_file_ + ".tmp").c_str(), target_file_.c_str());
  thread_ = std::thread([this] {
    while (!stop_) {
      std::this_thread::sleep_for(50ms);
      std::lock_guard lock(mu_);
      for (auto& [path, counter] : paths_) counter.first->Increment(counter.second / 20);
    }
  });
}

Load::~Load() {
  stop_ = true;
  thread_.join();
  std::remove(target_file_.c_str());
}

void Load::SetRate(const std::string& path, double rps) {
  std::lock_guard lock(mu_);
  paths_.at(path).second = rps;
}

}  // namespace pipescale::testing

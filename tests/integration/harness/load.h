// Exports pipescale_requests_total{namespace, pipeline, path} from the test process at rates
// the test sets, registered with the local Prometheus through file service discovery: real
// series for the operator's metrics source to read.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/registry.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "support/pipelines.h"  // kFastRateQuery, the query these series are read with

namespace pipescale::testing {

class Load {
 public:
  Load(const std::string& ns, const std::string& pipeline,
       const std::map<std::string, double>& rates_rps);
  // Many pipelines' rates from one exporter, by pipeline and path (a bench of thousands).
  Load(const std::string& ns, const std::map<std::string, std::map<std::string, double>>& rates);
  ~Load();
  Load(const Load&) = delete;
  Load& operator=(const Load&) = delete;

  void SetRate(const std::string& path, double rps);  // of the single pipeline
  // For more series beside the rates, scraped with them.
  prometheus::Registry& registry() { return *registry_; }

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Exposer exposer_{"127.0.0.1:0"};
  std::mutex mu_;
  // By path (one pipeline), or by "pipeline/path".
  std::map<std::string, std::pair<prometheus::Counter*, double>> paths_;
  std::string target_file_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace pipescale::testing

// The operator's own pipescale_* gauges: what each pipeline's plan asks for.
#pragma once

#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <map>
#include <mutex>
#include <string>

#include "model/plan.h"

namespace pipescale::operator_main {

class OperatorMetrics {
 public:
  explicit OperatorMetrics(prometheus::Registry& registry);

  // Replaces the pipeline's series with those of `plan`; ns/name identify the pipeline.
  void Record(const std::string& ns, const std::string& name, const model::Plan& plan,
              double cost_per_hour, double decide_seconds);
  void Forget(const std::string& ns, const std::string& name);

 private:
  std::mutex mu_;
  prometheus::Family<prometheus::Gauge>& replicas_;
  prometheus::Family<prometheus::Gauge>& batch_;
  prometheus::Family<prometheus::Gauge>& latency_;
  prometheus::Family<prometheus::Gauge>& slo_;
  prometheus::Family<prometheus::Gauge>& cost_;
  prometheus::Family<prometheus::Gauge>& solve_;
  prometheus::Family<prometheus::Gauge>& accuracy_;
  prometheus::Family<prometheus::Gauge>& served_;
  prometheus::Family<prometheus::Gauge>& bound_;
  prometheus::Family<prometheus::Gauge>& forecast_;
  std::map<std::string, std::vector<std::pair<prometheus::Family<prometheus::Gauge>*,
                                              prometheus::Gauge*>>>
      series_;  // per pipeline key, to remove stale series
};

}  // namespace pipescale::operator_main

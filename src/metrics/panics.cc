#include "metrics/panics.h"

#include <prometheus/metric_family.h>

#include "common/guard.h"

namespace pipescale::metrics {

std::vector<prometheus::MetricFamily> PanicCollector::Collect() const {
  prometheus::MetricFamily family{
      .name = "pipescale_panics_total",
      .help = "Throws caught by a last-resort guard (a bug), by the thread or loop that caught it",
      .type = prometheus::MetricType::Counter,
      .metric = {}};
  for (const auto& [component, count] : PanicCounts()) {
    prometheus::ClientMetric metric;
    metric.label.push_back({"component", component});
    metric.counter.value = static_cast<double>(count);
    family.metric.push_back(std::move(metric));
  }
  return {std::move(family)};
}

}  // namespace pipescale::metrics

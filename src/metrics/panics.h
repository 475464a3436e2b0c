// pipescale_panics_total{component}: the throws the process's last-resort guards caught
// (common/guard.h), exposed on /metrics by the operator and the router alike.
#pragma once

#include <prometheus/collectable.h>

#include <vector>

namespace pipescale::metrics {

// Read at each scrape, so the guards need not know of Prometheus.
class PanicCollector : public prometheus::Collectable {
 public:
  std::vector<prometheus::MetricFamily> Collect() const override;
};

}  // namespace pipescale::metrics

// Each task's arrivals per second over the last routing::kDispersionWindowSeconds, served to
// Prometheus as pipescale_router_arrival_dispersion{task}: how bursty they are, computed when
// scraped (routing/dispersion.h). A request counts at every task of its path as it arrives, so a
// task's index is that of all the paths through it together.
#pragma once

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "routing/dispersion.h"
#include "routing/graph.h"

namespace pipescale::router {

class ArrivalMeter : public prometheus::Collectable {
 public:
  ArrivalMeter(std::string namespace_name, std::string pipeline)
      : namespace_(std::move(namespace_name)), pipeline_(std::move(pipeline)) {}

  // A request for `path` (of `graph`; none named: counted nowhere) entering at `second` of a
  // steady clock.
  void Arrived(const routing::Graph& graph, int path, std::int64_t second);
  // Each task's index over the complete seconds before `now_second`; tasks without an arrival in
  // the window are forgotten.
  std::map<std::string, double> Dispersions(std::int64_t now_second) const;
  // Now, on the steady clock Arrived's seconds are taken from.
  static std::int64_t NowSecond();

  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  struct Second {
    std::int64_t at = -1;
    double count = 0;
  };
  // The window and the second being counted.
  using Ring = std::array<Second, routing::kDispersionWindowSeconds + 1>;

  const std::string namespace_, pipeline_;
  mutable std::mutex mu_;  // held for a few increments per request; the walk's calls take ms
  mutable std::map<std::string, Ring, std::less<>> rings_;
};

}  // namespace pipescale::router

// Each task's and each path's arrivals per second over the last
// routing::kDispersionWindowSeconds, served to Prometheus when scraped as
// pipescale_router_arrival_dispersion{task}, how bursty they are (routing/dispersion.h), and
// pipescale_router_recent_rate{path}, the rate of the last seconds (routing/recent_rate.h). A
// request counts at its path and every task of it as it arrives, before the door, so a task's
// index is that of all the paths through it together and a refused request is demand too.
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
#include "routing/recent_rate.h"

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
  // Each path's rate over the routing::kRecentRateSeconds complete seconds before `now_second`;
  // paths without an arrival in the dispersion's window are forgotten.
  std::map<std::string, double> RecentRates(std::int64_t now_second) const;
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
  using Rings = std::map<std::string, Ring, std::less<>>;
  static void Count(Rings& rings, const std::string& name, std::int64_t second);
  // `f(name, counts)` with each ring's counts of the window before `now_second`, oldest first;
  // rings with none in it or in `now_second` are dropped. Under mu_.
  template <typename F>
  static void ForWindows(Rings& rings, std::int64_t now_second, F&& f);

  const std::string namespace_, pipeline_;
  mutable std::mutex mu_;     // held for a few increments per request; the walk's calls take ms
  mutable Rings rings_;       // by task
  mutable Rings path_rings_;  // by path
};

}  // namespace pipescale::router

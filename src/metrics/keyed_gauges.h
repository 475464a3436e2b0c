// Gauges kept by owner (a pipeline) and rendered when Prometheus scrapes, for series that come
// and go with what each owner decides. prometheus-cpp's Family::Remove scans every series of the
// family: replacing a plan's series that way took 58% of the operator's CPU at 2000 pipelines.
#pragma once

#include <prometheus/client_metric.h>
#include <prometheus/collectable.h>
#include <prometheus/labels.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace pipescale::metrics {

class KeyedGauges : public prometheus::Collectable {
 public:
  struct Family {
    std::string name;
    std::string help;
  };
  // One series: its family (an index into the constructor's families), all its labels, its
  // value.
  struct Sample {
    size_t family = 0;
    prometheus::Labels labels;
    double value = 0;
  };

  explicit KeyedGauges(std::vector<Family> families) : families_(std::move(families)) {}

  // Replaces what `owner` reported under `part` (one owner may report parts at different times,
  // e.g. its plan and its conditions). Thread-safe, as are the others.
  void Set(const std::string& owner, const std::string& part, const std::vector<Sample>& samples);
  // Drops every part of `owner`.
  void Forget(const std::string& owner);

  // Every family, each series under it, by owner and part. Renders outside the lock: at 5000
  // owners a scrape is a few hundred thousand series, which Set must not wait behind.
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  // A sample as kept: its labels in a vector, the shape a scrape copies out, at half the memory
  // of a map (5000 pipelines keep 90,000 series).
  struct Kept {
    size_t family = 0;
    std::vector<prometheus::ClientMetric::Label> labels;
    double value = 0;
  };
  using Samples = std::shared_ptr<const std::vector<Kept>>;  // replaced whole, never changed

  const std::vector<Family> families_;
  mutable std::mutex mu_;
  std::map<std::pair<std::string, std::string>, Samples> samples_;  // by (owner, part)
};

}  // namespace pipescale::metrics

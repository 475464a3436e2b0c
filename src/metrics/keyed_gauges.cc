#include "metrics/keyed_gauges.h"

#include <prometheus/client_metric.h>
#include <prometheus/metric_family.h>
#include <prometheus/metric_type.h>

#include "common/check.h"

namespace pipescale::metrics {

void KeyedGauges::Set(const std::string& owner, const std::string& part,
                      const std::vector<Sample>& samples) {
  std::vector<Kept> kept;
  kept.reserve(samples.size());
  for (const Sample& s : samples) {
    PIPESCALE_CHECK(s.family < families_.size());
    Kept k{.family = s.family, .labels = {}, .value = s.value};
    k.labels.reserve(s.labels.size());
    for (const auto& [name, value] : s.labels) k.labels.push_back({name, value});
    kept.push_back(std::move(k));
  }
  Samples shared =
      kept.empty() ? nullptr : std::make_shared<const std::vector<Kept>>(std::move(kept));
  std::lock_guard lock(mu_);
  if (!shared) {
    samples_.erase({owner, part});
  } else {
    samples_[{owner, part}] = std::move(shared);
  }
}

void KeyedGauges::Forget(const std::string& owner) {
  std::lock_guard lock(mu_);
  auto it = samples_.lower_bound({owner, ""});
  while (it != samples_.end() && it->first.first == owner) it = samples_.erase(it);
}

std::vector<prometheus::MetricFamily> KeyedGauges::Collect() const {
  std::vector<prometheus::MetricFamily> out(families_.size());
  for (size_t i = 0; i < families_.size(); ++i) {
    out[i].name = families_[i].name;
    out[i].help = families_[i].help;
    out[i].type = prometheus::MetricType::Gauge;
  }
  std::vector<Samples> parts;
  {
    std::lock_guard lock(mu_);
    parts.reserve(samples_.size());
    for (const auto& [key, samples] : samples_) parts.push_back(samples);
  }
  for (const Samples& samples : parts) {
    for (const Kept& s : *samples) {
      prometheus::ClientMetric m;
      m.label = s.labels;
      m.gauge.value = s.value;
      out[s.family].metric.push_back(std::move(m));
    }
  }
  return out;
}

}  // namespace pipescale::metrics

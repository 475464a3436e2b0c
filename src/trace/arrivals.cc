#include "trace/arrivals.h"

namespace pipescale::trace {

Mix ClientMix(const model::Pipeline& pipeline) {
  Mix mix;
  for (const model::Path& p : pipeline.spec.paths) mix.path_weights.push_back(p.weight);
  for (const model::QuerySize& q : pipeline.spec.query_sizes)
    mix.sizes.emplace_back(q.size, q.weight);
  return mix;
}

ArrivalStream::ArrivalStream(const Trace& trace, Mix mix, std::uint64_t seed)
    : trace_(trace), mix_(std::move(mix)), rng_(seed) {
  for (const auto& [size, weight] : mix_.sizes) size_weights_.push_back(weight);
  if (!trace_.steps.empty()) step_end_s_ = trace_.steps[0].seconds;
}

int ArrivalStream::Pick(const std::vector<double>& weights) {
  if (weights.empty()) return -1;
  double total = 0;
  for (double w : weights) total += w;
  double x = std::uniform_real_distribution<double>(0, total)(rng_);
  for (size_t i = 0; i < weights.size(); ++i) {
    if ((x -= weights[i]) < 0) return static_cast<int>(i);
  }
  return static_cast<int>(weights.size()) - 1;
}

std::optional<Arrival> ArrivalStream::Next() {
  Arrival a;
  if (!trace_.arrivals.empty()) {
    if (next_ >= trace_.arrivals.size()) return std::nullopt;
    a.at_s = trace_.arrivals[next_++];
  } else {
    while (true) {
      if (next_ >= trace_.steps.size()) return std::nullopt;
      const Step& step = trace_.steps[next_];
      if (step.rps > 0) {
        const double at = at_s_ + std::exponential_distribution<double>(1)(rng_) / step.rps;
        if (at < step_end_s_) {
          at_s_ = at;
          break;
        }
      }
      at_s_ = step_end_s_;
      if (++next_ < trace_.steps.size()) step_end_s_ += trace_.steps[next_].seconds;
    }
    a.at_s = at_s_;
    a.step = static_cast<int>(next_);
  }
  a.path = Pick(mix_.path_weights);
  const int size = Pick(size_weights_);
  if (size >= 0) a.rows = mix_.sizes[size].first;
  return a;
}

}  // namespace pipescale::trace

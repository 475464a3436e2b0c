#include "reconciler/wake_ahead.h"

#include <algorithm>
#include <cmath>

namespace pipescale::reconciler {

std::optional<model::WakeForecast> ForecastReturn(const std::vector<model::LoadReturn>& returns,
                                                  const model::WakeAhead& rule, double lead_seconds,
                                                  double now) {
  if (rule.confirmations <= 0) return std::nullopt;
  const double tolerance = rule.ToleranceSeconds();
  const double expected = now + lead_seconds;
  model::WakeForecast out{.until = expected};
  for (int k = 1; k <= rule.confirmations; ++k) {
    bool seen = false;
    for (const model::LoadReturn& r : returns) {
      const double again = r.at + k * rule.period_seconds;
      if (std::abs(again - expected) > tolerance) continue;
      seen = true;
      out.until = std::max(out.until, again + tolerance);
      out.rate_rps = std::max(out.rate_rps, r.rate_rps);
    }
    if (!seen) return std::nullopt;
  }
  return out;
}

void NoteReturn(std::vector<model::LoadReturn>& returns, const model::WakeAhead& rule, double now) {
  const double oldest = now - rule.confirmations * rule.period_seconds - rule.ToleranceSeconds();
  std::erase_if(returns, [&](const model::LoadReturn& r) { return r.at < oldest || r.at > now; });
  returns.push_back({.at = now});
  if (returns.size() > kMaxReturns) {
    returns.erase(returns.begin(), returns.end() - static_cast<long>(kMaxReturns));
  }
}

void NoteReturnRate(std::vector<model::LoadReturn>& returns, double rate_rps, double now) {
  for (model::LoadReturn& r : returns) {
    if (now >= r.at && now - r.at <= kReturnRateSeconds)
      r.rate_rps = std::max(r.rate_rps, rate_rps);
  }
}

}  // namespace pipescale::reconciler

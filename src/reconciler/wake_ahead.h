// spec.scaleToZero.wakeAhead, pure: a seasonal forecast of load returning to a sleeping path. The
// load came back at this time of the period in each of the last `confirmations` periods, so the
// path wakes its start-up ahead; a forecast that was wrong once breaks the chain, so capacity is
// never kept for a forecast that has been wrong.
#pragma once

#include <optional>
#include <vector>

#include "model/pipeline.h"
#include "model/status.h"

namespace pipescale::reconciler {

// The forecast for a sleeping path whose wake takes `lead_seconds`, at `now` (unix seconds): a
// wake when, for every k from 1 to the rule's confirmations, a return lies within the tolerance
// of `now + lead_seconds` k periods ago. It lasts until the latest of those returns a period on
// plus the tolerance, planned for the highest rate they saw. nullopt when any period has none.
std::optional<model::WakeForecast> ForecastReturn(const std::vector<model::LoadReturn>& returns,
                                                  const model::WakeAhead& rule, double lead_seconds,
                                                  double now);

// Adds a return at `now` and forgets those too old to confirm a forecast (more than
// confirmations periods and a tolerance ago), keeping at most kMaxReturns.
inline constexpr size_t kMaxReturns = 32;
void NoteReturn(std::vector<model::LoadReturn>& returns, const model::WakeAhead& rule, double now);

// A return's rate is the highest the path sees this long after it: a morning's load ramps up.
inline constexpr double kReturnRateSeconds = 60;
void NoteReturnRate(std::vector<model::LoadReturn>& returns, double rate_rps, double now);

}  // namespace pipescale::reconciler

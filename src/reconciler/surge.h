// A surge: a path whose arrivals over the routers' last seconds (routing/recent_rate.h) are above
// the rate it was last measured at by more than counting noise makes them. The plan takes it at
// once, as Knative's autoscaler panics on its short window: the rate windows show a burst only
// as their 10 s fill, and a steady pipeline is looked at once an interval. Pure.
#pragma once

#include <map>
#include <string>

#include "model/pipeline.h"
#include "model/status.h"

namespace pipescale::reconciler {

// How often the operator compares every pipeline's recent rates with its status (a surge queues
// a reconcile at once, as Knative's autoscaler ticks), and looks again while one lasts.
inline constexpr double kSurgeLookSeconds = 2;
// A surge's count over the recent window is past the measured rate's by this many standard
// deviations of the counts (Poisson's times the arrivals' index of dispersion, a lumpy load's
// seconds swing more) and kSurgeFloor requests more (so that a path from nothing needs a few
// requests), and its rate is above the measured one by at least kSurgeRatio.
inline constexpr double kSurgeDeviations = 3;
inline constexpr double kSurgeFloor = 2;
inline constexpr double kSurgeRatio = 1.1;

// The paths of `recent` (requests per second over routing::kRecentRateSeconds) that surge past
// `measured` (their rates as the rate windows read them; a path absent there reads 0), with
// their recent rates; `dispersion` by path (absent: 1, Poisson). Values that are not finite and
// non-negative are ignored.
std::map<std::string, double> SurgeRates(const std::map<std::string, double>& recent,
                                         const std::map<std::string, double>& measured,
                                         const std::map<std::string, double>& dispersion = {});

// Whether a pipeline can surge: its optimizer plans for surges, it runs a router (which measures
// the recent rates), and its status reported the rates it measured.
bool SurgeWatched(const model::Pipeline& pipeline, const model::PipelineStatus& status);
// Whether its next reconcile should come now: it is watched and `recent` (the routers' recent
// rates) surges past the rates its status reported, as Poisson arrivals (the decision weighs
// the measured dispersion).
bool Surging(const model::Pipeline& pipeline, const model::PipelineStatus& status,
             const std::map<std::string, double>& recent);

// By path, the index of dispersion its surges are judged with: the largest of its tasks' as the
// routers measured them (MetricsSnapshot::task_dispersion), within [1, limits::kMaxDispersion].
std::map<std::string, double> PathDispersions(const model::Pipeline& pipeline,
                                              const std::map<std::string, double>& by_task);

}  // namespace pipescale::reconciler

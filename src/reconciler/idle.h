// spec.scaleToZero's rule, pure: which paths have had no request for afterIdleSeconds (they
// sleep), which tasks no awake path needs (they go to 0 replicas), and when to look again. A
// path wakes at the first request the router counts for it, answered or held at its door.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>

#include "model/metrics_snapshot.h"
#include "model/pipeline.h"

namespace pipescale::reconciler {

// Looks this often while a path sleeps: its first request should wake it within a scrape or two,
// not an interval, since the request waits at the door for the whole wake.
inline constexpr double kSleepingLookSeconds = 1;

struct Sleep {
  // Each quiet path since when (kept from `quiet_before`, or now for a path quiet from now on).
  std::map<std::string, double> quiet_since;
  // Each path ("" for requests naming none) with requests held at the door, since when: the
  // first look that saw them (kept from `held_before`).
  std::map<std::string, double> held_since;
  std::set<std::string> sleeping_paths;  // quiet for afterIdleSeconds
  std::set<std::string> sleeping_tasks;  // on no awake path: 0 replicas
  bool idle = false;                     // every task sleeps
  // When to look again for the rule's sake (seconds from now): soon while a path sleeps, else
  // when the next quiet path falls asleep; nullopt when nothing is quiet.
  std::optional<double> look_after_seconds;
};

// The rule for `pipeline` (which has spec.scaleToZero) at `now` (unix seconds), from a complete
// snapshot and the quiet and holding times the last decision kept. A path is quiet when its rate
// reads 0 and the router holds nothing for it (nor any request naming no path). A pipeline
// without paths is one path, named "", measured by its arrival rate.
Sleep JudgeSleep(const model::Pipeline& pipeline, const model::MetricsSnapshot& metrics,
                 const std::map<std::string, double>& quiet_before,
                 const std::map<std::string, double>& held_before, double now);

// The path rates a plan is made for, with the requests held at the router's door counted as
// arrivals (they are in no rate until answered): over the time since they were first seen held
// (`held_since`, plus the second the scrape and the look take to see them), else over the rate's
// short window. A wake is sized for the rate at which requests wait, from its first look on, not
// for the one request the rate window has seen.
std::map<std::string, double> RatesWithHeld(const model::Pipeline& pipeline,
                                            const model::MetricsSnapshot& metrics,
                                            const std::map<std::string, double>& held_since,
                                            double now);

}  // namespace pipescale::reconciler

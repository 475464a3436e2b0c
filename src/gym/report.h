// What a gym run measured, as a user compares policies by it: per execution path what the
// clients saw (the load generator's figures), per policy the hardware it held and what it did,
// and per interval the series a plot draws. Value types only; render.h writes them out.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pipescale::gym {

// What the clients of one execution path saw, counted as pipescale-loadgen counts them.
struct PathOutcome {
  double slo_ms = 0;
  long sent = 0;
  long answered = 0;                  // 200
  long within_slo = 0;                // 200 within the SLO: the goodput
  std::map<std::string, long> codes;  // by HTTP status as text ("200", "503", "504")
  // Requests not answered 200, by why: the router's shed reasons ("late", "no-pod"), Loki's drop
  // reasons, "pool queue full", "deadline" (a 504 past the deadline).
  std::map<std::string, long> dropped;
  double mean_ms = 0, p50_ms = 0, p99_ms = 0;  // of the answers with 200, nearest rank
  // Cold requests (held at the door while their path woke, spec.scaleToZero): how many, how many
  // of them within the SLO, and the p99 of those answered 200. They are in the counts above too.
  long cold = 0, cold_within_slo = 0;
  double cold_p99_ms = 0;

  // Of all requests sent, the share answered within the SLO (the loadgen's sloAttainment).
  double Attainment() const { return sent > 0 ? static_cast<double>(within_slo) / sent : 0; }
  // Of the requests let in (all but 503s), the share within the SLO (admittedSloAttainment).
  double AdmittedAttainment() const;
  // Of the requests that found their path awake, the share within the SLO.
  double WarmAttainment() const {
    return sent > cold ? static_cast<double>(within_slo - cold_within_slo) / (sent - cold) : 1;
  }
};

// One interval of a run: the load, what ran, and what the clients saw in it.
struct IntervalRow {
  double at_s = 0;                           // the interval's end, seconds from the start
  double offered_rps = 0;                    // requests sent per second in the interval
  std::map<std::string, int> replicas;       // Ready replicas by task at its end
  std::map<std::string, double> p99_ms;      // by path, of its 200s (0 without any)
  std::map<std::string, double> attainment;  // by path, sent in the interval (1 without any)
  double cost_per_hour = 0;                  // of the replicas running (started or not)
};

struct PolicyReport {
  std::string policy;                           // as named on the command line: fa2, hpa, fixed:3
  std::map<std::string, PathOutcome> paths;     // by path name
  std::map<std::string, double> replica_hours;  // by hardware class, pods that existed
  std::map<std::string, double> cost;           // by hardware class, dollars
  double total_cost = 0;
  long pod_starts = 0;       // pods created (scale-outs and replacements)
  long scaling_actions = 0;  // Deployment replica or batch changes written
  double accuracy = 0;       // mean accuracy of what served the answered requests (Loki)
  double mean_replicas = 0;  // Ready replicas over the run, time-weighted, all tasks
  std::vector<IntervalRow> intervals;
  double wall_seconds = 0;  // how long the simulation took

  long Goodput() const;  // answered within the SLO, every path
  // The headline: requests answered within their SLO per dollar of hardware.
  double GoodputPerDollar() const { return total_cost > 0 ? Goodput() / total_cost : 0; }
};

// A baseline tuned by `pipescale simulate --tune` (gym/tune.h): each setting it ran.
struct TunePoint {
  std::string policy;  // with its knobs, as --policy takes it
  double target = 0;   // its knobs, as swept
  int batch = 0;
  double cost = 0;              // dollars over the run
  double worst_attainment = 0;  // the lowest of its paths'
  double mean_replicas = 0;
};

struct Tuned {
  std::string base;               // as given: hpa, keda@c5n-2xlarge, ...
  std::vector<TunePoint> points;  // every setting, in grid order
  std::optional<TunePoint> best;  // the cheapest that keeps the attainment; none when none does
  // When none does: the setting of highest worst attainment (the cheapest of those), to say how
  // far the baseline falls short.
  std::optional<TunePoint> closest;
};

struct Report {
  std::string pipeline;
  std::string trace;
  double seconds = 0;  // simulated
  unsigned seed = 0;
  std::vector<PolicyReport> policies;
  std::vector<Tuned> tuned;  // with --tune: the baselines' sweeps, whose picks run above
  double attainment = 0;     // what --tune asked of every path
};

}  // namespace pipescale::gym

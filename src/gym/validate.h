// The simulator checked against the cluster in a box: a box run as pipescale-loadgen's report and
// hack/run.sh's timeline of Ready replicas record it, and how a simulation of the same pipeline
// and trace compares on what the clients and the bill see (issue: within 10%).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/result.h"
#include "gym/report.h"
#include "gym/simulation.h"

namespace pipescale::gym {

struct BoxRun {
  // The seed of the requests the load generator sent (trace/arrivals.h); 42, its default, where
  // the report does not say.
  std::uint64_t seed = 42;
  std::map<std::string, PathOutcome> paths;  // by path, from the load generator's report
  // Ready replicas by task, sampled over the run: (seconds from the trace's start, by task).
  std::vector<std::pair<double, std::map<std::string, int>>> replicas;
};

// `loadgen_json`: pipescale-loadgen --report's text (its paths and seed); `timeline_csv`: lines
// "seconds,task,ready" after a header (hack/run.sh's timeline.csv). kInvalid names what does not
// parse.
Result<BoxRun> ReadBoxRun(const std::string& loadgen_json, const std::string& timeline_csv);

struct Agreement {
  std::string figure;  // e.g. "car-qa in SLO", "car-qa p99 (ms)", "car-qa not 200", "replicas"
  double box = 0, sim = 0;
  double difference = 0;  // sim - box: percentage points for a share, else relative
  bool points = false;    // the figure is a share, compared in percentage points
  double noise = 0;       // a share's: two standard deviations of one run's, in points
  bool within = false;
};

// `runs` simulations of the box's run: the requests the box's clients sent (its seed, on
// `trace_spec`), each under another draw of the world's chance (Options::world_seed 1..runs), on
// `options`' nodes and round trip. The simulator and the box then meet the same requests, and
// what differs is the system's. kInvalid for a trace that does not parse; the simulator's errors.
Result<std::vector<PolicyReport>> SimulateBox(const nlohmann::json& pipeline_object,
                                              const BoxRun& box, const std::string& trace_spec,
                                              Options options, int runs);

// Several simulations of one pipeline and trace (seeds) as one: per path the counts and p99
// averaged, the interval rows' replicas averaged row by row. The box is one sample; the
// simulator's mean over seeds leaves the box's own sampling noise as the difference to expect.
PolicyReport MeanOf(const std::vector<PolicyReport>& runs);

struct Tolerance {
  double relative = 0.10;  // replicas, and a share's complement where it is large
  double points = 1.0;     // a share may differ this much whatever its size
  double tail = 0.10;      // p99
};

// The box against the simulator's runs of the same pipeline and trace (seeds 1..k), taken as
// their mean (MeanOf). Per path: the share within the SLO and the share not answered 200, each
// within `points`, or within `relative` of the share it misses, or within two standard
// deviations of the difference between one run and the mean of k, whichever is widest: the box is
// one run, and its refusals come in bursts while queues are long, so one run's share varies from
// run to run several times more than independent requests would (the seeds' spread measures it;
// never less than the box's binomial two standard errors). And p99 (relative); over the run: the
// mean absolute difference of the total Ready replicas at the box's samples, relative to the box's
// mean.
std::vector<Agreement> Compare(const BoxRun& box, const std::vector<PolicyReport>& runs,
                               const Tolerance& tolerance = {});

// A Markdown table of `agreements`, one line each.
std::string RenderAgreement(const std::vector<Agreement>& agreements);

}  // namespace pipescale::gym

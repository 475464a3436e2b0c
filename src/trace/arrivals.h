// The requests a trace sends, one at a time: when, on which path and with how many rows, all drawn
// from one seed. pipescale-loadgen sends them and `pipescale simulate` replays them, so a seed
// names the same requests on the cluster and in the simulator (a comparison of the two is then of
// the system, not of two draws of the clients). Pure: the seed is passed in.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <utility>
#include <vector>

#include "model/pipeline.h"
#include "trace/trace.h"

namespace pipescale::trace {

// What the clients choose per request: a path by the paths' weights (none listed: the requests
// name no path) and a size by the sizes' (size, weight) pairs (none listed: one row).
struct Mix {
  std::vector<double> path_weights;
  std::vector<std::pair<int, double>> sizes;
};

// A pipeline's clients: its paths' weights and its spec.querySizes.
Mix ClientMix(const model::Pipeline& pipeline);

struct Arrival {
  double at_s = 0;  // from the trace's start
  int step = -1;    // the trace's step it is sent in; -1 for a CSV's exact times
  int path = -1;    // an index into Mix::path_weights; -1 when it lists none
  int rows = 1;
};

class ArrivalStream {
 public:
  // `trace` must outlive the stream.
  ArrivalStream(const Trace& trace, Mix mix, std::uint64_t seed);

  // The next request, in time order; nullopt once the trace has sent all of them. Steps send
  // Poisson arrivals at their rates (a gap that would cross a step's end is drawn again from
  // there, which memorylessness allows); a CSV's times are sent as they are.
  std::optional<Arrival> Next();

 private:
  // An index drawn by `weights` (-1 when there are none).
  int Pick(const std::vector<double>& weights);

  const Trace& trace_;
  Mix mix_;
  std::vector<double> size_weights_;
  std::mt19937_64 rng_;
  size_t next_ = 0;        // the next exact time, or the step sending now
  double at_s_ = 0;        // the last arrival, or the current step's start
  double step_end_s_ = 0;  // when the step sending now ends
};

}  // namespace pipescale::trace

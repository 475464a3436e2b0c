// The load shapes pipescale-loadgen sends and `pipescale simulate` replays: rates over time
// (constant steps, the FA2 paper's fluctuating 8 <-> 27 requests/s, normal-random, diurnal with
// bursts, or a CSV of rates) or the exact arrival times of a CSV. Pure: parsing and shaping only,
// the seed passed in.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "model/limits.h"

namespace pipescale::trace {

struct Step {
  double rps = 0;
  double seconds = 0;
  bool operator==(const Step&) const = default;
};

struct Trace {
  std::vector<Step> steps;       // Poisson arrivals at each step's rate
  std::vector<double> arrivals;  // or exactly these, in seconds from the start (ascending)
  double Seconds() const;
  double Requests() const;  // the requests it sends (on average, for rates)
  // Requests() per second of Seconds(); a trace shorter than a second sends them in one.
  double MeanRps() const;
};

// The most a trace may ask for (limits::kMaxTraceSeconds, limits::kMaxTraceRps).
inline constexpr double kMaxSeconds = limits::kMaxTraceSeconds;
inline constexpr double kMaxRps = limits::kMaxTraceRps;

// One of:
//   RPS:SECONDS[,RPS:SECONDS...]       steps
//   fa2:SECONDS                        8 and 27 requests/s in turns of 30 s (FA2, RTAS'22)
//   normal:MEAN:SD:SECONDS             a rate drawn each second from N(MEAN, SD), at least 0
//   diurnal:LOW:HIGH:PERIOD:SECONDS[:BURST]
//                                      a sine from LOW to HIGH over PERIOD s, in 1 s steps; with
//                                      BURST, BURST times the rate for 5 s every PERIOD / 4
//   csv:FILE (the file's text in `csv_text`)
//                                      lines "SECONDS,RPS" (the rate from then on) or "SECONDS"
//                                      (one request then); '#' starts a comment
// kInvalid names what is wrong, also for a trace longer than kMaxSeconds or with a rate above
// kMaxRps.
Result<Trace> ParseTrace(const std::string& spec, std::uint64_t seed,
                         const std::string& csv_text = "");

// `trace` with every rate times `factor` (a trace's shape replayed at another scale); kInvalid
// for exact arrival times (which no factor scales without choosing requests) and for a factor
// outside (0, 1000] or a rate past kMaxRps.
Result<Trace> ScaleTrace(Trace trace, double factor);

}  // namespace pipescale::trace

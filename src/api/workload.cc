#include "api/workload.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "common/strings.h"
#include "optimizer/graph.h"

namespace pipescale::api {

std::string RateProblem(double rps) {
  if (!std::isfinite(rps)) {
    return StrFormat("must be a finite number of requests per second, got %g", rps);
  }
  if (rps < 0) return StrFormat("must be >= 0, got %g", rps);
  if (rps > limits::kMaxRateRps) {
    return StrFormat("must be at most %.10g requests per second, got %g", limits::kMaxRateRps, rps);
  }
  return "";
}

Result<model::Workload> MakeWorkload(const model::Pipeline& pipeline,
                                     std::optional<double> total_rps,
                                     const std::map<std::string, double>& per_path_rps) {
  model::Workload workload;
  for (const auto& [name, rate] : per_path_rps) {
    bool known = false;
    for (const auto& p : pipeline.spec.paths) known = known || p.name == name;
    if (!known) {
      return Error{ErrorKind::kInvalid, "--path-rate: unknown path " + QuoteUserText(name)};
    }
    if (std::string problem = RateProblem(rate); !problem.empty()) {
      return Error{ErrorKind::kInvalid, "--path-rate " + QuoteUserText(name) + ": " + problem};
    }
    workload.path_rates_rps[name] = rate;
  }
  if (total_rps) {
    if (std::string problem = RateProblem(*total_rps); !problem.empty()) {
      return Error{ErrorKind::kInvalid, "--rate " + problem};
    }
  }
  if (!total_rps && per_path_rps.empty()) {
    return Error{ErrorKind::kInvalid, "give a load: --rate RPS or --path-rate NAME=RPS"};
  }
  double weight = 0;
  for (const auto& p : pipeline.spec.paths) {
    if (!per_path_rps.contains(p.name)) weight += p.weight;
  }
  for (const auto& p : pipeline.spec.paths) {
    if (per_path_rps.contains(p.name)) continue;
    workload.path_rates_rps[p.name] = total_rps && weight > 0 ? *total_rps * p.weight / weight : 0;
  }
  return workload;
}

model::Workload AtLeastMinRate(const model::Pipeline& pipeline, model::Workload workload) {
  if (pipeline.spec.min_rate_rps <= 0) return workload;
  // Validation held spec.minRate to what RateProblem takes, so the spread cannot fail.
  const model::Workload floor = MakeWorkload(pipeline, pipeline.spec.min_rate_rps, {}).value();
  for (const auto& [path, share] : floor.path_rates_rps) {
    double& rate = workload.path_rates_rps[path];
    rate = std::max(rate, share);
  }
  return workload;
}

namespace {

struct Sample {
  double time = 0;
  double rate = 0;
};

// One `time,rate` line: the sample, nullopt for a line that is no sample (a header), or the
// problem with it.
Result<std::optional<Sample>> ParseSample(const std::string& line, size_t line_no, bool header_ok) {
  const size_t comma = line.find(',');
  char* rest = nullptr;
  const std::string time_text = line.substr(0, comma);
  const double time = std::strtod(time_text.c_str(), &rest);
  const bool time_ok = comma != std::string::npos && rest != time_text.c_str() && *rest == 0;
  if (!time_ok && header_ok) return std::optional<Sample>();
  const std::string rate_text = comma == std::string::npos ? "" : line.substr(comma + 1);
  const double rate = std::strtod(rate_text.c_str(), &rest);
  if (!time_ok || rest == rate_text.c_str() || *rest != 0 || !std::isfinite(time) ||
      !std::isfinite(rate)) {
    return Error{ErrorKind::kInvalid,
                 StrFormat("line %zu: expected time,rate (seconds, requests per second), got %s",
                           line_no, QuoteUserText(line).c_str())};
  }
  if (rate < 0) {
    return Error{ErrorKind::kInvalid, StrFormat("line %zu: the rate must be >= 0", line_no)};
  }
  if (std::string problem = RateProblem(rate); !problem.empty()) {
    return Error{ErrorKind::kInvalid, StrFormat("line %zu: the rate %s", line_no, problem.c_str())};
  }
  return std::optional<Sample>(Sample{time, rate});
}

}  // namespace

Result<std::vector<double>> ParseRateHistory(std::string_view csv, double step_seconds) {
  std::vector<double> out;
  std::optional<double> start;
  double last_time = -std::numeric_limits<double>::infinity();
  size_t line_no = 0;
  size_t at = 0;
  while (at < csv.size()) {
    const size_t end = std::min(csv.find('\n', at), csv.size());
    std::string line(csv.substr(at, end - at));
    at = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    auto sample = ParseSample(line, line_no, !start);
    if (!sample) return sample.error();
    if (!*sample) continue;  // a header line
    const auto [time, rate] = **sample;
    if (time < last_time) {
      return Error{ErrorKind::kInvalid,
                   StrFormat("line %zu: time %g is before the previous line's", line_no, time)};
    }
    last_time = time;
    if (!start) start = time;
    // Checked as a double first: a far-off time would overflow the step count.
    const double steps = (time - *start) / step_seconds;
    if (!(steps < static_cast<double>(limits::kMaxHistorySteps))) {
      return Error{ErrorKind::kInvalid,
                   StrFormat("line %zu: the history spans more than %zu steps of %g s", line_no,
                             limits::kMaxHistorySteps, step_seconds)};
    }
    const auto step = static_cast<size_t>(steps);
    if (step < out.size()) {
      out[step] = std::max(out[step], rate);
      continue;
    }
    while (out.size() < step) out.push_back(out.back());  // steps with no sample
    out.push_back(rate);
  }
  if (out.empty()) return Error{ErrorKind::kInvalid, "no time,rate lines"};
  return out;
}

std::map<std::string, double> PathShares(const model::Pipeline& pipeline,
                                         const model::Workload& workload) {
  const std::vector<double> rates = optimizer::PathRatesRps(pipeline, workload);
  double total = 0, weight = 0;
  for (size_t i = 0; i < rates.size(); ++i) {
    total += rates[i];
    weight += pipeline.spec.paths[i].weight;
  }
  std::map<std::string, double> out;
  for (size_t i = 0; i < rates.size(); ++i) {
    const model::Path& p = pipeline.spec.paths[i];
    out[p.name] = total > 0 ? rates[i] / total : p.weight / weight;
  }
  return out;
}

}  // namespace pipescale::api

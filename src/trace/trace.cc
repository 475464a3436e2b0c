#include "trace/trace.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <optional>
#include <random>
#include <sstream>

#include "common/strings.h"

namespace pipescale::trace {
namespace {

Error Invalid(const std::string& spec, const std::string& why) {
  return Error{ErrorKind::kInvalid, "--trace " + spec + ": " + why};
}

Error TooLong(const std::string& spec) {
  return Invalid(spec, StrFormat("lasts longer than %.0f days", kMaxSeconds / 86400));
}

// The numbers of "a:b:c"; nullopt when one is not a finite number >= 0.
std::optional<std::vector<double>> Numbers(const std::string& text) {
  std::vector<double> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ':');) {
    char* end = nullptr;
    const double v = std::strtod(item.c_str(), &end);
    if (item.empty() || *end != '\0' || !std::isfinite(v) || v < 0) return std::nullopt;
    out.push_back(v);
  }
  return out;
}

Result<Trace> Steps(const std::string& spec) {
  Trace t;
  std::stringstream ss(spec);
  for (std::string step; std::getline(ss, step, ',');) {
    const auto n = Numbers(step);
    if (!n || n->size() != 2) return Invalid(spec, "each step must read RPS:SECONDS");
    t.steps.push_back({(*n)[0], (*n)[1]});
  }
  if (t.steps.empty()) return Invalid(spec, "no steps");
  return t;
}

Trace Fa2(double seconds) {
  Trace t;
  for (long turn = 0; 30.0 * static_cast<double>(turn) < seconds; ++turn) {
    const double at = 30.0 * static_cast<double>(turn);
    t.steps.push_back({turn % 2 == 0 ? 8.0 : 27.0, std::min(30.0, seconds - at)});
  }
  return t;
}

Trace Normal(double mean, double sd, double seconds, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> rate(mean, sd);
  Trace t;
  for (long second = 0; static_cast<double>(second) < seconds; ++second) {
    const auto at = static_cast<double>(second);
    t.steps.push_back({std::max(0.0, rate(rng)), std::min(1.0, seconds - at)});
  }
  return t;
}

Trace Diurnal(double low, double high, double period, double seconds, double burst) {
  Trace t;
  for (long second = 0; static_cast<double>(second) < seconds; ++second) {
    const auto at = static_cast<double>(second);
    double rps = low + (high - low) * (1 - std::cos(2 * std::numbers::pi * at / period)) / 2;
    if (burst > 0 && std::fmod(at, period / 4) < 5) rps *= burst;
    t.steps.push_back({rps, std::min(1.0, seconds - at)});
  }
  return t;
}

Result<Trace> Csv(const std::string& spec, const std::string& text) {
  Trace t;
  std::vector<std::pair<double, double>> rates;  // (from, rps)
  std::stringstream lines(text);
  int number = 0;
  for (std::string line; std::getline(lines, line);) {
    ++number;
    line = line.substr(0, line.find('#'));
    line.erase(std::remove_if(line.begin(), line.end(), ::isspace), line.end());
    if (line.empty()) continue;
    std::replace(line.begin(), line.end(), ',', ':');
    const auto n = Numbers(line);
    if (!n || n->empty() || n->size() > 2) {
      return Invalid(spec, "line " + std::to_string(number) + " must read SECONDS[,RPS]");
    }
    if (n->size() == 1) {
      t.arrivals.push_back((*n)[0]);
    } else {
      rates.emplace_back((*n)[0], (*n)[1]);
    }
  }
  if (!t.arrivals.empty() && !rates.empty()) return Invalid(spec, "mixes arrivals and rates");
  std::sort(t.arrivals.begin(), t.arrivals.end());
  std::sort(rates.begin(), rates.end());
  // The last rate lasts a second: a CSV of rates says when each starts, not when the last ends.
  for (size_t i = 0; i < rates.size(); ++i) {
    const double end = i + 1 < rates.size() ? rates[i + 1].first : rates[i].first + 1;
    if (i == 0 && rates[0].first > 0) t.steps.push_back({0, rates[0].first});
    t.steps.push_back({rates[i].second, end - rates[i].first});
  }
  if (t.steps.empty() && t.arrivals.empty()) return Invalid(spec, "has no line");
  return t;
}

// The length a shape's numbers ask for: its SECONDS.
std::optional<double> ShapeSeconds(const std::string& kind, const std::vector<double>& n) {
  if (kind == "fa2" && n.size() == 1) return n[0];
  if (kind == "normal" && n.size() == 3) return n[2];
  if (kind == "diurnal" && (n.size() == 4 || n.size() == 5)) return n[3];
  return std::nullopt;
}

Result<Trace> Shape(const std::string& spec, std::uint64_t seed, const std::string& csv_text) {
  const auto colon = spec.find(':');
  const std::string kind = spec.substr(0, colon);
  const std::string rest = colon == std::string::npos ? "" : spec.substr(colon + 1);
  if (kind == "csv") return Csv(spec, csv_text);
  if (kind != "fa2" && kind != "normal" && kind != "diurnal") return Steps(spec);
  const auto n = Numbers(rest);
  // -1: the numbers do not fit the shape.
  const double seconds = n ? ShapeSeconds(kind, *n).value_or(-1) : -1;
  // The shapes build a step per second: their length is checked before they are built.
  if (seconds > kMaxSeconds) return TooLong(spec);
  if (kind == "fa2" && seconds >= 0) return Fa2(seconds);
  if (kind == "normal" && seconds >= 0) return Normal((*n)[0], (*n)[1], seconds, seed);
  if (kind == "diurnal" && seconds >= 0 && (*n)[2] > 0) {
    return Diurnal((*n)[0], (*n)[1], (*n)[2], seconds, n->size() == 5 ? (*n)[4] : 0);
  }
  return Invalid(spec, "see pipescale-loadgen --help for the shapes and their numbers");
}

}  // namespace

double Trace::Seconds() const {
  if (!arrivals.empty()) return arrivals.back();
  double s = 0;
  for (const Step& step : steps) s += step.seconds;
  return s;
}

double Trace::Requests() const {
  if (!arrivals.empty()) return static_cast<double>(arrivals.size());
  double requests = 0;
  for (const Step& step : steps) requests += step.rps * step.seconds;
  return requests;
}

double Trace::MeanRps() const { return Requests() / std::max(1.0, Seconds()); }

Result<Trace> ParseTrace(const std::string& spec, std::uint64_t seed, const std::string& csv_text) {
  auto trace = Shape(spec, seed, csv_text);
  if (!trace) return trace;
  if (trace->Seconds() > kMaxSeconds) return TooLong(spec);
  for (const Step& step : trace->steps) {
    if (step.rps > kMaxRps) return Invalid(spec, StrFormat("asks for more than %.0f/s", kMaxRps));
  }
  return trace;
}

Result<Trace> ScaleTrace(Trace trace, double factor) {
  if (!(factor > 0 && factor <= 1000)) {
    return Error{ErrorKind::kInvalid, "the scale must be in (0, 1000]"};
  }
  if (factor == 1) return trace;
  if (!trace.arrivals.empty()) {
    return Error{ErrorKind::kInvalid,
                 "a trace of arrival times cannot be scaled; give one of rates (SECONDS,RPS)"};
  }
  for (Step& step : trace.steps) {
    step.rps *= factor;
    if (step.rps > kMaxRps) {
      return Error{
          ErrorKind::kInvalid,
          StrFormat("scaled, the trace asks for %.3g requests/s; at most %.0e", step.rps, kMaxRps)};
    }
  }
  return trace;
}

}  // namespace pipescale::trace

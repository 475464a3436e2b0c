#include "gym/validate.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/strings.h"

namespace pipescale::gym {
namespace {

using nlohmann::json;

Result<PathOutcome> ReadPath(const std::string& name, const json& p) {
  if (!p.is_object() || !p.contains("sent") || !p["sent"].is_number_integer() ||
      p["sent"].get<long>() < 0) {
    return Error{ErrorKind::kInvalid, "paths." + name + ".sent: expected a whole number >= 0"};
  }
  PathOutcome out;
  out.sent = p["sent"].get<long>();
  const json codes = p.value("codes", json::object());
  if (!codes.is_object()) return Error{ErrorKind::kInvalid, "paths." + name + ".codes: an object"};
  for (const auto& [code, n] : codes.items()) {
    if (!n.is_number_integer() || n.get<long>() < 0) {
      return Error{ErrorKind::kInvalid,
                   StrFormat("paths.%s.codes.%s: not a count", name.c_str(), code.c_str())};
    }
    out.codes[code] = n.get<long>();
  }
  out.answered = out.codes.contains("200") ? out.codes["200"] : 0;
  const json attainment = p.value("sloAttainment", json(0.0));
  const json p99 = p.value("p99Ms", json(0.0));
  if (!attainment.is_number() || !p99.is_number() || !(attainment.get<double>() >= 0) ||
      attainment.get<double>() > 1 || !(p99.get<double>() >= 0) ||
      !std::isfinite(p99.get<double>())) {
    return Error{ErrorKind::kInvalid, "paths." + name +
                                          ": sloAttainment is a share from 0 to 1 and p99Ms a "
                                          "number of milliseconds"};
  }
  out.within_slo = std::lround(attainment.get<double>() * static_cast<double>(out.sent));
  out.p99_ms = p99.get<double>();
  const json p50 = p.value("p50Ms", json(0.0));
  out.p50_ms = p50.is_number() && std::isfinite(p50.get<double>()) ? p50.get<double>() : 0;
  return out;
}

Status ReadTimeline(const std::string& csv, BoxRun& run) {
  std::istringstream lines(csv);
  std::string line;
  std::getline(lines, line);  // the header
  std::map<double, std::map<std::string, int>> by_time;
  for (int n = 2; std::getline(lines, line); ++n) {
    if (line.empty()) continue;
    const size_t a = line.find(','), b = line.rfind(',');
    char* end = nullptr;
    const double t = std::strtod(line.c_str(), &end);
    if (a == std::string::npos || a == b || end != line.c_str() + a) {
      return Error{ErrorKind::kInvalid, "timeline line " + std::to_string(n) +
                                            ": expected "
                                            "seconds,task,ready"};
    }
    by_time[t][line.substr(a + 1, b - a - 1)] = std::atoi(line.c_str() + b + 1);
  }
  run.replicas.assign(by_time.begin(), by_time.end());
  return Done{};
}

double Total(const std::map<std::string, int>& by_task) {
  double sum = 0;
  for (const auto& [task, n] : by_task) sum += n;
  return sum;
}

// A share compared in points: within `points`, `relative` of the larger of its complements, or
// the noise between one run and the simulator's mean (`noise`, in points).
Agreement Share(std::string figure, double box, double sim, double noise, const Tolerance& t,
                bool miss) {
  Agreement a{.figure = std::move(figure), .box = 100 * box, .sim = 100 * sim, .points = true};
  a.difference = a.sim - a.box;
  a.noise = noise;
  const double scale = miss ? std::max(box, sim) : std::max(1 - box, 1 - sim);
  a.within =
      std::abs(a.difference) <= std::max({t.points, 100 * t.relative * scale, a.noise}) + 1e-9;
  return a;
}

// Two standard deviations, in points, of the difference between one run's share and the mean of
// `seeds` runs' (each an independent run of the same system: variance s^2 (1 + 1/k)), and never
// less than two standard errors of the box's share over its `n` requests.
double ShareNoise(double box, double n, const std::vector<double>& seeds) {
  const double binomial = n > 0 ? 200 * std::sqrt(box * (1 - box) / n) : 0;
  const auto k = static_cast<double>(seeds.size());
  if (seeds.size() < 2) return binomial;
  double mean = 0, squares = 0;
  for (double x : seeds) mean += x / k;
  for (double x : seeds) squares += (x - mean) * (x - mean);
  const double run_sd = std::sqrt(squares / (k - 1));
  return std::max(binomial, 200 * run_sd * std::sqrt(1 + 1 / k));
}

double Missed(const PathOutcome& p) {
  return p.sent > 0 ? 1 - static_cast<double>(p.answered) / static_cast<double>(p.sent) : 0;
}

Agreement Relative(std::string figure, double box, double sim, double tolerance) {
  Agreement a{.figure = std::move(figure), .box = box, .sim = sim};
  a.difference = box != 0 ? (sim - box) / box : (sim == 0 ? 0 : 1);
  a.within = std::abs(a.difference) <= tolerance + 1e-9;
  return a;
}

}  // namespace

Result<BoxRun> ReadBoxRun(const std::string& loadgen_json, const std::string& timeline_csv) {
  const json report = json::parse(loadgen_json, nullptr, false);
  if (report.is_discarded() || !report.is_object() || !report.contains("paths") ||
      !report["paths"].is_object()) {
    return Error{ErrorKind::kInvalid, "the load generator's report: expected {paths: {...}}"};
  }
  BoxRun run;
  for (const auto& [name, p] : report["paths"].items()) {
    auto path = ReadPath(name, p);
    if (!path) return path.error();
    run.paths[name] = std::move(*path);
  }
  if (report.contains("seed")) {
    if (!report["seed"].is_number_unsigned()) {
      return Error{ErrorKind::kInvalid, "the load generator's report: seed is a whole number >= 0"};
    }
    run.seed = report["seed"].get<std::uint64_t>();
  }
  if (Status s = ReadTimeline(timeline_csv, run); !s) return s.error();
  return run;
}

Result<std::vector<PolicyReport>> SimulateBox(const nlohmann::json& pipeline_object,
                                              const BoxRun& box, const std::string& trace_spec,
                                              Options options, int runs) {
  options.seed = box.seed;
  auto trace = trace::ParseTrace(trace_spec, box.seed);
  if (!trace) return trace.error();
  options.trace = std::move(*trace);
  std::vector<PolicyReport> out;
  for (int world = 1; world <= runs; ++world) {
    options.world_seed = static_cast<std::uint64_t>(world);
    auto sim = Simulate(pipeline_object, options);
    if (!sim) return sim.error();
    out.push_back(std::move(*sim));
  }
  return out;
}

std::vector<Agreement> Compare(const BoxRun& box, const std::vector<PolicyReport>& runs,
                               const Tolerance& t) {
  const PolicyReport sim = MeanOf(runs);
  std::vector<Agreement> out;
  for (const auto& [name, b] : box.paths) {
    const auto it = sim.paths.find(name);
    const PathOutcome s = it == sim.paths.end() ? PathOutcome{} : it->second;
    std::vector<double> attained, missed;
    for (const PolicyReport& r : runs) {
      const auto p = r.paths.find(name);
      if (p == r.paths.end()) continue;
      attained.push_back(p->second.Attainment());
      missed.push_back(Missed(p->second));
    }
    const auto n = static_cast<double>(b.sent);
    out.push_back(Share(name + " in SLO (%)", b.Attainment(), s.Attainment(),
                        ShareNoise(b.Attainment(), n, attained), t, false));
    out.push_back(Share(name + " not 200 (%)", Missed(b), Missed(s),
                        ShareNoise(Missed(b), n, missed), t, true));
    out.push_back(Relative(name + " p99 (ms)", b.p99_ms, s.p99_ms, t.tail));
  }
  double diff = 0, mean = 0, sim_mean = 0;
  for (const auto& [at, by_task] : box.replicas) {
    const IntervalRow* nearest = nullptr;
    for (const IntervalRow& row : sim.intervals) {
      if (nearest == nullptr || std::abs(row.at_s - at) < std::abs(nearest->at_s - at)) {
        nearest = &row;
      }
    }
    const double b = Total(by_task), s = nearest != nullptr ? Total(nearest->replicas) : 0;
    diff += std::abs(s - b);
    mean += b;
    sim_mean += s;
  }
  if (!box.replicas.empty()) {
    const auto n = static_cast<double>(box.replicas.size());
    Agreement a{.figure = "Ready replicas (mean; difference: mean |sim - box|)",
                .box = mean / n,
                .sim = sim_mean / n};
    a.difference = mean > 0 ? diff / mean : 0;
    a.within = a.difference <= t.relative + 1e-9;
    out.push_back(a);
  }
  return out;
}

std::string RenderAgreement(const std::vector<Agreement>& agreements) {
  std::string out =
      "| figure | box | simulated | difference | a run's noise (2 sd) | within |\n"
      "|---|---:|---:|---:|---:|:---:|\n";
  for (const Agreement& a : agreements) {
    const std::string noise = a.points ? StrFormat("%.1f pp", a.noise) : "";
    out += StrFormat("| %s | %.1f | %.1f | %+.1f%s | %s | %s |\n", a.figure.c_str(), a.box, a.sim,
                     a.points ? a.difference : 100 * a.difference, a.points ? " pp" : "%",
                     noise.c_str(), a.within ? "yes" : "**no**");
  }
  return out;
}

PolicyReport MeanOf(const std::vector<PolicyReport>& runs) {
  PolicyReport out;
  if (runs.empty()) return out;
  const auto n = static_cast<double>(runs.size());
  const auto mean = [n](long sum) { return std::lround(static_cast<double>(sum) / n); };
  out.policy = runs.front().policy;
  std::map<std::string, std::array<long, 3>> counts;  // sent, answered, within
  for (const PolicyReport& r : runs) {
    for (const auto& [name, p] : r.paths) {
      counts[name][0] += p.sent;
      counts[name][1] += p.answered;
      counts[name][2] += p.within_slo;
      out.paths[name].p99_ms += p.p99_ms / n;
      out.paths[name].p50_ms += p.p50_ms / n;
      out.paths[name].slo_ms = p.slo_ms;
    }
  }
  for (auto& [name, p] : out.paths) {
    p.sent = mean(counts[name][0]);
    p.answered = mean(counts[name][1]);
    p.within_slo = mean(counts[name][2]);
  }
  out.intervals = runs.front().intervals;
  for (size_t i = 0; i < out.intervals.size(); ++i) {
    for (auto& [task, replicas] : out.intervals[i].replicas) {
      double sum = 0;
      for (const PolicyReport& r : runs) {
        if (i < r.intervals.size() && r.intervals[i].replicas.contains(task)) {
          sum += r.intervals[i].replicas.at(task);
        }
      }
      replicas = static_cast<int>(std::lround(sum / n));
    }
  }
  return out;
}

}  // namespace pipescale::gym

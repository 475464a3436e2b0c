#include "cli/cli.h"

#include <chrono>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "api/pipeline_parse.h"
#include "api/plan_json.h"
#include "api/workload.h"
#include "common/strings.h"
#include "optimizer/pool.h"
#include "optimizer/solve.h"

namespace pipescale::cli {
namespace {

constexpr const char* kUsage = R"(pipescale: plan and validate InferencePipelines offline

usage:
  pipescale plan -f FILE [--optimizer fa2|loki|kairos|mark|ds2|inferline|grandslam|exact]
                 [--rate RPS] [--path-rate NAME=RPS ...] [--history FILE] [-o table|json]
  pipescale validate -f FILE
  pipescale help

--rate spreads a total rate over the paths by their weight (default equal); --path-rate sets
one path's rate and may be repeated. --history (mark) is a CSV of time,rate (seconds, total
requests per second) that MArk forecasts from with spec.forecast; without --rate its last value
is the current rate. Exit codes: 0 done (an Infeasible plan is a result),
2 invalid flags or pipeline (every problem is printed with its field), 1 anything else.
)";

struct Flags {
  std::string file;
  std::string optimizer;
  std::string output = "table";
  std::optional<double> rate;
  std::map<std::string, double> path_rates;
  std::string history;
};

std::optional<double> ParseNumber(const std::string& s) {
  try {
    size_t used = 0;
    const double v = std::stod(s, &used);
    if (used == s.size()) return v;
  } catch (const std::exception&) {  // std::stod reports bad input by throwing
  }
  return std::nullopt;
}

// Accepts "--flag value" and "--flag=value". Returns an error message or "".
std::string ParseFlags(std::span<const std::string> args, Flags& flags) {
  for (size_t i = 0; i < args.size(); ++i) {
    std::string name = args[i];
    std::optional<std::string> value;
    if (auto eq = name.find('='); name.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    auto take = [&]() -> std::optional<std::string> {
      if (value) return value;
      if (i + 1 < args.size()) return args[++i];
      return std::nullopt;
    };
    std::optional<std::string> v;
    if (name == "-f" || name == "--file" || name == "--optimizer" || name == "-o" ||
        name == "--output" || name == "--rate" || name == "--path-rate" || name == "--history") {
      v = take();
      if (!v) return name + " needs a value";
    } else {
      return "unknown argument " + name;
    }
    if (name == "-f" || name == "--file") {
      flags.file = *v;
    } else if (name == "--optimizer") {
      flags.optimizer = *v;
    } else if (name == "-o" || name == "--output") {
      if (*v != "table" && *v != "json") return "-o must be table or json, got " + *v;
      flags.output = *v;
    } else if (name == "--rate") {
      flags.rate = ParseNumber(*v);
      if (!flags.rate) return "--rate needs a number, got " + *v;
    } else if (name == "--history") {
      flags.history = *v;
    } else if (name == "--path-rate") {
      const auto eq = v->find('=');
      const auto rate = eq == std::string::npos ? std::nullopt : ParseNumber(v->substr(eq + 1));
      if (!rate) return "--path-rate needs NAME=RPS, got " + *v;
      flags.path_rates[v->substr(0, eq)] = *rate;
    }
  }
  if (flags.file.empty()) return "-f FILE is required";
  return "";
}

std::optional<model::Pipeline> Load(const std::string& file, std::ostream& err) {
  api::ParsedPipeline parsed = api::ParsePipelineFile(file);
  if (!parsed.pipeline) {
    err << file << ": invalid InferencePipeline (" << parsed.errors.size() << " problem"
        << (parsed.errors.size() == 1 ? "" : "s") << ")\n";
    for (const auto& e : parsed.errors) err << "  " << e.ToString() << "\n";
  }
  return std::move(parsed.pipeline);
}

int Validate(const Flags& flags, std::ostream& out, std::ostream& err) {
  auto pipeline = Load(flags.file, err);
  if (!pipeline) return kExitInvalidInput;
  const model::PipelineSpec& spec = pipeline->spec;
  auto count = [](size_t n, const char* one, const char* many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
  };
  out << flags.file << ": valid InferencePipeline " << pipeline->name << " ("
      << count(spec.tasks.size(), "task", "tasks") << ", "
      << count(spec.paths.size(), "path", "paths") << ", "
      << count(spec.hardware_classes.size(), "hardware class", "hardware classes") << ")\n";
  // Fitted profiles are where a user's data meets the model: show how well it fits.
  for (size_t t = 0; t < spec.tasks.size(); ++t) {
    for (size_t v = 0; v < spec.tasks[t].variants.size(); ++v) {
      const auto& variant = spec.tasks[t].variants[v];
      for (size_t p = 0; p < variant.profiles.size(); ++p) {
        const auto& lat = variant.profiles[p].latency;
        if (!lat.fitted) continue;
        out << StrFormat(
            "  spec.tasks[%zu].variants[%zu].profiles[%zu]: fitted d(b) = %.4g b^2 + "
            "%.4g b + %.4g ms from %zu points (RMSE %.3g ms, max error %.3g ms, "
            "%d outliers)\n",
            t, v, p, lat.quadratic.a, lat.quadratic.b, lat.quadratic.c, lat.points.size(),
            lat.fit.rmse_ms, lat.fit.max_error_ms, lat.fit.outliers);
      }
    }
  }
  return kExitOk;
}

int Plan(const Flags& flags, std::ostream& out, std::ostream& err) {
  auto pipeline = Load(flags.file, err);
  if (!pipeline) return kExitInvalidInput;
  // Without --optimizer, the one the pipeline asks for.
  std::optional<optimizer::Algorithm> algorithm;
  if (!flags.optimizer.empty()) {
    algorithm = optimizer::ParseAlgorithm(flags.optimizer);
    if (!algorithm) {
      err << "--optimizer: unknown optimizer \"" << flags.optimizer
          << "\"; known: fa2, loki, kairos, mark, ds2, inferline, grandslam, exact\n";
      return kExitInvalidInput;
    }
  } else {
    algorithm = optimizer::AlgorithmFor(pipeline->spec.optimizer);
  }
  const bool mark = algorithm == optimizer::Algorithm::kMark;
  if (!flags.history.empty() && !mark) {
    err << "--history: only the mark optimizer forecasts from a rate history\n";
    return kExitInvalidInput;
  }
  std::vector<double> history;
  if (!flags.history.empty()) {
    std::ifstream in(flags.history, std::ios::binary);
    std::ostringstream text;
    if (in) text << in.rdbuf();
    auto parsed =
        in ? api::ParseRateHistory(text.str(), pipeline->spec.interval_seconds)
           : Result<std::vector<double>>(Error{ErrorKind::kInvalid, "cannot read the file"});
    if (!parsed) {
      err << "--history " << flags.history << ": " << parsed.error().message << "\n";
      return kExitInvalidInput;
    }
    history = std::move(*parsed);
  }
  if (pipeline->spec.paths.empty()) {
    err << flags.file << ": spec.paths: " << optimizer::AlgorithmName(*algorithm)
        << " plans per execution path; the pipeline has none\n";
    return kExitInvalidInput;
  }
  std::optional<double> rate = flags.rate;
  if (!rate && flags.path_rates.empty() && !history.empty()) rate = history.back();
  auto workload = api::MakeWorkload(*pipeline, rate, flags.path_rates);
  if (!workload) {
    err << workload.error().message << "\n";
    return kExitInvalidInput;
  }
  const auto start = std::chrono::steady_clock::now();
  model::Plan plan;
  if (mark) {
    // The history is of the total rate: each path's share of it is today's.
    optimizer::MarkInput input;
    for (const auto& [path, share] : api::PathShares(*pipeline, *workload)) {
      for (double r : history) input.history[path].push_back(r * share);
    }
    plan = optimizer::SolveMark(*pipeline, *workload, input);
  } else {
    plan = optimizer::Solve(*pipeline, *workload, *algorithm);
  }
  plan.report.solve_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  out << (flags.output == "json" ? api::PlanToJson(plan) : api::PlanToTable(plan));
  return kExitOk;
}

}  // namespace

int Run(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  if (args.empty() || args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
    (args.empty() ? err : out) << kUsage;
    return args.empty() ? kExitInvalidInput : kExitOk;
  }
  const std::string& command = args[0];
  if (command != "plan" && command != "validate") {
    err << "unknown command \"" << command << "\"\n\n" << kUsage;
    return kExitInvalidInput;
  }
  Flags flags;
  if (std::string problem = ParseFlags(args.subspan(1), flags); !problem.empty()) {
    err << "pipescale " << command << ": " << problem << "\n";
    return kExitInvalidInput;
  }
  return command == "plan" ? Plan(flags, out, err) : Validate(flags, out, err);
}

}  // namespace pipescale::cli

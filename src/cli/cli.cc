#include "cli/cli.h"

#include <charconv>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "api/pipeline_parse.h"
#include "api/plan_json.h"
#include "api/workload.h"
#include "common/strings.h"
#include "optimizer/registry.h"

namespace pipescale::cli {
namespace {

constexpr const char* kUsage = R"(pipescale: plan and validate InferencePipelines offline

usage:
  pipescale plan -f FILE [--optimizer NAME] [--latency-model tail|mean]
                 [--rate RPS] [--path-rate NAME=RPS ...] [--history FILE] [-o table|json]
  pipescale validate -f FILE
  pipescale help

--rate spreads a total rate over the paths by their weight (default equal); --path-rate sets
one path's rate and may be repeated. --optimizer is one of the optimizers below (default: the
pipeline's spec.optimizer). --latency-model overrides spec.slo.latencyModel: tail plans each
task's latency at the SLO's percentile, mean as the papers do. --history (mark) is a CSV of
time,rate (seconds, total requests per second) that MArk forecasts from with spec.forecast;
without --rate its last value is the current rate. Exit codes: 0 done (an Infeasible plan is a result),
2 invalid flags or pipeline (every problem is printed with its field), 1 anything else.
)";

// The usage text, then one line per optimizer from the registry.
std::string Usage() {
  std::string out = kUsage;
  out += "\noptimizers:\n";
  for (const optimizer::Descriptor& d : optimizer::Optimizers()) {
    out += StrFormat("  %-10s %s%s\n", std::string(d.name).c_str(), std::string(d.summary).c_str(),
                     d.in_spec ? "" : " (CLI only)");
  }
  return out;
}

// How much of a file name messages show.
constexpr size_t kLongestFileName = 512;

struct Flags {
  std::string file;
  std::string optimizer;
  std::string output = "table";
  std::optional<double> rate;
  std::map<std::string, double> path_rates;
  std::string history;
  std::optional<model::LatencyModel> latency_model;
};

// A rate in requests per second as api::RateProblem accepts it: a decimal number (no hex, no
// inf or nan), finite, in [0, api::kMaxRateRps]. Returns what is wrong, or "".
std::string ParseRate(std::string_view text, double& rate) {
  const std::string_view digits = text.starts_with('+') ? text.substr(1) : text;
  const char* end = digits.data() + digits.size();
  auto [ptr, ec] = std::from_chars(digits.data(), end, rate);
  if (digits.empty() || ptr != end || ec == std::errc::invalid_argument) {
    return "needs a number of requests per second, got " + QuoteUserText(text);
  }
  if (ec == std::errc::result_out_of_range) rate = std::strtod(std::string(text).c_str(), nullptr);
  return api::RateProblem(rate);
}

// Stores one flag's value. Returns an error message or "".
std::string SetFlag(const std::string& name, const std::string& v, Flags& flags) {
  if (name == "-f" || name == "--file") {
    flags.file = v;
  } else if (name == "--optimizer") {
    flags.optimizer = v;
  } else if (name == "-o" || name == "--output") {
    if (v != "table" && v != "json") return "-o must be table or json, got " + QuoteUserText(v);
    flags.output = v;
  } else if (name == "--rate") {
    double rate = 0;
    if (std::string problem = ParseRate(v, rate); !problem.empty()) return "--rate " + problem;
    flags.rate = rate;
  } else if (name == "--latency-model") {
    for (const auto& [named, value] : api::LatencyModelNames()) {
      if (v == named) flags.latency_model = value;
    }
    if (!flags.latency_model)
      return "--latency-model must be tail or mean, got " + QuoteUserText(v);
  } else if (name == "--history") {
    flags.history = v;
  } else if (name == "--path-rate") {
    const auto eq = v.find('=');
    if (eq == std::string::npos) return "--path-rate needs NAME=RPS, got " + QuoteUserText(v);
    double rate = 0;
    if (std::string problem = ParseRate(std::string_view{v}.substr(eq + 1), rate);
        !problem.empty()) {
      return "--path-rate " + QuoteUserText(v.substr(0, eq)) + ": " + problem;
    }
    flags.path_rates[v.substr(0, eq)] = rate;
  }
  return "";
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
    if (name != "-f" && name != "--file" && name != "--optimizer" && name != "-o" &&
        name != "--output" && name != "--rate" && name != "--path-rate" && name != "--history" &&
        name != "--latency-model") {
      return "unknown argument " + QuoteUserText(name);
    }
    if (!value && i + 1 < args.size()) value = args[++i];
    if (!value) return name + " needs a value";
    if (std::string problem = SetFlag(name, *value, flags); !problem.empty()) return problem;
  }
  if (flags.file.empty()) return "-f FILE is required";
  return "";
}

// The file's bytes, or nullopt when it cannot be read or holds more than `max_bytes`: a
// device such as /dev/zero never ends.
std::optional<std::string> ReadAtMost(const std::string& file, size_t max_bytes) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  std::string text(max_bytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad() || static_cast<size_t>(in.gcount()) > max_bytes) return std::nullopt;
  text.resize(static_cast<size_t>(in.gcount()));
  return text;
}

// A file name as messages show it: escaped, as it is the user's text.
std::string Shown(const std::string& file) { return EscapeUserText(file, kLongestFileName); }

std::optional<model::Pipeline> Load(const std::string& file, std::ostream& err) {
  api::ParsedPipeline parsed = api::ParsePipelineFile(file);
  if (!parsed.pipeline) {
    err << Shown(file) << ": invalid InferencePipeline (" << parsed.errors.size() << " problem"
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
  out << Shown(flags.file) << ": valid InferencePipeline " << pipeline->name << " ("
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
  if (flags.latency_model) pipeline->spec.slo.model = *flags.latency_model;
  // Without --optimizer, the one the pipeline asks for.
  const optimizer::Descriptor* chosen = &optimizer::OptimizerOf(pipeline->spec);
  if (!flags.optimizer.empty()) {
    chosen = optimizer::FindOptimizer(flags.optimizer);
    if (chosen == nullptr) {
      err << "--optimizer: unknown optimizer " << QuoteUserText(flags.optimizer)
          << "; known: " << optimizer::OptimizerNames(false) << "\n";
      return kExitInvalidInput;
    }
  }
  // The pipeline was validated for its own optimizer; another may need more of it.
  if (const auto errors = api::CheckPlannableBy(*pipeline, chosen->name); !errors.empty()) {
    err << Shown(flags.file) << ": " << chosen->name << " cannot plan this pipeline\n";
    for (const auto& e : errors) err << "  " << e.ToString() << "\n";
    return kExitInvalidInput;
  }
  if (!flags.history.empty() && !chosen->memory.rate_history) {
    err << "--history: only an optimizer that forecasts (mark) reads a rate history\n";
    return kExitInvalidInput;
  }
  std::vector<double> history;
  if (!flags.history.empty()) {
    const std::optional<std::string> text = ReadAtMost(flags.history, api::kMaxHistoryBytes);
    auto parsed =
        text ? api::ParseRateHistory(*text, pipeline->spec.interval_seconds)
             : Result<std::vector<double>>(Error{
                   ErrorKind::kInvalid, "cannot read the file, or it is larger than " +
                                            std::to_string(api::kMaxHistoryBytes) + " bytes"});
    if (!parsed) {
      err << "--history " << Shown(flags.history) << ": " << parsed.error().message << "\n";
      return kExitInvalidInput;
    }
    history = std::move(*parsed);
  }
  if (chosen->needs_paths && pipeline->spec.paths.empty()) {
    err << Shown(flags.file) << ": spec.paths: " << chosen->name
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
  // The history is of the total rate: each path's share of it is today's.
  optimizer::PlannerInput input;
  for (const auto& [path, share] : api::PathShares(*pipeline, *workload)) {
    for (double r : history) input.history[path].push_back(r * share);
  }
  const model::Workload planned = api::AtLeastMinRate(*pipeline, *workload);
  model::Plan plan = chosen->solve(*pipeline, planned, input);
  if (planned != *workload) {
    plan.report.notes.push_back(
        StrFormat("planned for spec.minRate %g requests/s where the load given is less",
                  pipeline->spec.min_rate_rps));
  }
  plan.report.solve_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  out << (flags.output == "json" ? api::PlanToJson(plan) : api::PlanToTable(plan));
  return kExitOk;
}

}  // namespace

int Run(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  if (args.empty() || args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
    (args.empty() ? err : out) << Usage();
    return args.empty() ? kExitInvalidInput : kExitOk;
  }
  const std::string& command = args[0];
  if (command != "plan" && command != "validate") {
    err << "unknown command " << QuoteUserText(command) << "\n\n" << Usage();
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

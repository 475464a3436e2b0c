#include "cli/cli.h"

#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <initializer_list>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <utility>

#include "api/pipeline_parse.h"
#include "api/plan_json.h"
#include "api/workload.h"
#include "cli/simulate.h"
#include "common/flags.h"
#include "common/strings.h"
#include "optimizer/floors.h"
#include "optimizer/registry.h"
#include "profile/job.h"
#include "profile/protocol.h"
#include "profile/session.h"

namespace pipescale::cli {
namespace {

constexpr const char* kUsage = R"(pipescale: plan, validate and profile InferencePipelines

usage:
  pipescale plan -f FILE [--optimizer NAME] [--latency-model tail|mean]
                 [--rate RPS] [--path-rate NAME=RPS ...] [--history FILE] [-o table|json]
  pipescale validate -f FILE
  pipescale profile -f FILE --task T --variant V --hardware-class C
                    (--address HOST:PORT | --deployment NAME) [...]   (see profile --help)
  pipescale simulate -f FILE --trace SHAPE [--policy fa2,hpa,...] [...]   (see simulate --help)
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
// inf or nan), finite, in [0, limits::kMaxRateRps]. Returns what is wrong, or "".
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

// A flag as given: "--flag=value" is split in two; "--flag" and "-f" have no value yet (the next
// argument is theirs).
std::pair<std::string, std::optional<std::string>> SplitFlag(const std::string& arg) {
  if (auto eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
    return {arg.substr(0, eq), arg.substr(eq + 1)};
  }
  return {arg, std::nullopt};
}

// Accepts "--flag value" and "--flag=value". Returns an error message or "".
std::string ParseFlags(std::span<const std::string> args, Flags& flags) {
  for (size_t i = 0; i < args.size(); ++i) {
    auto [name, value] = SplitFlag(args[i]);
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
  // What a cold request may wait: the trade-off scale to zero makes, per path.
  if (spec.scale_to_zero) {
    out << StrFormat(
        "  spec.scaleToZero: a path sleeps after %g s without a request; a request "
        "for a sleeping path is held up to\n",
        spec.scale_to_zero->after_idle_seconds);
    for (size_t p = 0; p < spec.paths.size(); ++p) {
      out << StrFormat("    %s: %.1f s\n", spec.paths[p].name.c_str(),
                       pipeline->ColdHoldMs(p) / 1000);
    }
    const model::WakeAhead& ahead = spec.scale_to_zero->wake_ahead;
    if (ahead.confirmations > 0) {
      out << StrFormat(
          "  spec.scaleToZero.wakeAhead: a sleeping path wakes ahead of load that returned at "
          "this time (within %g s) in each of the last %d periods of %g s, its wake time plus "
          "that ahead\n",
          ahead.ToleranceSeconds(), ahead.confirmations, ahead.period_seconds);
    }
  }
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
    const std::optional<std::string> text = ReadAtMost(flags.history, limits::kMaxHistoryBytes);
    auto parsed =
        text ? api::ParseRateHistory(*text, pipeline->spec.interval_seconds)
             : Result<std::vector<double>>(Error{
                   ErrorKind::kInvalid, "cannot read the file, or it is larger than " +
                                            std::to_string(limits::kMaxHistoryBytes) + " bytes"});
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
  optimizer::ApplyReplicaFloors(*pipeline, plan);
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

// --- pipescale profile ---

constexpr const char* kProfileUsage =
    R"(pipescale profile: measure a model server and write a variant's latencyMs

usage:
  pipescale profile -f FILE --task T --variant V --hardware-class C
                    (--address HOST:PORT | --deployment NAME [-n NAMESPACE] [--kubeconfig F])
                    [--batches all|pow2|B,B,...] [--requests N] [--warmup N]
                    [--statistic mean|p50|p99] [--fit quadratic|table] [--model NAME]
                    [--input-shape D,D,...] [--timeout SECONDS] [--progress auto|bar|lines|none]
                    [--write] [-o table|yaml|json]

It speaks the Open Inference Protocol (KServe v2 REST: GET /v2/health/ready, GET
/v2/models/MODEL, POST /v2/models/MODEL/infer). At each batch size b it sends --warmup requests,
then --requests requests of b rows (shape [b, ...]), one at a time on one kept-alive connection,
each timed by its round trip less the queueing the server reports
(parameters.pipescale_queue_ms, as pipescale's model server does). Each size's --statistic is a
point [b, ms] of the profile's latencyMs: {points: [...]}, which the planners fit to
d(b) = a b^2 + b b + c (--fit table: interpolate them instead).

  --address HOST:PORT     the model server (or an http:// URL)
  --deployment NAME       a Ready pod of this Deployment in -n NAMESPACE (default: the config's),
                          found through the Kubernetes API (--kubeconfig, else $KUBECONFIG, else
                          in-cluster, else ~/.kube/config), measured at its pod IP and container
                          port (named http, else the first). Pod IPs answer inside the cluster;
                          from outside, run `kubectl port-forward deploy/NAME 8080:8080` and give
                          --address 127.0.0.1:8080
  --batches               all: every size from 1 to the variant's batchSize.max, each one a planner
                          may choose (default); pow2: 1, 2, 4, ... and the max; or sizes: 1,4,16
  --requests N            measured requests per size (default 200, so the p99 is not the slowest)
  --warmup N              requests per size sent first, not measured (default 10)
  --statistic             a size's latency: mean (default), p50 or p99. The planners take
                          latencyMs as a batch's service time: its mean sets what a replica
                          serves, and their tail model adds the queueing at the SLO's percentile
                          itself; p99 would count the tail twice, p50 would overload replicas
                          whose batches sometimes run long
  --fit                   quadratic (default; a table below three sizes) or table
  --model NAME            the model's name on the server (default: the task's)
  --input-shape D,D,...   one row's dimensions (default: the model's metadata, a variable
                          dimension as 1, 16 elements when all are variable)
  --timeout SECONDS       for each request (default 60)
  --progress              auto (default): a bar redrawn on a terminal, else a line per size
  --write                 rewrite FILE in place: only this profile's latencyMs changes (the
                          profile is added when the variant has none for the class); comments,
                          order and layout stay
  -o table|yaml|json      stdout: the summary (default), a profiles entry to paste, or JSON

Exit codes: 0 measured (and written); 2 invalid flags, an invalid pipeline, or an unknown task,
variant or hardware class; 1 the server or the cluster failed (the message names the address,
and during the run the batch size and request).
)";

struct ProfileFlags {
  std::string file;
  profile::Options options;
  std::string batches = "all";
  int timeout_s = 60;
  std::string progress = "auto";
  std::string output = "table";
  bool write = false;
};

// One of `choices` into `value`; what is wrong, or "".
std::string ParseChoice(const std::string& name, const std::string& text,
                        std::initializer_list<const char*> choices, std::string& value) {
  std::string names;
  for (const char* c : choices) {
    if (text == c) {
      value = text;
      return "";
    }
    names += (names.empty() ? "" : ", ") + std::string(c);
  }
  return name + " must be one of " + names + ", got " + QuoteUserText(text);
}

// The flags naming what is measured and where. Returns false for a flag it does not know.
bool SetProfileTarget(const std::string& name, const std::string& v, ProfileFlags& f) {
  profile::Options& o = f.options;
  std::string* field = name == "-f" || name == "--file"        ? &f.file
                       : name == "--task"                      ? &o.target.task
                       : name == "--variant"                   ? &o.target.variant
                       : name == "--hardware-class"            ? &o.target.hardware_class
                       : name == "--address"                   ? &o.address
                       : name == "--deployment"                ? &o.cluster.deployment
                       : name == "-n" || name == "--namespace" ? &o.cluster.ns
                       : name == "--kubeconfig"                ? &o.cluster.kubeconfig
                       : name == "--model"                     ? &o.model
                       : name == "--batches"                   ? &f.batches
                                                               : nullptr;
  if (field != nullptr) *field = v;
  return field != nullptr;
}

// The flags of how it is measured and shown. Returns what is wrong, or "".
std::string SetProfileMeasure(const std::string& name, const std::string& v, ProfileFlags& f) {
  profile::Options& o = f.options;
  if (name == "--requests") return ParseFlag(name, v, 1, 1000000, o.requests);
  if (name == "--warmup") return ParseFlag(name, v, 0, 100000, o.warmup);
  if (name == "--timeout") return ParseFlag(name, v, 1, 86400, f.timeout_s);
  if (name == "--progress")
    return ParseChoice(name, v, {"auto", "bar", "lines", "none"}, f.progress);
  if (name == "-o" || name == "--output") {
    return ParseChoice(name, v, {"table", "yaml", "json"}, f.output);
  }
  if (name == "--fit") {
    std::string fit;
    if (auto problem = ParseChoice(name, v, {"quadratic", "table"}, fit); !problem.empty()) {
      return problem;
    }
    o.fit = fit == "table" ? profile::FitModel::kTable : profile::FitModel::kQuadratic;
    return "";
  }
  if (name == "--statistic") {
    auto statistic = profile::ParseStatistic(v);
    if (!statistic) return name + " " + statistic.error().message;
    o.statistic = *statistic;
    return "";
  }
  if (name == "--input-shape") {
    auto shape = profile::ParseRowShape(v);
    if (!shape) return name + " " + shape.error().message;
    o.row_shape = *shape;
    return "";
  }
  return "unknown argument " + QuoteUserText(name);
}

// What the flags together lack or contradict, or "".
std::string CheckProfileFlags(const ProfileFlags& f) {
  const profile::Options& o = f.options;
  for (const auto& [value, name] : {std::pair{&f.file, "-f FILE"},
                                    {&o.target.task, "--task"},
                                    {&o.target.variant, "--variant"},
                                    {&o.target.hardware_class, "--hardware-class"}}) {
    if (value->empty()) return std::string(name) + " is required";
  }
  if (o.address.empty() == o.cluster.deployment.empty()) {
    return "give exactly one of --address HOST:PORT or --deployment NAME";
  }
  if (!o.address.empty() && (!o.cluster.ns.empty() || !o.cluster.kubeconfig.empty())) {
    return "-n and --kubeconfig go with --deployment, not --address";
  }
  return "";
}

std::string ParseProfileFlags(std::span<const std::string> args, ProfileFlags& f) {
  for (size_t i = 0; i < args.size(); ++i) {
    auto [name, value] = SplitFlag(args[i]);
    if (name == "--write" && !value) {
      f.write = true;
      continue;
    }
    if (!value && i + 1 < args.size()) value = args[++i];
    if (!value) return name + " needs a value";
    if (SetProfileTarget(name, *value, f)) continue;
    if (std::string problem = SetProfileMeasure(name, *value, f); !problem.empty()) {
      return problem;
    }
  }
  f.options.timeout = std::chrono::seconds(f.timeout_s);
  return CheckProfileFlags(f);
}

int Fail(std::ostream& err, const std::string& message, int code) {
  err << "pipescale profile: " << message << "\n";
  return code;
}

profile::ProgressStyle StyleOf(const std::string& progress, bool tty) {
  if (progress == "none") return profile::ProgressStyle::kNone;
  if (progress == "lines" || (progress == "auto" && !tty)) return profile::ProgressStyle::kLines;
  return profile::ProgressStyle::kBar;
}

// Measures with progress on `err`, prints the report on `out`.
int MeasureAndReport(const ProfileFlags& f, const profile::Job& job, std::ostream& out,
                     std::ostream& err, bool tty) {
  auto endpoint = profile::FindEndpoint(f.options, job);
  if (!endpoint) return Fail(err, endpoint.error().message, kExitFailure);
  profile::ProgressPrinter printer(err, StyleOf(f.progress, tty));
  auto report = profile::MeasureEndpoint(f.options, job, *endpoint,
                                         [&](const profile::Progress& p) { printer.Update(p); });
  printer.Finish();
  if (!report) return Fail(err, report.error().message, kExitFailure);
  out << (f.output == "json"   ? profile::ReportJson(*report)
          : f.output == "yaml" ? profile::ReportYaml(*report)
                               : profile::ReportTable(*report));
  out.flush();
  if (!f.write) return kExitOk;
  const profile::Target& t = f.options.target;
  if (Status s = profile::WriteLatency(f.file, t, report->latency); !s) {
    return Fail(err, "--write " + Shown(f.file) + ": " + s.error().message, kExitFailure);
  }
  err << "wrote the latencyMs of " << t.task << "/" << t.variant << " on " << t.hardware_class
      << " into " << Shown(f.file) << "\n";
  return kExitOk;
}

int Profile(const ProfileFlags& f, std::ostream& out, std::ostream& err, bool tty) {
  auto pipeline = Load(f.file, err);
  if (!pipeline) return kExitInvalidInput;
  auto job = profile::ResolveJob(*pipeline, f.options.target, f.batches);
  if (!job) return Fail(err, job.error().message, kExitInvalidInput);
  // A run may take minutes: a file it could not write is refused first.
  if (Status s = f.write ? profile::CheckWritable(f.file, *job, f.options.fit) : Done{}; !s) {
    return Fail(err, "--write " + Shown(f.file) + ": " + s.error().message, kExitInvalidInput);
  }
  return MeasureAndReport(f, *job, out, err, tty);
}

int RunProfile(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  for (const std::string& a : args) {
    if (a == "--help" || a == "-h") {
      out << kProfileUsage;
      return kExitOk;
    }
  }
  ProfileFlags flags;
  if (std::string problem = ParseProfileFlags(args, flags); !problem.empty()) {
    return Fail(err, problem + " (pipescale profile --help)", kExitInvalidInput);
  }
  // The bar redraws its line: only where a person watches it.
  const bool tty = &err == &std::cerr && isatty(STDERR_FILENO) == 1;
  return Profile(flags, out, err, tty);
}

}  // namespace

int Run(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  if (args.empty() || args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
    (args.empty() ? err : out) << Usage();
    return args.empty() ? kExitInvalidInput : kExitOk;
  }
  const std::string& command = args[0];
  if (command == "profile") return RunProfile(args.subspan(1), out, err);
  if (command == "simulate") return RunSimulate(args.subspan(1), out, err);
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

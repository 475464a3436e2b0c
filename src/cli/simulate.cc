#include "cli/simulate.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>

#include "api/document.h"
#include "api/nodes_file.h"
#include "cli/cli.h"
#include "common/file.h"
#include "common/flags.h"
#include "common/json_fields.h"
#include "gym/render.h"
#include "gym/simulation.h"
#include "gym/tune.h"

namespace pipescale::cli {
namespace {

constexpr const char* kSimulateUsage =
    R"(pipescale simulate: replay a trace through the whole loop, in simulated time

usage:
  pipescale simulate -f PIPELINE.yaml [-f PIPELINE.yaml...] --trace SHAPE|csv:FILE [--trace ...]
                     [--policy P[,P...]]
                     [--scale X] [--tune SHARE] [--seed N] [--duration D] [--nodes FILE]
                     [-o table|json|csv] [--plot FILE.svg] [--progress auto|bar|none]

Each policy runs the same trace and seed: an optimizer (fa2, loki, kairos, mark: the operator's
own Decide every interval, the router's policies in the request path), or a baseline that scales
each task's Deployment on its own metric: hpa (utilisation), keda (request rate), kpa (Knative's
concurrency autoscaler), fixed:N (N replicas per task). Default: the pipeline's optimizer and hpa.
A baseline runs what an engineer deploys: each task's most accurate variant on the class cheapest
per request within its SLO share, the server's dynamic batcher, a queue timeout, a floor for
spec.minRate. Its knobs: BASELINE[@CLASS][:target=SHARE][:batch=N][+door] (+door: pipescale's
admission in front). --tune SHARE (e.g. 0.99) sweeps the target and batch of each baseline named
without knobs, and runs the cheapest setting that keeps every path at SHARE within its SLO after
it, under a name that can be copied.
The papers' comparison points run in the operator's loop too: ds2, inferline, grandslam, exact
(FA2's), loki-hardware-only (most accurate variants only), mark-reactive (no forecast), and
OPTIMIZER@CLASS (the optimizer on one hardware class: a homogeneous pool, e.g. kairos@r5n-large),
and operator-hpa (spec.optimizer: hpa: the HPA's replica calculator on the pods' utilisation,
as hpa's, in the operator's loop; hpa alone is the HPA controller's own loop).
--trace takes pipescale-loadgen's shapes: RPS:SECONDS[,...], fa2:SECONDS, normal:MEAN:SD:SECONDS,
diurnal:LOW:HIGH:PERIOD:SECONDS[:BURST], csv:FILE; --scale multiplies its rates. --duration (90s, 10m, 24h) cuts or extends
it. --nodes is a cluster file in hack/nodes.yaml's format: pods wait for room there; without it,
room is unbounded. Several -f run their pipelines together on --nodes, each under its own
optimizer and with its own --trace (one per -f in order, or one for all), their traces starting
together: --policy shared (the operator's arbiter divides the pools they share: guaranteedReplicas,
priority, equal parts) and first-come (each plans within the room it finds), both by default;
a table per pipeline, then the totals. --seed N (default 42) sends the requests pipescale-loadgen --seed N sends:
every policy meets the same ones. -o csv prints one row per policy and interval; --plot writes
an SVG.
)";

// "90s", "10m", "24h" or a number of seconds, the number as strictly as every flag's
// (common/flags.h: strtod took " 90s" and "0x10s"); nullopt for anything else.
std::optional<double> SecondsOf(const std::string& text) {
  const char unit = text.empty() ? 's' : text.back();
  const double scale = unit == 'm' ? 60 : unit == 'h' ? 3600 : 1;
  const bool suffixed = unit == 's' || unit == 'm' || unit == 'h';
  const auto n = ParseNumber("--duration", suffixed ? text.substr(0, text.size() - 1) : text, 0,
                             std::numeric_limits<double>::max() / 3600);
  if (!n) return std::nullopt;
  return *n * scale;
}

std::vector<std::string> Names(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream in(list);
  for (std::string name; std::getline(in, name, ',');) {
    if (!name.empty()) out.push_back(name);
  }
  return out;
}

struct SimulateFlags {
  std::vector<std::string> files, traces;  // -f and --trace, each as often as given
  std::vector<double> scales;              // --scale, as often as given
  std::string file, trace, nodes, output = "table", plot, progress = "auto";
  std::vector<std::string> policies;
  unsigned seed = 42;
  double seconds = 0;
  double scale = 1;
  double tune = 0;  // the attainment --tune asks of every path; 0: no tuning
};

std::string SetSimulateFlag(const std::string& name, const std::string& value, SimulateFlags& f) {
  if (name == "-f" || name == "--file") {
    f.files.push_back(value);
  } else if (name == "--trace") {
    f.traces.push_back(value);
  } else if (name == "--policy") {
    f.policies = Names(value);
  } else if (name == "--seed") {
    return ParseFlag(name, value, 0U, std::numeric_limits<unsigned>::max(), f.seed);
  } else if (name == "--duration") {
    const auto d = SecondsOf(value);
    if (!d || *d <= 0) return "--duration must be a duration such as 90s, 10m or 24h";
    f.seconds = *d;
  } else if (name == "--scale") {
    std::string problem = ParseFlag(name, value, 1e-3, 1000.0, f.scale);
    if (problem.empty()) f.scales.push_back(f.scale);
    return problem;
  } else if (name == "--tune") {
    return ParseFlag(name, value, 0.01, 1.0, f.tune);
  } else if (name == "--nodes") {
    f.nodes = value;
  } else if (name == "-o" || name == "--output") {
    if (value != "table" && value != "json" && value != "csv") return "-o is table, json or csv";
    f.output = value;
  } else if (name == "--plot") {
    if (value.size() < 4 || value.substr(value.size() - 4) != ".svg") {
      return "--plot writes SVG: name a FILE.svg";
    }
    f.plot = value;
  } else if (name == "--progress") {
    f.progress = value;
  } else {
    return "unknown argument " + name;
  }
  return "";
}

std::string ParseSimulateFlags(std::span<const std::string> args, SimulateFlags& f) {
  for (size_t i = 0; i < args.size(); ++i) {
    std::string name = args[i], value;
    if (auto eq = name.find('='); name.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      return name + " needs a value";
    }
    if (std::string problem = SetSimulateFlag(name, value, f); !problem.empty()) return problem;
  }
  if (f.files.empty()) return "-f FILE is required";
  if (f.traces.empty()) return "--trace is required";
  if (f.traces.size() > 1 && f.traces.size() != f.files.size()) {
    return "give one --trace for every pipeline, or one per -f in their order";
  }
  if (f.scales.size() > 1 && f.scales.size() != f.files.size()) {
    return "give one --scale for every pipeline, or one per -f in their order";
  }
  f.file = f.files[0];
  f.trace = f.traces[0];
  if (f.files.size() > 1 && f.tune > 0) return "--tune takes one pipeline";
  return "";
}

int Fail(std::ostream& err, const std::string& message, int code) {
  err << "pipescale simulate: " << message << "\n";
  return code;
}

// What a run needs besides the policy. clang-tidy 14 blames this aggregate's implicit members for
// what their allocations may throw, as with reconciler::Decision.
struct Inputs {  // NOLINT(bugprone-exception-escape)
  nlohmann::json pipeline;
  gym::Options options;
};

Result<nlohmann::json> ReadPipeline(const std::string& file) {
  const auto text = ReadFileText(file);
  if (!text) return Error{ErrorKind::kInvalid, text.error().message};
  auto doc = api::ParseDocument(*text);
  if (!doc) return Error{ErrorKind::kInvalid, file + ": " + doc.error().message};
  return std::move(*doc);
}

Result<trace::Trace> ReadTrace(const std::string& shape, double scale, const SimulateFlags& f) {
  std::string csv;
  if (shape.rfind("csv:", 0) == 0) {
    const auto t = ReadFileText(shape.substr(4), "the trace");
    if (!t) return Error{ErrorKind::kInvalid, t.error().message};
    csv = *t;
  }
  auto trace = trace::ParseTrace(shape, f.seed, csv);
  if (!trace) return Error{ErrorKind::kInvalid, "--trace: " + trace.error().message};
  auto scaled = trace::ScaleTrace(std::move(*trace), scale);
  if (!scaled) return Error{ErrorKind::kInvalid, "--scale: " + scaled.error().message};
  return std::move(*scaled);
}

Result<Inputs> ReadInputs(const SimulateFlags& f) {
  Inputs in;
  auto pipeline = ReadPipeline(f.file);
  if (!pipeline) return pipeline.error();
  in.pipeline = std::move(*pipeline);
  auto trace = ReadTrace(f.trace, f.scales.empty() ? 1 : f.scales[0], f);
  if (!trace) return trace.error();
  in.options.trace = std::move(*trace);
  in.options.seed = f.seed;
  in.options.seconds = f.seconds;
  if (!f.nodes.empty()) {
    auto nodes = api::ReadNodesFile(f.nodes);
    if (!nodes) return Error{ErrorKind::kInvalid, "--nodes: " + nodes.error().message};
    in.options.nodes = std::move(*nodes);
  }
  return in;
}

// A bar on a terminal, nothing elsewhere unless asked.
std::function<void(double)> Progress(const std::string& style, const std::string& policy,
                                     std::ostream& err) {
  const bool tty = &err == &std::cerr && isatty(STDERR_FILENO) == 1;
  if (style == "none" || (style == "auto" && !tty)) return nullptr;
  return [&err, policy](double done) {
    const int filled = static_cast<int>(30 * std::clamp(done, 0.0, 1.0));
    err << "\r" << policy << " [" << std::string(filled, '#') << std::string(30 - filled, ' ')
        << "] " << static_cast<int>(100 * done) << "%" << std::flush;
  };
}

// --tune: each baseline of `policies` named without knobs is swept (gym/tune.h), and its pick
// runs right after it, so that the report shows both.
Status TuneBaselines(const Inputs& inputs, const SimulateFlags& f,
                     std::vector<std::string>& policies, gym::Report& report, std::ostream& err) {
  std::vector<std::string> out;
  for (const std::string& policy : policies) {
    out.push_back(policy);
    if (!gym::Tunable(policy)) continue;
    const auto bar = Progress(f.progress, "tuning " + policy, err);
    if (bar) bar(0);
    auto tuned = gym::Tune(inputs.pipeline, inputs.options, policy, {.attainment = f.tune});
    if (!tuned) return tuned.error();
    if (bar) {
      bar(1);
      err << "\n";
    }
    const std::optional<gym::TunePoint>& pick = tuned->best ? tuned->best : tuned->closest;
    if (pick && pick->policy != policy) out.push_back(pick->policy);
    report.tuned.push_back(std::move(*tuned));
  }
  policies = std::move(out);
  return Done{};
}

// Several -f: the pipelines share --nodes, and each policy (the operator's arbiter dividing the
// pools they share, or first come, first served) runs them together.
int SimulateTogether(const SimulateFlags& f, std::ostream& out, std::ostream& err) {
  if (!f.plot.empty()) return Fail(err, "--plot draws one pipeline", kExitInvalidInput);
  auto inputs = ReadInputs(f);
  if (!inputs) return Fail(err, inputs.error().message, kExitInvalidInput);
  std::vector<gym::Tenant> tenants;
  std::vector<gym::Report> reports;
  for (size_t i = 0; i < f.files.size(); ++i) {
    auto pipeline = ReadPipeline(f.files[i]);
    if (!pipeline) return Fail(err, pipeline.error().message, kExitInvalidInput);
    const std::string& shape = f.traces.size() > 1 ? f.traces[i] : f.traces[0];
    const double scale = f.scales.empty() ? 1 : f.scales[f.scales.size() > 1 ? i : 0];
    auto trace = ReadTrace(shape, scale, f);
    if (!trace) return Fail(err, trace.error().message, kExitInvalidInput);
    reports.push_back({.pipeline = StringField(Member(*pipeline, "metadata"), "name"),
                       .trace = shape,
                       .seconds = f.seconds > 0 ? f.seconds : trace->Seconds(),
                       .seed = f.seed});
    tenants.push_back({std::move(*pipeline), std::move(*trace)});
  }
  const std::vector<std::string> policies =
      f.policies.empty() ? std::vector<std::string>{gym::kShared, gym::kFirstCome} : f.policies;
  for (const std::string& policy : policies) {
    if (policy != gym::kShared && policy != gym::kFirstCome) {
      return Fail(err, "with several pipelines --policy is shared, first-come or both",
                  kExitInvalidInput);
    }
    gym::Options options = inputs->options;
    options.progress = Progress(f.progress, policy, err);
    auto runs = gym::SimulateTogether(tenants, options, policy == gym::kShared);
    if (options.progress) err << "\n";
    if (!runs) return Fail(err, runs.error().message, kExitInvalidInput);
    for (size_t i = 0; i < runs->size(); ++i) reports[i].policies.push_back(std::move((*runs)[i]));
  }
  if (f.output == "csv") {
    for (const gym::Report& r : reports) out << "# " << r.pipeline << "\n" << gym::RenderCsv(r);
  } else {
    out << (f.output == "json" ? gym::TogetherJson(reports).dump(2) + "\n"
                               : gym::RenderTogether(reports));
  }
  return kExitOk;
}

int Simulate(const SimulateFlags& f, std::ostream& out, std::ostream& err) {
  if (f.files.size() > 1) return SimulateTogether(f, out, err);
  auto inputs = ReadInputs(f);
  if (!inputs) return Fail(err, inputs.error().message, kExitInvalidInput);
  gym::Report report;
  report.pipeline = StringField(Member(inputs->pipeline, "metadata"), "name");
  report.trace = f.trace;
  report.seed = f.seed;
  report.seconds = inputs->options.RunSeconds();
  std::vector<std::string> policies = f.policies;
  if (policies.empty()) {
    policies = {"", "hpa"};
    // A pipeline that scales to zero is shown beside itself always warm: what it saves.
    const nlohmann::json spec = Member(inputs->pipeline, "spec");
    if (spec.is_object() && spec.contains("scaleToZero")) {
      policies.insert(policies.begin() + 1, gym::kAlwaysWarm);
    }
  }
  if (f.tune > 0) {
    report.attainment = f.tune;
    if (auto tuned = TuneBaselines(*inputs, f, policies, report, err); !tuned) {
      return Fail(err, tuned.error().message, kExitInvalidInput);
    }
  }
  for (const std::string& policy : policies) {
    gym::Options options = inputs->options;
    options.policy = policy;
    options.progress = Progress(f.progress, policy.empty() ? "pipescale" : policy, err);
    auto run = gym::Simulate(inputs->pipeline, options);
    if (options.progress) err << "\n";
    if (!run) return Fail(err, run.error().message, kExitInvalidInput);
    report.policies.push_back(std::move(*run));
  }
  out << (f.output == "json"  ? gym::ToJson(report).dump(2) + "\n"
          : f.output == "csv" ? gym::RenderCsv(report)
                              : gym::RenderTable(report));
  if (!f.plot.empty()) {
    std::ofstream svg(f.plot);
    svg << gym::RenderSvg(report);
    if (!svg) return Fail(err, "cannot write " + f.plot, kExitFailure);
  }
  return kExitOk;
}

}  // namespace

int RunSimulate(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  for (const std::string& a : args) {
    if (a == "--help" || a == "-h") {
      out << kSimulateUsage;
      return kExitOk;
    }
  }
  SimulateFlags flags;
  if (std::string problem = ParseSimulateFlags(args, flags); !problem.empty()) {
    return Fail(err, problem + " (pipescale simulate --help)", kExitInvalidInput);
  }
  return Simulate(flags, out, err);
}

}  // namespace pipescale::cli

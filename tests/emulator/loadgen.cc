// pipescale-loadgen: an open-loop client of a pipeline's router (a slow system does not slow
// the load), for tests, benchmarks and the demo. It sends Open Inference Protocol requests with
// Poisson arrivals at the rates of a trace (trace.h) or at a CSV's exact times, naming each
// request's execution path by the paths' weights (or leaving the path to the models), and
// reports what it sent and measured: the achieved rate, per-path latency percentiles and SLO
// attainment, as JSON. Each query's size is drawn from the pipeline's spec.querySizes. The
// requests are trace/arrivals.h's for --seed: `pipescale simulate --seed` replays the same ones.
//
//   pipescale-loadgen -f PIPELINE.yaml (--router IP:PORT[,IP:PORT...] | --kubeconfig F)
//       --trace SPEC [--mix named|models] [--seed 42] [--report FILE] [--timeout-s 30]
//       [--query-sizes SIZE:WEIGHT,...] [--wait-ready SECONDS] [--requests FILE]
// With --kubeconfig the routers are the Ready pods labelled pipescale.io/router=<pipeline>,
// followed as they change and taken in turn, as a client behind their Service reaches them: a
// request whose connection could not be opened (nothing was sent: a router that just died) goes
// to the next one, as a client reconnecting through the Service would; one a router took and
// did not answer is lost. The JSON report goes to stdout and --report; --requests writes every
// request as CSV (sent and answered in unix ms, the router, the path, the status or 0), so a
// test can tell which were in flight on a router when it was killed.
// --query-sizes draws the sizes from another mix than the spec's (a shift the operator should see).
// --wait-ready holds the trace until a router says the pipeline's model is ready (every task has a
// Ready pod), as a user waits for a new deployment before sending it traffic; at most that long.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "api/pipeline_parse.h"
#include "api/router_objects.h"
#include "common/file.h"
#include "common/flags.h"
#include "common/json_fields.h"
#include "kube/config.h"
#include "kube/informer.h"
#include "router/upstream.h"
#include "routing/endpoints.h"
#include "trace/arrivals.h"
#include "trace/trace.h"

namespace {

using namespace pipescale;
using nlohmann::json;
using Clock = std::chrono::steady_clock;
using Flags = std::map<std::string, std::string>;

// The numeric flags, checked before anything runs.
struct Numbers {
  std::uint64_t seed = 42;
  int timeout_s = 30;
  int wait_ready_s = 0;
};
namespace asio = boost::asio;

// One query: `rows` 1x4 FP32 tensors in a batch, as small image features would be.
json Body(const std::string& path, int rows) {
  json data = json::array();
  for (int i = 0; i < rows; ++i) data.insert(data.end(), {0.1, 0.2, 0.3, 0.4});
  json body = {{"inputs",
                {{{"name", "input"}, {"shape", {rows, 4}}, {"datatype", "FP32"}, {"data", data}}}}};
  if (!path.empty()) body["parameters"]["pipescale_path"] = path;
  return body;
}

// The routers to send to: fixed, or the Ready router pods of the pipeline, in turn.
class Routers {
 public:
  Routers(const Flags& flags, const model::Pipeline& pipeline) {
    std::stringstream ss(flags.at("--router"));
    for (std::string a; std::getline(ss, a, ',');) fixed_.push_back(a);
    if (!fixed_.empty() || flags.at("--kubeconfig").empty()) return;
    auto config = kube::LoadClusterConfig(flags.at("--kubeconfig"));
    if (!config) return;
    client_ = std::make_unique<kube::Client>(*config);
    pods_ = std::make_unique<kube::Informer>(
        *client_,
        kube::Informer::Options{.type = kube::kPods,
                                .namespace_name = pipeline.namespace_name,
                                .label_selector = "pipescale.io/router=" + pipeline.name},
        [](const std::string&, const json&) {});
    pods_->Start();
  }

  // The Ready routers' ip:port, the next in turn first: a request tries them in this order.
  std::vector<std::string> InTurn() {
    std::vector<std::string> ready = Ready();
    if (!ready.empty()) {
      std::rotate(ready.begin(),
                  ready.begin() + static_cast<std::ptrdiff_t>(turn_++ % ready.size()), ready.end());
    }
    return ready;
  }
  // The next router's ip:port, or "" when none is Ready.
  std::string Next() {
    const std::vector<std::string> ready = InTurn();
    return ready.empty() ? "" : ready.front();
  }

 private:
  std::vector<std::string> Ready() const { return pods_ ? ReadyPods() : fixed_; }
  std::vector<std::string> ReadyPods() const {
    std::vector<std::string> out;
    for (const json& pod : pods_->List()) {
      const std::string ip = StringField(pod.value("status", json::object()), "podIP");
      if (routing::PodReady(pod) && !ip.empty()) {
        out.push_back(ip + ":" + std::to_string(api::kRouterPort));
      }
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  std::vector<std::string> fixed_;
  std::unique_ptr<kube::Client> client_;
  std::unique_ptr<kube::Informer> pods_;
  size_t turn_ = 0;
};

// One request as sent and answered, for --requests.
struct RequestRecord {
  double sent_ms = 0, done_ms = 0;  // unix time
  std::string router, path;
  int code = 0;
};

double UnixMs() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct PathStats {
  long sent = 0;
  std::map<int, long> codes;    // by HTTP status, 0: no answer
  std::vector<double> ok_ms;    // latencies of the answers with 200
  std::vector<double> shed_ms;  // how long a 503 took to come
  double slo_ms = 0;
};

// The nearest-rank percentile: the smallest value with at least q of them at or below it.
double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

json Report(const std::map<std::string, PathStats>& paths, double seconds) {
  json out = {{"seconds", seconds}, {"paths", json::object()}};
  if (paths.empty()) return out;
  long sent = 0;
  for (const auto& [name, s] : paths) {
    sent += s.sent;
    long met = 0;
    for (double ms : s.ok_ms) met += s.slo_ms <= 0 || ms <= s.slo_ms ? 1 : 0;
    const auto shed = s.codes.find(503);
    const long admitted = s.sent - (shed == s.codes.end() ? 0 : shed->second);
    json codes = json::object();
    for (const auto& [code, n] : s.codes) codes[std::to_string(code)] = n;
    out["paths"][name] = {
        {"sent", s.sent},
        {"codes", codes},
        {"meanMs", s.ok_ms.empty() ? 0.0
                                   : std::accumulate(s.ok_ms.begin(), s.ok_ms.end(), 0.0) /
                                         static_cast<double>(s.ok_ms.size())},
        {"p50Ms", Percentile(s.ok_ms, 0.5)},
        {"p99Ms", Percentile(s.ok_ms, 0.99)},
        {"shedP99Ms", Percentile(s.shed_ms, 0.99)},
        {"sloAttainment", s.sent > 0 ? static_cast<double>(met) / s.sent : 0},
        // Of the requests the router let in (all but its 503s), the share within the SLO.
        {"admittedSloAttainment", admitted > 0 ? static_cast<double>(met) / admitted : 0}};
  }
  out["sent"] = sent;
  out["achievedRps"] = seconds > 0 ? sent / seconds : 0;
  return out;
}

class LoadGenerator {
 public:
  LoadGenerator(const Flags& flags, const Numbers& numbers, const model::Pipeline& pipeline,
                trace::Trace trace)
      : flags_(flags),
        numbers_(numbers),
        pipeline_(pipeline),
        trace_(std::move(trace)),
        routers_(flags, pipeline),
        timeout_(std::chrono::seconds(numbers.timeout_s)) {
    for (const model::Path& p : pipeline.spec.paths) stats_[p.name].slo_ms = p.slo_ms;
  }

  json Run() {
    // The trace starts at the front door: a client has nothing to send to before a router is
    // Ready.
    const auto give_up = Clock::now() + std::chrono::seconds(120);
    if (routers_.Next().empty()) std::cerr << "loadgen: waiting for a Ready router\n";
    while (routers_.Next().empty() && Clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    asio::co_spawn(context_, Start(), asio::detached);
    context_.run();
    json report = Report(stats_, sent_seconds_);
    report["seed"] =
        numbers_.seed;  // the requests' (trace/arrivals.h): a simulation can replay them
    report["phases"] = json::array();
    for (size_t i = 0; i < phases_.size() && i < trace_.steps.size(); ++i) {
      json phase = Report(phases_[i], trace_.steps[i].seconds);
      phase["rps"] = trace_.steps[i].rps;
      report["phases"].push_back(std::move(phase));
    }
    return report;
  }

  const std::vector<RequestRecord>& records() const { return records_; }

 private:
  asio::awaitable<void> Start() {
    co_await WaitForModels();
    start_ = Clock::now();
    co_await Arrivals();
  }

  asio::awaitable<void> WaitForModels() {
    const std::string ready = "/v2/models/" + pipeline_.name + "/ready";
    const auto give_up = Clock::now() + std::chrono::seconds(numbers_.wait_ready_s);
    asio::steady_timer timer(context_);
    for (bool said = false; Clock::now() < give_up; said = true) {
      const std::string router = routers_.Next();
      if (!router.empty()) {
        auto reply = co_await pool_.Get(router, ready, std::chrono::seconds(1));
        if (reply.ok() && reply->status == 200) co_return;
      }
      if (!said) std::cerr << "loadgen: waiting for the pipeline's models to be ready\n";
      timer.expires_after(std::chrono::milliseconds(200));
      co_await timer.async_wait(asio::use_awaitable);
    }
    // The clients come anyway, as they would; what they see then is not a steady pipeline's.
    if (numbers_.wait_ready_s > 0) {
      std::cerr << "loadgen: the pipeline's models were not ready within " << numbers_.wait_ready_s
                << " s (--wait-ready); sending anyway\n";
    }
  }

  // When `seconds` from the trace's start is.
  Clock::time_point At(double seconds) const {
    return start_ +
           std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  }

  // Says each step of the trace up to `step` as it starts (a person reading the log, and the
  // tests that start their clock at the first one, see when each begins).
  asio::awaitable<void> AnnounceUpTo(int step, asio::steady_timer& timer) {
    for (; announced_ < step && announced_ + 1 < static_cast<int>(trace_.steps.size());) {
      const trace::Step& s = trace_.steps[++announced_];
      timer.expires_at(At(next_step_s_));
      co_await timer.async_wait(asio::use_awaitable);
      next_step_s_ += s.seconds;
      std::cerr << "loadgen: " << s.rps << " requests/s for " << s.seconds << " s\n";
    }
  }

  // The requests trace::ArrivalStream draws for the seed: what `pipescale simulate --seed` replays.
  asio::awaitable<void> Arrivals() {
    asio::steady_timer timer(context_);
    trace::Mix mix = trace::ClientMix(pipeline_);
    if (flags_.at("--mix") == "models") mix.path_weights.clear();
    trace::ArrivalStream arrivals(trace_, std::move(mix), numbers_.seed);
    while (const auto a = arrivals.Next()) {
      co_await AnnounceUpTo(a->step, timer);
      timer.expires_at(At(a->at_s));
      co_await timer.async_wait(asio::use_awaitable);
      ++outstanding_;
      // Named values only: GCC 12 destroys a coroutine's prvalue argument twice.
      std::string path = a->path < 0 ? "" : pipeline_.spec.paths[a->path].name;
      const int rows = a->rows;
      const int phase = a->step;
      asio::co_spawn(context_, Send(std::move(path), rows, phase), asio::detached);
    }
    co_await AnnounceUpTo(static_cast<int>(trace_.steps.size()), timer);
    timer.expires_at(At(trace_.Seconds()));  // a quiet last step still lasts its time
    co_await timer.async_wait(asio::use_awaitable);
    sent_seconds_ = trace_.Seconds();
  }

  // A failed request's reason, said once per status and message (and at most 20 in all): what a
  // run's 502s or 503s were is then in its log.
  void SayFailure(int code, const json& body) {
    const std::string error =
        body.is_object() && body.contains("error") && body["error"].is_string()
            ? body["error"].get<std::string>()
            : std::string("(no error in the body)");
    if (errors_.size() < 20 && errors_.insert(std::to_string(code) + " " + error).second) {
      std::cerr << "loadgen: " << code << " from the router: " << error << "\n";
    }
  }

  // `phase`: the trace's step it is sent in (-1: a CSV's times).
  asio::awaitable<void> Send(std::string path, int rows, int phase) {
    std::string router;
    const auto sent = Clock::now();
    const double sent_ms = UnixMs();
    int code = 0;
    std::vector<std::string> taken = {path.empty() ? "unlisted" : path};
    // The next router for a request no router took, each at most once.
    const std::vector<std::string> routers = routers_.InTurn();
    for (size_t i = 0; i < routers.size(); ++i) {
      router = routers[i];
      auto reply = co_await pool_.Post(router, "/v2/models/" + pipeline_.name + "/infer",
                                       Body(path, rows).dump(), timeout_);
      const bool last = i + 1 == routers.size();
      if (!reply.ok() && reply.error().kind == ErrorKind::kUnavailable && !last) continue;
      if (!reply.ok() && errors_.insert(reply.error().message).second) {
        std::cerr << "loadgen: no answer from " << router << ": " << reply.error().message << "\n";
      }
      if (reply.ok()) {
        code = static_cast<int>(reply->status);
        const json body = json::parse(reply->body, nullptr, false);
        if (code != 200) SayFailure(code, body);
        if (path.empty() && body.is_object() && body.contains("parameters")) {
          const json named = body["parameters"].value("pipescale_paths", json::array());
          if (named.is_array() && !named.empty()) taken = named.get<std::vector<std::string>>();
        }
      }
      break;
    }
    if (!flags_.at("--requests").empty()) {
      records_.push_back({.sent_ms = sent_ms,
                          .done_ms = UnixMs(),
                          .router = router,
                          .path = path.empty() ? "unlisted" : path,
                          .code = code});
    }
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - sent).count();
    if (phase >= 0 && phases_.size() <= static_cast<size_t>(phase)) phases_.resize(phase + 1);
    for (const std::string& p : taken) {
      for (PathStats* s : {&stats_[p], phase >= 0 ? &phases_[phase][p] : nullptr}) {
        if (s == nullptr) continue;
        s->slo_ms = stats_[p].slo_ms;
        ++s->sent;
        ++s->codes[code];
        if (code == 200) s->ok_ms.push_back(ms);
        if (code == 503) s->shed_ms.push_back(ms);
      }
    }
    if (--outstanding_ == 0 && sent_seconds_ > 0) context_.stop();
  }

  const Flags& flags_;
  Numbers numbers_;
  const model::Pipeline& pipeline_;
  trace::Trace trace_;
  Routers routers_;
  std::chrono::milliseconds timeout_;
  asio::io_context context_{1};
  router::UpstreamPool pool_{context_.get_executor()};
  Clock::time_point start_;
  std::map<std::string, PathStats> stats_;
  // The same per step of the trace, by the step a request was sent in.
  std::vector<std::map<std::string, PathStats>> phases_;
  int outstanding_ = 0;
  double sent_seconds_ = 0;
  int announced_ = -1;                  // the last step said in the log
  double next_step_s_ = 0;              // when the step after it starts
  std::set<std::string> errors_;        // said once each
  std::vector<RequestRecord> records_;  // with --requests
};

// --requests: one line per request, as sent.
bool WriteRequests(const std::string& file, const std::vector<RequestRecord>& records) {
  std::ofstream out(file);
  out << "sent_unix_ms,done_unix_ms,router,path,code\n";
  for (const RequestRecord& r : records) {
    out << std::fixed << std::setprecision(1) << r.sent_ms << "," << r.done_ms << "," << r.router
        << "," << r.path << "," << r.code << "\n";
  }
  return static_cast<bool>(out);
}

// What the clients saw, one line per path, for a person reading the log.
void PrintSummary(const json& report) {
  std::fprintf(stderr, "loadgen: sent %ld requests in %.0f s (%.1f per second)\n",
               report["sent"].get<long>(), report["seconds"].get<double>(),
               report["achievedRps"].get<double>());
  std::fprintf(stderr, "loadgen: %-16s %8s %8s %8s %8s %9s %9s %8s\n", "PATH", "SENT", "OK", "SHED",
               "LATE", "P50-MS", "P99-MS", "IN-SLO");
  for (const auto& [path, p] : report["paths"].items()) {
    std::fprintf(stderr, "loadgen: %-16s %8ld %8ld %8ld %8ld %9.1f %9.1f %7.1f%%\n", path.c_str(),
                 p["sent"].get<long>(), p["codes"].value("200", 0L), p["codes"].value("503", 0L),
                 p["codes"].value("504", 0L), p["p50Ms"].get<double>(), p["p99Ms"].get<double>(),
                 100 * p["sloAttainment"].get<double>());
  }
  // Within the SLO per step of the trace, with the requests refused at the door: a plan is judged
  // at each load it meets.
  const json& phases = report.value("phases", json::array());
  if (phases.size() < 2) return;
  std::string head = "loadgen: within the SLO (shed) per step:";
  for (const json& phase : phases) {
    char cell[32];
    std::snprintf(cell, sizeof cell, " %10.0f/s", phase["rps"].get<double>());
    head += cell;
  }
  std::fprintf(stderr, "%s\n", head.c_str());
  for (const auto& [path, unused] : report["paths"].items()) {
    std::string line = "loadgen:   " + path;
    line.resize(std::max<size_t>(line.size(), 49), ' ');
    for (const json& phase : phases) {
      const json p = phase["paths"].value(path, json::object());
      char cell[32];
      std::snprintf(cell, sizeof cell, " %6.1f%% (%2ld)", 100 * p.value("sloAttainment", 0.0),
                    p.value("codes", json::object()).value("503", 0L));
      line += cell;
    }
    std::fprintf(stderr, "%s\n", line.c_str());
  }
}

Flags ParseFlags(int argc, char** argv) {
  Flags flags = {{"-f", ""},
                 {"--router", ""},
                 {"--kubeconfig", ""},
                 {"--trace", ""},
                 {"--mix", "named"},
                 {"--seed", "42"},
                 {"--report", ""},
                 {"--timeout-s", "30"},
                 {"--query-sizes", ""},
                 {"--wait-ready", "0"},
                 {"--requests", ""}};
  for (int i = 1; i < argc; i += 2) {
    if (!flags.contains(argv[i])) {
      std::cerr << "pipescale-loadgen: unknown flag " << argv[i] << "\n";
      std::exit(2);
    }
    // A flag last on the line without its value was dropped unread, and the run went on with
    // its default (a --report with no file wrote no report).
    if (i + 1 == argc) {
      std::cerr << "pipescale-loadgen: " << argv[i] << ": needs a value\n";
      std::exit(2);
    }
    flags[argv[i]] = argv[i + 1];
  }
  return flags;
}

Result<Numbers> ReadNumbers(const Flags& flags) {
  Numbers n;
  auto seed = ParseInteger<std::uint64_t>("--seed", flags.at("--seed"), 0, UINT64_MAX);
  if (!seed) return seed.error();
  n.seed = *seed;
  auto timeout = ParseInteger("--timeout-s", flags.at("--timeout-s"), 1, 3600);
  if (!timeout) return timeout.error();
  n.timeout_s = *timeout;
  auto wait = ParseInteger("--wait-ready", flags.at("--wait-ready"), 0, 3600);
  if (!wait) return wait.error();
  n.wait_ready_s = *wait;
  return n;
}

// "1:3,10:1" as query sizes and weights.
Result<std::vector<model::QuerySize>> ParseQuerySizes(const std::string& text) {
  std::vector<model::QuerySize> out;
  std::istringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    const auto colon = item.find(':');
    if (colon == std::string::npos) return FlagError("--query-sizes", "SIZE:WEIGHT,...", item);
    auto size = ParseInteger("--query-sizes", item.substr(0, colon), 1, api::limits::kMaxBatch);
    if (!size) return size.error();
    auto weight = ParseNumber("--query-sizes", item.substr(colon + 1), 0, api::limits::kMaxWeight);
    if (!weight) return weight.error();
    if (!(*weight > 0)) return FlagError("--query-sizes", "a weight above 0", item);
    out.push_back({.size = *size, .weight = *weight});
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const Flags flags = ParseFlags(argc, argv);
  const auto numbers = ReadNumbers(flags);
  if (!numbers) {
    std::cerr << "pipescale-loadgen: " << numbers.error().message << "\n";
    return 2;
  }
  auto parsed = api::ParsePipelineFile(flags.at("-f"));
  if (!parsed.pipeline) {
    for (const auto& e : parsed.errors) std::cerr << e.ToString() << "\n";
    return 2;
  }
  std::string csv;
  if (flags.at("--trace").starts_with("csv:")) {
    auto text = ReadFileText(flags.at("--trace").substr(4), "--trace");
    if (!text) {
      std::cerr << "pipescale-loadgen: " << text.error().message << "\n";
      return 2;
    }
    csv = std::move(*text);
  }
  auto trace = trace::ParseTrace(flags.at("--trace"), numbers->seed, csv);
  if (!trace) {
    std::cerr << "pipescale-loadgen: " << trace.error().message << "\n";
    return 2;
  }
  if (flags.at("--router").empty() && flags.at("--kubeconfig").empty()) {
    std::cerr << "pipescale-loadgen: --router IP:PORT or --kubeconfig F is required\n";
    return 2;
  }
  if (!flags.at("--query-sizes").empty()) {
    auto sizes = ParseQuerySizes(flags.at("--query-sizes"));
    if (!sizes) {
      std::cerr << "pipescale-loadgen: " << sizes.error().message << "\n";
      return 2;
    }
    parsed.pipeline->spec.query_sizes = std::move(*sizes);
  }
  LoadGenerator load(flags, *numbers, *parsed.pipeline, std::move(*trace));
  const json report = load.Run();
  PrintSummary(report);
  if (!flags.at("--report").empty()) {
    std::ofstream out(flags.at("--report"));
    out << report.dump(2) << "\n";
    if (!out) {
      std::cerr << "pipescale-loadgen: --report: cannot write " << flags.at("--report") << "\n";
      return 1;
    }
  }
  if (!flags.at("--requests").empty() && !WriteRequests(flags.at("--requests"), load.records())) {
    std::cerr << "pipescale-loadgen: --requests: cannot write " << flags.at("--requests") << "\n";
    return 1;
  }
  std::cout << report.dump() << "\n";
  return 0;
}

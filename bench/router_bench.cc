// What the router costs on the request path, against the floor this machine allows: the same
// requests sent straight to a backend (direct), through a bare gateway on the same library that
// only forwards (bare: Boost.Beast, the same upstream pool, no parsing, no policy), and through
// pipescale-router with every policy of its own on (router). Paths of one, two and three tasks,
// each task answered at once by a Beast backend, so what is measured is the gateway itself.
// The gateway runs on core 0, the backend and this client on core 1. Requests are valid OIP
// bodies of a tiny tensor (4 numbers) and of about 1 KB, 100 KB and 1 MB (a text model's input,
// an image's, a large image's), each also as binary data (the binary extension: "1MB-bin");
// every task answers about 300 bytes: two outputs and parameters.
//
//   router_bench [--seconds 3] [--rounds 3] [--connections 8] [--rate R]
//                [--sizes tiny,1KB,100KB,1MB,1KB-bin,100KB-bin,1MB-bin] [--tasks 1,2,3]
// Prints markdown: requests/s per core and CPU per request at saturation (closed loop), and
// the latency a gateway adds at a fixed open-loop rate (p50, p99, p99.9), medians of rounds.
// The open-loop rate is --rate, else PacedRate's.
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

#include "common/flags.h"
#include "integration/harness/process.h"
#include "integration/harness/wait.h"
#include "payloads.h"
#include "router/asio.h"
#include "router/upstream.h"

namespace {

using namespace pipescale::router;
using pipescale::bench::BinaryRequestOf;
using pipescale::bench::kReply;
using pipescale::bench::RequestOf;
using pipescale::testing::Process;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// Serves HTTP/1.1 keep-alive on `port` (0: any) with `answer` (502 when it has none); writes the
// port to `port_file`.
template <typename Answer>
void Serve(const std::string& port_file, Answer answer) {
  asio::io_context context{1};
  tcp::acceptor acceptor(context, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  std::ofstream(port_file + ".tmp") << acceptor.local_endpoint().port() << "\n";
  std::filesystem::rename(port_file + ".tmp", port_file);
  auto session = [&](tcp::socket socket) -> asio::awaitable<void> {
    beast::tcp_stream stream(std::move(socket));
    beast::error_code ec;
    stream.socket().set_option(tcp::no_delay(true), ec);
    beast::flat_buffer buffer = ReadBuffer();
    for (;;) {
      // Beast's default limit is 1 MiB, below the largest request here.
      http::request_parser<http::string_body> parser;
      parser.body_limit(64 << 20);
      co_await http::async_read(stream, buffer, parser, Redirect(ec));
      if (ec) break;
      const HttpRequest request = parser.release();
      HttpResponse response{http::status::ok, 11};
      response.set(http::field::content_type, "application/json");
      std::optional<std::string> body = co_await answer(request);
      if (!body) response.result(http::status::bad_gateway);  // counted as failed
      response.body() = body ? std::move(*body) : std::string();
      response.keep_alive(true);
      response.prepare_payload();
      co_await http::async_write(stream, response, Redirect(ec));
      if (ec) break;
    }
  };
  asio::co_spawn(
      context,
      [&]() -> asio::awaitable<void> {
        for (;;) {
          tcp::socket s = co_await acceptor.async_accept(asio::use_awaitable);
          asio::co_spawn(context, session(std::move(s)), asio::detached);
        }
      },
      asio::detached);
  context.run();
}

// The backend: every task answers at once.
void Backend(const std::string& port_file) {
  Serve(port_file, [](const HttpRequest&) -> asio::awaitable<std::optional<std::string>> {
    co_return kReply;
  });
}

// The floor: forwards the body to the backend `tasks` times in turn, answers the last reply.
void BareGateway(const std::string& port_file, const std::string& backend, int tasks) {
  std::unique_ptr<UpstreamPool> pool;
  Serve(port_file, [&](const HttpRequest& request) -> asio::awaitable<std::optional<std::string>> {
    if (!pool) pool = std::make_unique<UpstreamPool>(co_await asio::this_coro::executor);
    std::string body = request.body();
    // A binary body is forwarded with its header; the answers are JSON.
    const auto length = request["Inference-Header-Content-Length"];
    std::optional<size_t> header_length;
    if (!length.empty()) header_length = std::stoul(std::string(length));
    for (int t = 0; t < tasks; ++t) {
      const std::string_view piece = body;
      auto reply = co_await pool->Post(backend, "/v2/models/t/infer", std::span(&piece, 1),
                                       t == 0 ? header_length : std::nullopt, 10s);
      if (!reply.ok() || reply->status != 200) co_return std::nullopt;
      body = reply->body;
    }
    co_return body;
  });
}

std::string ReadFile(const std::string& f) {
  std::ifstream in(f);
  return {std::istreambuf_iterator<char>(in), {}};
}

std::string WaitPort(const std::string& file) {
  pipescale::testing::Eventually([&] { return !ReadFile(file).empty(); }, 10s);
  std::istringstream in(ReadFile(file));
  std::string port;
  in >> port;
  return port;
}

// CPU seconds a process has used (user + system).
double CpuSeconds(pid_t pid) {
  std::istringstream in(ReadFile("/proc/" + std::to_string(pid) + "/stat"));
  std::string field;
  for (int i = 1; i <= 13; ++i) in >> field;
  long user = 0, system = 0;
  in >> user >> system;
  return static_cast<double>(user + system) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

struct Run {
  double rps = 0;
  double cpu_us = 0;  // the gateway's CPU per request; 0 for direct
  long failed = 0;    // sent in the measured window and not answered 200
  std::vector<double> ms;
};

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

// One request: to `target` (ip:port) once, or, direct, to the backend once per task.
// A binary request (`header_length` set) is sent with the extension's header.
asio::awaitable<bool> OneRequest(UpstreamPool& pool, const std::string& target,
                                 const std::string& path, const std::string& body,
                                 std::optional<size_t> header_length, int calls) {
  static const std::string kReplyBody = kReply;  // what the next task is sent, as a gateway does
  for (int i = 0; i < calls; ++i) {
    const std::string_view piece = i == 0 ? body : kReplyBody;
    auto reply = co_await pool.Post(target, path, std::span(&piece, 1),
                                    i == 0 ? header_length : std::nullopt, 10s);
    if (!reply.ok() || reply->status != 200) co_return false;
  }
  co_return true;
}

// Closed loop with `connections` clients for `seconds` (rate 0), or open loop at `rate`.
Run Measure(const std::string& target, const std::string& path, const std::string& body,
            std::optional<size_t> header_length, int calls, pid_t gateway, int connections,
            double seconds, double rate) {
  asio::io_context context{1};
  UpstreamPool pool(context.get_executor());
  Run run;
  long done = 0;
  const auto warm = Clock::now() + 1s;
  const auto end =
      warm + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  double cpu_start = 0;
  auto timed = [&]() -> asio::awaitable<void> {
    const auto sent = Clock::now();
    const bool ok = co_await OneRequest(pool, target, path, body, header_length, calls);
    if (sent < warm || sent >= end) co_return;
    if (!ok) {
      ++run.failed;
      co_return;
    }
    ++done;
    run.ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - sent).count());
  };
  if (rate <= 0) {
    for (int c = 0; c < connections; ++c) {
      asio::co_spawn(
          context,
          [&]() -> asio::awaitable<void> {
            while (Clock::now() < end) co_await timed();
          },
          asio::detached);
    }
  } else {
    asio::co_spawn(
        context,
        [&]() -> asio::awaitable<void> {
          asio::steady_timer timer(context);
          std::mt19937_64 rng(1);
          std::exponential_distribution<double> gap(rate);
          for (auto at = Clock::now(); at < end;) {
            at += std::chrono::duration_cast<Clock::duration>(
                std::chrono::duration<double>(gap(rng)));
            timer.expires_at(at);
            co_await timer.async_wait(asio::use_awaitable);
            asio::co_spawn(context, timed(), asio::detached);
          }
        },
        asio::detached);
  }
  std::thread cpu([&] {
    std::this_thread::sleep_until(warm);
    if (gateway > 0) cpu_start = CpuSeconds(gateway);
    std::this_thread::sleep_until(end);
    if (gateway > 0 && done > 0) {
      run.cpu_us = (CpuSeconds(gateway) - cpu_start) * 1e6 / static_cast<double>(done);
    }
  });
  context.run();
  cpu.join();
  run.rps = static_cast<double>(done) / seconds;
  return run;
}

void Pin(int core) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set);
  sched_setaffinity(0, sizeof set, &set);
}

std::string Chain(const std::string& dir, int tasks) {
  std::ostringstream yaml;
  yaml << "apiVersion: pipescale.io/v1alpha1\nkind: InferencePipeline\n"
       << "metadata: {name: chain, namespace: bench}\nspec:\n  hardwareClasses: [{name: cpu}]\n"
       << "  tasks:\n";
  std::string path;
  for (int t = 1; t <= tasks; ++t) {
    yaml << "    - {name: t" << t;
    if (t < tasks) yaml << ", next: [{task: t" << t + 1 << "}]";
    yaml << ", variants: [{name: v, profiles: [{hardwareClass: cpu, latencyMs: {quadratic: "
            "{c: 1}}}]}]}\n";
    path += (t > 1 ? ", t" : "t") + std::to_string(t);
  }
  yaml << "  paths: [{name: p, tasks: [" << path << "], sloMs: 10000}]\n";
  const std::string file = dir + "/chain" + std::to_string(tasks) + ".yaml";
  std::ofstream(file) << yaml.str();
  return file;
}

struct Row {
  double rate = 0;                                           // open loop, requests/s
  std::map<std::string, std::vector<Run>> saturated, paced;  // by gateway: rounds
};

double Median(std::vector<double> v) { return Quantile(std::move(v), 0.5); }

template <typename Field>
double MedianOf(const std::vector<Run>& runs, Field field) {
  std::vector<double> v;
  for (const Run& r : runs) v.push_back(field(r));
  return Median(v);
}

// By request size, then tasks: each gateway's saturated throughput and CPU, the router's CPU
// over the bare gateway's, and the latency each adds over calling the backend directly.
void Print(const std::vector<std::string>& sizes,
           const std::map<std::string, std::map<int, Row>>& rows) {
  std::printf(
      "| request | tasks | gateway | requests/s (1 core) | CPU per request | router / bare | "
      "open loop | added p50 | added p99 | added p99.9 | failed |\n"
      "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const std::string& size : sizes) {
    for (const auto& [tasks, row] : rows.at(size)) {
      const auto& direct = row.paced.at("direct");
      const double bare_cpu =
          MedianOf(row.saturated.at("bare"), [](const Run& r) { return r.cpu_us; });
      for (const char* g : {"bare", "router"}) {
        const double rps = MedianOf(row.saturated.at(g), [](const Run& r) { return r.rps; });
        const double cpu = MedianOf(row.saturated.at(g), [](const Run& r) { return r.cpu_us; });
        std::printf("| %s | %d | %s | %.0f | %.1f µs | %.2fx | %.0f/s |", size.c_str(), tasks, g,
                    rps, cpu, cpu / bare_cpu, row.rate);
        for (double q : {0.5, 0.99, 0.999}) {
          const double added =
              MedianOf(row.paced.at(g), [&](const Run& r) { return Quantile(r.ms, q); }) -
              MedianOf(direct, [&](const Run& r) { return Quantile(r.ms, q); });
          std::printf(" %.3f ms |", added);
        }
        long failed = 0;
        for (const Run& r : row.saturated.at(g)) failed += r.failed;
        for (const Run& r : row.paced.at(g)) failed += r.failed;
        std::printf(" %ld |\n", failed);
      }
    }
  }
  std::printf(
      "\n(added latency at the open-loop rate, over calling the backend directly; failed: "
      "requests not answered 200 over all rounds)\n");
}

// The open loop's rate: 1000 requests/s, less where the bodies alone would fill the client's
// core (this client and the backend share one) and measure it rather than the gateway.
double PacedRate(const std::string& size) {
  return size.starts_with("1MB") ? 30 : size.starts_with("100KB") ? 300 : 1000;
}

std::vector<std::string> Split(const std::string& list) {
  std::vector<std::string> out;
  std::istringstream in(list);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  return out;
}

// Chains longer than this say nothing more about the router's cost per task.
constexpr int kMaxTasks = 64;

// The numeric flags, checked before any process starts.
struct Numbers {
  double seconds = 3;
  int rounds = 3;
  int connections = 8;
  std::optional<double> rate;  // else each size's paced rate
  std::vector<int> tasks;
};

pipescale::Result<Numbers> ReadNumbers(std::map<std::string, std::string>& flags) {
  using pipescale::ParseInteger;
  using pipescale::ParseNumber;
  Numbers n;
  auto seconds = ParseNumber("--seconds", flags["--seconds"], 0.1, 3600);
  if (!seconds) return seconds.error();
  n.seconds = *seconds;
  auto rounds = ParseInteger("--rounds", flags["--rounds"], 1, 100);
  if (!rounds) return rounds.error();
  n.rounds = *rounds;
  auto connections = ParseInteger("--connections", flags["--connections"], 1, 10000);
  if (!connections) return connections.error();
  n.connections = *connections;
  if (!flags["--rate"].empty()) {
    auto rate = ParseNumber("--rate", flags["--rate"], 0.001, 1e7);
    if (!rate) return rate.error();
    n.rate = *rate;
  }
  for (const std::string& text : Split(flags["--tasks"])) {
    auto tasks = ParseInteger("--tasks", text, 1, kMaxTasks);
    if (!tasks) return tasks.error();
    n.tasks.push_back(*tasks);
  }
  return n;
}

int Refuse(const pipescale::Error& error) {
  std::fprintf(stderr, "router_bench: %s\n", error.message.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> flags = {
      {"--seconds", "3"},
      {"--rounds", "3"},
      {"--connections", "8"},
      {"--rate", ""},
      {"--sizes", "tiny,1KB,100KB,1MB,1KB-bin,100KB-bin,1MB-bin"},
      {"--tasks", "1,2,3"}};
  if (argc >= 3 && std::string(argv[1]) == "--backend") {
    Backend(argv[2]);
    return 0;
  }
  if (argc >= 5 && std::string(argv[1]) == "--bare") {
    auto tasks = pipescale::ParseInteger("--bare TASKS", argv[4], 1, kMaxTasks);
    if (!tasks) return Refuse(tasks.error());
    BareGateway(argv[2], argv[3], *tasks);
    return 0;
  }
  for (int i = 1; i + 1 < argc; i += 2) flags[argv[i]] = argv[i + 1];
  const auto numbers = ReadNumbers(flags);
  if (!numbers) return Refuse(numbers.error());
  const double seconds = numbers->seconds;
  const int rounds = numbers->rounds;
  const int connections = numbers->connections;
  const std::vector<std::string> sizes = Split(flags["--sizes"]);
  for (const std::string& size : sizes) {
    const std::string text = size.substr(0, size.find("-bin"));
    if (text != "tiny" && text != "1KB" && text != "100KB" && text != "1MB") {
      std::fprintf(stderr,
                   "router_bench: --sizes takes tiny, 1KB, 100KB and 1MB, each also as binary "
                   "data (1KB-bin), not %s\n",
                   size.c_str());
      return 2;
    }
  }

  const std::string dir = std::filesystem::temp_directory_path() / "pipescale-router-bench";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string self = std::filesystem::canonical("/proc/self/exe");
  Pin(1);
  Process backend({"/usr/bin/taskset", "-c", "1", self, "--backend", dir + "/backend.port"},
                  dir + "/backend.log");
  const std::string upstream = "127.0.0.1:" + WaitPort(dir + "/backend.port");

  std::map<std::string, std::map<int, Row>> rows;  // by request size, then tasks
  for (const int tasks : numbers->tasks) {
    const std::string file = Chain(dir, tasks);
    std::string endpoints;
    for (int t = 1; t <= tasks; ++t) {
      endpoints += (t > 1 ? ";t" : "t") + std::to_string(t) + "=" + upstream;
    }
    const std::string tag = std::to_string(tasks);
    Process bare({"/usr/bin/taskset", "-c", "0", self, "--bare", dir + "/bare" + tag + ".port",
                  upstream, tag},
                 dir + "/bare.log");
    Process router(
        {"/usr/bin/taskset", "-c", "0", PIPESCALE_ROUTER, "--pipeline-file", file, "--endpoints",
         endpoints, "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--threads", "1",
         "--max-in-flight", "100000", "--port-file", dir + "/router" + tag + ".port"},
        dir + "/router.log");
    const std::map<std::string, std::pair<std::string, pid_t>> gateways = {
        {"bare", {"127.0.0.1:" + WaitPort(dir + "/bare" + tag + ".port"), bare.pid()}},
        {"router", {"127.0.0.1:" + WaitPort(dir + "/router" + tag + ".port"), router.pid()}}};
    for (const std::string& size : sizes) {
      const bool binary = size.ends_with("-bin");
      const std::string body = binary ? BinaryRequestOf(size).body : RequestOf(size);
      const std::optional<size_t> header_length =
          binary ? std::optional<size_t>(BinaryRequestOf(size).json_bytes) : std::nullopt;
      Row& row = rows[size][tasks];
      row.rate = numbers->rate ? *numbers->rate : PacedRate(size);
      for (int r = 0; r < rounds; ++r) {
        row.paced["direct"].push_back(Measure(upstream, "/v2/models/t1/infer", body, header_length,
                                              tasks, 0, connections, seconds, row.rate));
        for (const auto& [name, g] : gateways) {
          row.saturated[name].push_back(Measure(g.first, "/v2/models/chain/infer", body,
                                                header_length, 1, g.second, connections, seconds,
                                                0));
          row.paced[name].push_back(Measure(g.first, "/v2/models/chain/infer", body, header_length,
                                            1, g.second, connections, seconds, row.rate));
        }
        std::fprintf(stderr, "router_bench: %s request (%zu bytes), %d task(s), round %d done\n",
                     size.c_str(), body.size(), tasks, r + 1);
      }
    }
    bare.Stop(SIGTERM, 5s);
    router.Stop(SIGTERM, 5s);
  }
  Print(sizes, rows);
  return 0;
}

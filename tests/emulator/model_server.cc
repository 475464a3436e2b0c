// pipescale-model-server: an emulated model pod, for tests and the local demo (no model, no
// GPU). Serves GET/POST /infer; requests are gathered into batches of up to the batch size
// read from an environment variable (MAX_BATCH_SIZE, as the operator sets it), each batch takes
// d(b) = a b^2 + b b + c milliseconds, and /metrics exports what a real server would.
//
//   pipescale-model-server --port 0 --port-file F --latency-ms a,b,c [--batch-env NAME]
//                          [--max-wait-ms 1000] [--emit 1.0]
#include <civetweb.h>
#include <prometheus/counter.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <future>
#include <iostream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  int port = 0;
  std::string port_file;
  double a = 0, b = 1, c = 5;  // d(b) in ms
  std::string batch_env = "MAX_BATCH_SIZE";
  int max_wait_ms = 1000;  // a partial batch runs after this long
  double emit = 1.0;       // requests sent downstream per request served
};

struct Ticket {
  Clock::time_point arrived;
  std::promise<void> done;
};

class Server {
 public:
  Server(const Options& o, int batch)
      : options_(o), batch_(batch), registry_(std::make_shared<prometheus::Registry>()) {
    requests_ = &prometheus::BuildCounter()
                     .Name("pipescale_model_requests_total")
                     .Help("Requests served")
                     .Register(*registry_)
                     .Add({});
    emitted_ = &prometheus::BuildCounter()
                    .Name("pipescale_model_emitted_requests_total")
                    .Help("Requests emitted downstream (the multiplicative factor times served)")
                    .Register(*registry_)
                    .Add({});
    latency_ = &prometheus::BuildHistogram()
                    .Name("pipescale_model_request_duration_seconds")
                    .Help("Time from arrival to response: queueing plus the batch")
                    .Register(*registry_)
                    .Add({}, prometheus::Histogram::BucketBoundaries{0.005, 0.01, 0.025, 0.05, 0.1,
                                                                     0.25, 0.5, 1, 2.5, 5, 10});
    batches_ = &prometheus::BuildHistogram()
                    .Name("pipescale_model_batch_size")
                    .Help("Requests per executed batch")
                    .Register(*registry_)
                    .Add({}, prometheus::Histogram::BucketBoundaries{1, 2, 4, 8, 16, 32, 64});
    worker_ = std::thread([this] { Dispatch(); });
  }

  ~Server() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }

  // Blocks the calling (civetweb) thread until the request's batch has run.
  void Infer() {
    auto ticket = std::make_shared<Ticket>();
    ticket->arrived = Clock::now();
    auto done = ticket->done.get_future();
    {
      std::lock_guard lock(mu_);
      queue_.push_back(ticket);
    }
    cv_.notify_all();
    done.wait();
  }

  std::string Metrics() const {
    return prometheus::TextSerializer().Serialize(registry_->Collect());
  }

 private:
  double BatchMs(int n) const { return options_.a * n * n + options_.b * n + options_.c; }

  void Dispatch() {
    std::unique_lock lock(mu_);
    while (true) {
      cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      // Wait for a full batch, or until the oldest request has waited max_wait_ms.
      const auto deadline =
          queue_.front()->arrived + std::chrono::milliseconds(options_.max_wait_ms);
      cv_.wait_until(lock, deadline,
                     [this] { return stop_ || static_cast<int>(queue_.size()) >= batch_; });
      if (stop_) return;
      std::vector<std::shared_ptr<Ticket>> batch;
      while (!queue_.empty() && static_cast<int>(batch.size()) < batch_) {
        batch.push_back(queue_.front());
        queue_.pop_front();
      }
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::microseconds(
          static_cast<long>(BatchMs(static_cast<int>(batch.size())) * 1000)));
      const auto now = Clock::now();
      batches_->Observe(static_cast<double>(batch.size()));
      for (auto& t : batch) {
        latency_->Observe(std::chrono::duration<double>(now - t->arrived).count());
        requests_->Increment();
        emitted_->Increment(options_.emit);
        t->done.set_value();
      }
      lock.lock();
    }
  }

  Options options_;
  int batch_;
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Counter* requests_;
  prometheus::Counter* emitted_;
  prometheus::Histogram* latency_;
  prometheus::Histogram* batches_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Ticket>> queue_;
  bool stop_ = false;
  std::thread worker_;
};

void Reply(mg_connection* conn, int code, const std::string& type, const std::string& body) {
  mg_printf(conn, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n\r\n", code,
            code == 200 ? "OK" : "Error", type.c_str(), body.size());
  mg_write(conn, body.data(), body.size());
}

int OnInfer(mg_connection* conn, void* server) {
  static_cast<Server*>(server)->Infer();
  Reply(conn, 200, "text/plain", "ok\n");
  return 200;
}

int OnMetrics(mg_connection* conn, void* server) {
  Reply(conn, 200, "text/plain; version=0.0.4", static_cast<Server*>(server)->Metrics());
  return 200;
}

int OnHealth(mg_connection* conn, void*) {
  Reply(conn, 200, "text/plain", "ok\n");
  return 200;
}

bool ParseLatency(const std::string& s, Options& o) {
  std::stringstream ss(s);
  char comma1 = 0, comma2 = 0;
  return static_cast<bool>(ss >> o.a >> comma1 >> o.b >> comma2 >> o.c) && comma1 == ',' &&
         comma2 == ',';
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (const char* env = std::getenv("PIPESCALE_LATENCY_MS");
      env != nullptr && !ParseLatency(env, o)) {
    std::cerr << "PIPESCALE_LATENCY_MS must be a,b,c\n";
    return 2;
  }
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const std::string value = argv[i + 1];
    if (flag == "--port") {
      o.port = std::atoi(value.c_str());
    } else if (flag == "--port-file") {
      o.port_file = value;
    } else if (flag == "--latency-ms") {
      if (!ParseLatency(value, o)) {
        std::cerr << "--latency-ms must be a,b,c\n";
        return 2;
      }
    } else if (flag == "--batch-env") {
      o.batch_env = value;
    } else if (flag == "--max-wait-ms") {
      o.max_wait_ms = std::atoi(value.c_str());
    } else if (flag == "--emit") {
      o.emit = std::atof(value.c_str());
    } else {
      std::cerr << "unknown flag " << flag << "\n";
      return 2;
    }
  }
  const char* batch_env = std::getenv(o.batch_env.c_str());
  const int batch = batch_env != nullptr ? std::max(1, std::atoi(batch_env)) : 1;

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  Server server(o, batch);
  const std::string port = "127.0.0.1:" + std::to_string(o.port);
  const std::string threads = std::to_string(4 * batch + 16);  // a thread per waiting request
  const char* options[] = {"listening_ports", port.c_str(), "num_threads", threads.c_str(),
                           nullptr};
  mg_callbacks callbacks{};
  mg_context* ctx = mg_start(&callbacks, nullptr, options);
  if (ctx == nullptr) {
    std::cerr << "cannot listen on " << port << "\n";
    return 1;
  }
  mg_set_request_handler(ctx, "/infer", OnInfer, &server);
  mg_set_request_handler(ctx, "/metrics", OnMetrics, &server);
  mg_set_request_handler(ctx, "/healthz", OnHealth, &server);
  mg_server_port ports[1];
  mg_get_server_ports(ctx, 1, ports);
  if (!o.port_file.empty()) {
    std::ofstream(o.port_file + ".tmp") << ports[0].port << "\n";
    std::rename((o.port_file + ".tmp").c_str(), o.port_file.c_str());
  }
  int signal = 0;
  sigwait(&signals, &signal);
  mg_stop(ctx);
  return 0;
}

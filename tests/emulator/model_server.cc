// pipescale-model-server: an emulated model pod, for tests and the local demo (no model, no
// GPU). It speaks the Open Inference Protocol (KServe v2 REST, as Triton and MLServer do) for
// one model, gathers requests into batches of up to the batch size its environment names
// (MAX_BATCH_SIZE, as the operator sets it), runs each batch for d(b) = a b^2 + b b + c ms,
// b counting rows (a request of shape [4, ...] is 4, as a Kairos query of size 4 is),
// answers not-ready until its start-up delay has passed, and exports Prometheus metrics.
// Like a detector it finds objects: each response names, in the parameter pipescale_next, how
// many requests each next task gets: n objects (the multiplicative factor, rounded at random
// to an integer with the same mean), each sent down every edge with the edge's ratio as its
// chance, as Loki's model of a pipeline has it (on a path the client named, the router takes
// the count of the path's next task; 0 ends the request there). Each response also says how
// long the request waited for its batch (pipescale_queue_ms), from which the router splits a
// task's time into queue and service, and the rows of the batch it was served in
// (pipescale_batch_rows), from which the router learns d(b) per batch size.
//
//   pipescale-model-server [--model NAME] [--host ADDR] [--port 8080] [--port-file F]
//       [--latency-ms a,b,c] [--latency-scale 1] [--startup-seconds S] [--batch-env NAME]
//       [--max-wait-ms 1000] [--queue-timeout-ms 0] [--factor 1.0]
//       [--next TASK=RATIO[,TASK=RATIO...]] [--max-body-bytes 4194304] [--drain-quiet-ms 1000]
// Flags may be written --flag=value. Defaults come from the environment the operator and the
// node agent set: PIPESCALE_TASK (model name), POD_IP (host), PIPESCALE_LATENCY_MS (the
// emulated hardware's profile), PIPESCALE_STARTUP_SECONDS, PIPESCALE_MULTIPLICATIVE_FACTOR and
// PIPESCALE_NEXT (the variant's factor and the task's edges), PIPESCALE_MAX_QUEUE_DELAY_MS and
// PIPESCALE_QUEUE_TIMEOUT_MS (the plan's server queue: --max-wait-ms and --queue-timeout-ms, a
// request not in a batch that long is refused 503, as Triton's queue policy rejects it).
// --latency-scale (or PIPESCALE_LATENCY_SCALE; the flag wins) multiplies d(b): 1.3 runs 30%
// slower than the profile it is given, 0.8 20% faster, as a profile a person typed wrong would
// be against the real hardware. A pod template's container env reaches the server through the
// node agent, so a variant's template may set it. It must be a number above 0 (default 1); the
// server refuses to start otherwise.
// It speaks the protocol's binary data extension (Inference-Header-Content-Length): binary inputs
// are checked against their shapes and the body, and echoed back as binary outputs; JSON inputs
// are answered in binary too when the request asks (binary_data_output, or an output's
// binary_data). A body past --max-body-bytes (default 4 MiB) is refused 413.
// On SIGTERM it drains, as a pod behind a Service should (Triton's wait for in-flight requests
// with the usual preStop grace): it answers not-ready at once, so that no router picks it again,
// and goes on serving what is in flight and what a router had already sent it, stopping once
// nothing is in flight and neither the signal nor a request came for --drain-quiet-ms (at most
// 20 s: within the default grace of 30 s). A second signal stops it at once.
#include <civetweb.h>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <functional>
#include <future>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>

#include "common/flags.h"
#include "routing/binary.h"

namespace {

using pipescale::routing::kBinaryOutputParameter;
using pipescale::routing::kBinarySizeParameter;

using Clock = std::chrono::steady_clock;
using nlohmann::json;

struct Options {
  std::string model = "model";
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string port_file;
  double a = 0, b = 1, c = 5;  // d(b) in ms
  double latency_scale = 1;    // the emulated hardware against its profile: d(b) times this
  double startup_seconds = 0;
  std::string batch_env = "MAX_BATCH_SIZE";
  int max_wait_ms = 1000;    // a partial batch runs after this long
  int queue_timeout_ms = 0;  // a request not in a batch by then is refused 503 (0: never)
  int max_queue = 0;         // requests waiting or running at once; set from the thread count
  double factor = 1.0;       // objects found per request served, on average
  size_t max_body_bytes = 4 << 20;  // a request past this is refused 413
  int drain_quiet_ms = 1000;        // on SIGTERM, stop once no request came for this long
  std::vector<std::pair<std::string, double>> next;  // the task's edges: (task, ratio)
};

struct Ticket {
  int rows = 1;                        // the leading dimension of its first input
  Clock::time_point arrived, batched;  // into the queue; out of it, into a batch
  int batch_rows = 0;                  // the rows of the batch it was served in
  bool expired = false;                // refused: it waited past the queue timeout
  std::promise<void> done;
};

// How one request was served: the milliseconds it waited for its batch, and that batch's rows.
struct Served {
  double queued_ms = 0;
  int batch_rows = 0;
  bool expired = false;
};

// The batching queue and the metrics; thread-safe.
class Server {
 public:
  Server(const Options& o, int batch)
      : options_(o),
        batch_(batch),
        started_(Clock::now()),
        registry_(std::make_shared<prometheus::Registry>()) {
    const std::map<std::string, std::string> labels = {{"model", o.model}};
    requests_ = &prometheus::BuildCounter()
                     .Name("pipescale_model_requests_total")
                     .Help("Inference requests served")
                     .Register(*registry_)
                     .Add(labels);
    rows_ = &prometheus::BuildCounter()
                 .Name("pipescale_model_rows_total")
                 .Help("Rows served: each request's leading dimension (a query's size)")
                 .Register(*registry_)
                 .Add(labels);
    failures_ = &prometheus::BuildCounter()
                     .Name("pipescale_model_request_failures_total")
                     .Help("Inference requests refused: malformed, unknown model or not ready")
                     .Register(*registry_)
                     .Add(labels);
    emitted_ = &prometheus::BuildCounter()
                    .Name("pipescale_model_emitted_requests_total")
                    .Help("Requests emitted downstream (the multiplicative factor times served)")
                    .Register(*registry_)
                    .Add(labels);
    latency_ = &prometheus::BuildHistogram()
                    .Name("pipescale_model_request_duration_seconds")
                    .Help("Time from arrival to response: queueing plus the batch")
                    .Register(*registry_)
                    .Add(labels, prometheus::Histogram::BucketBoundaries{
                                     0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10});
    // The HPA's metric, as CPU usage is for a CPU-bound server: the seconds spent running
    // batches, and whether the pod is Ready (its busy share is per Ready pod).
    busy_ = &prometheus::BuildCounter()
                 .Name("pipescale_model_busy_seconds_total")
                 .Help("Seconds spent running batches (the utilisation HPA reads)")
                 .Register(*registry_)
                 .Add(labels);
    ready_ = &prometheus::BuildGauge()
                  .Name("pipescale_model_ready")
                  .Help("1 while the model answers ready (started, not draining)")
                  .Register(*registry_)
                  .Add(labels);
    batches_ = &prometheus::BuildHistogram()
                    .Name("pipescale_model_batch_size")
                    .Help("Requests per executed batch")
                    .Register(*registry_)
                    .Add(labels, prometheus::Histogram::BucketBoundaries{1, 2, 4, 8, 16, 32, 64});
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

  const Options& options() const { return options_; }
  int batch() const { return batch_; }
  // Serving: its start-up has passed (draining or not).
  bool Started() const {
    return Clock::now() - started_ >= std::chrono::duration<double>(options_.startup_seconds);
  }
  // What its readiness probe says: started and not draining.
  bool Ready() const { return Started() && !draining_; }
  // From now on, not ready; the quiet time counts from now at the earliest: a router may send a
  // request before it learns of the deletion.
  void Drain() {
    draining_ = true;
    Arrived();
  }
  // While draining: nothing in flight and no request for `quiet`.
  bool Drained(std::chrono::milliseconds quiet) const {
    const Clock::time_point last{Clock::duration(last_arrival_.load())};
    return in_flight_.load() == 0 && Clock::now() - last >= quiet;
  }
  void Arrived() { last_arrival_ = Clock::now().time_since_epoch().count(); }
  void CountFailure() { failures_->Increment(); }
  // Takes a place in the queue; false when it is full.
  bool Admit() {
    if (in_flight_.fetch_add(1) < options_.max_queue) return true;
    in_flight_.fetch_sub(1);
    return false;
  }
  void Release() { in_flight_.fetch_sub(1); }

  // Blocks the calling (civetweb) thread until the request's batch has run.
  // Serves one request in a batch.
  Served Infer(int rows) {
    auto ticket = std::make_shared<Ticket>();
    ticket->rows = std::max(1, rows);
    ticket->arrived = Clock::now();
    auto done = ticket->done.get_future();
    {
      std::lock_guard lock(mu_);
      queue_.push_back(ticket);
    }
    cv_.notify_all();
    done.wait();
    if (ticket->expired) return {.expired = true};
    return {std::chrono::duration<double, std::milli>(ticket->batched - ticket->arrived).count(),
            ticket->batch_rows};
  }

  // Where this response's output goes: {"pipescale_next": {task: count}}; counted as emitted.
  json Next() {
    std::lock_guard lock(rng_mu_);
    std::uniform_real_distribution<double> u(0, 1);
    const double whole = std::floor(options_.factor);
    const int found = static_cast<int>(whole) + (u(rng_) < options_.factor - whole ? 1 : 0);
    emitted_->Increment(found);
    json counts = json::object();
    for (const auto& [task, ratio] : options_.next) {
      int taken = 0;
      for (int i = 0; i < found; ++i) taken += u(rng_) < ratio ? 1 : 0;
      counts[task] = taken;
    }
    return counts;
  }

  std::string Metrics() const {
    ready_->Set(Ready() ? 1 : 0);
    return prometheus::TextSerializer().Serialize(registry_->Collect());
  }

 private:
  double BatchMs(int n) const {
    return options_.latency_scale * (options_.a * n * n + options_.b * n + options_.c);
  }

  // Refuses the requests at the head of the queue that have waited past the queue timeout (a
  // Triton queue policy's REJECT): they could no longer be answered in time. Whether any was.
  bool Expire() {
    if (options_.queue_timeout_ms <= 0) return false;
    const auto due = Clock::now() - std::chrono::milliseconds(options_.queue_timeout_ms);
    bool any = false;
    while (!queue_.empty() && queue_.front()->arrived < due) {
      queue_.front()->expired = true;
      queue_.front()->done.set_value();
      queue_.pop_front();
      any = true;
    }
    return any;
  }

  void Dispatch() {
    std::unique_lock lock(mu_);
    while (true) {
      cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      if (Expire()) continue;
      // Wait for a full batch, or until the oldest request has waited max_wait_ms.
      const auto deadline =
          queue_.front()->arrived + std::chrono::milliseconds(options_.max_wait_ms);
      cv_.wait_until(lock, deadline,
                     [this] { return stop_ || static_cast<int>(queue_.size()) >= batch_; });
      if (stop_) return;
      if (Expire()) continue;
      std::vector<std::shared_ptr<Ticket>> batch;
      const auto batched = Clock::now();
      int rows = 0;
      while (!queue_.empty() && static_cast<int>(batch.size()) < batch_) {
        batch.push_back(queue_.front());
        batch.back()->batched = batched;
        rows += batch.back()->rows;
        queue_.pop_front();
      }
      lock.unlock();
      std::this_thread::sleep_for(
          std::chrono::microseconds(static_cast<long>(BatchMs(rows) * 1000)));
      const auto now = Clock::now();
      busy_->Increment(std::chrono::duration<double>(now - batched).count());
      batches_->Observe(static_cast<double>(batch.size()));
      for (auto& t : batch) {
        t->batch_rows = rows;
        latency_->Observe(std::chrono::duration<double>(now - t->arrived).count());
        requests_->Increment();
        rows_->Increment(t->rows);
        t->done.set_value();
      }
      lock.lock();
    }
  }

  Options options_;
  int batch_;
  Clock::time_point started_;
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Counter* requests_;
  prometheus::Counter* rows_;
  prometheus::Counter* failures_;
  prometheus::Counter* emitted_;
  prometheus::Counter* busy_;
  prometheus::Gauge* ready_;
  prometheus::Histogram* latency_;
  prometheus::Histogram* batches_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Ticket>> queue_;
  bool stop_ = false;
  std::atomic<int> in_flight_{0};
  std::atomic<bool> draining_{false};
  std::atomic<Clock::rep> last_arrival_{0};
  std::mutex rng_mu_;
  std::mt19937_64 rng_{std::random_device{}()};
  std::thread worker_;
};

const char* Reason(int code) {
  switch (code) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 413:
      return "Payload Too Large";
    default:
      return "Service Unavailable";
  }
}

int Reply(mg_connection* conn, int code, const std::string& type, const std::string& body) {
  mg_printf(conn, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n\r\n", code,
            Reason(code), type.c_str(), body.size());
  mg_write(conn, body.data(), body.size());
  return code;
}

int ReplyJson(mg_connection* conn, int code, const json& body) {
  return Reply(conn, code, "application/json", body.dump());
}

// The protocol's error shape: {"error": "<message>"}.
int ReplyError(mg_connection* conn, Server& server, int code, const std::string& message) {
  server.CountFailure();
  return ReplyJson(conn, code, {{"error", message}});
}

constexpr const char* kDatatypes[] = {"BOOL", "UINT8", "UINT16", "UINT32", "UINT64",
                                      "INT8", "INT16", "INT32",  "INT64",  "FP16",
                                      "FP32", "FP64",  "BYTES",  "BF16"};

// Elements in `data`, flattening nested arrays as the protocol allows; -1 when not an array.
long CountElements(const json& data) {
  if (!data.is_array()) return -1;
  long n = 0;
  for (const json& e : data) n += e.is_array() ? CountElements(e) : 1;
  return n;
}

// The bytes an input takes in the request's binary part (parameters.binary_data_size), -1 when
// its data is JSON, -2 when the parameter is not a non-negative integer.
long BinarySize(const json& input) {
  const json& parameters = input.value("parameters", json::object());
  if (!parameters.is_object() || !parameters.contains(kBinarySizeParameter)) return -1;
  const json& size = parameters[kBinarySizeParameter];
  return size.is_number_integer() && size.get<long>() >= 0 ? size.get<long>() : -2;
}

// What is wrong with one input tensor, or nullopt.
std::optional<std::string> CheckInput(const json& input, size_t i) {
  const std::string where = "inputs[" + std::to_string(i) + "]";
  if (!input.is_object()) return where + " must be an object";
  if (!input.contains("name") || !input["name"].is_string()) return where + ".name is required";
  const json& shape = input.value("shape", json());
  if (!shape.is_array()) return where + ".shape must be an array of dimensions";
  long elements = 1;
  for (const json& d : shape) {
    if (!d.is_number_integer() || d.get<long>() < 0 || d.get<long>() > (1L << 31)) {
      return where + ".shape must hold non-negative integers";
    }
    elements = std::min(elements * std::max(d.get<long>(), 1L), 1L << 40);
    if (d.get<long>() == 0) elements = 0;
  }
  const std::string type = input.value("datatype", json()).is_string() ? input["datatype"] : "";
  if (std::find(std::begin(kDatatypes), std::end(kDatatypes), type) == std::end(kDatatypes)) {
    return where + ".datatype '" + type + "' is not a tensor data type of the protocol";
  }
  if (const long bytes = BinarySize(input); bytes != -1) {
    if (bytes < 0) return where + ".parameters.binary_data_size must be a non-negative integer";
    if (input.contains("data")) return where + ".data must be absent for binary data";
    const long each = pipescale::routing::ElementBytes(type);
    if (each > 0 ? bytes != elements * each : bytes < 4 * elements) {
      return where + ".parameters.binary_data_size is " + std::to_string(bytes) +
             " bytes, which shape " + shape.dump() + " of " + type + " does not take";
    }
    return std::nullopt;
  }
  const long got = CountElements(input.value("data", json()));
  if (got < 0) return where + ".data must be an array";
  if (got != elements) {
    return where + ".data has " + std::to_string(got) + " elements, shape " + shape.dump() +
           " needs " + std::to_string(elements);
  }
  return std::nullopt;
}

// `binary`: the request's binary part, which its inputs' sizes must add up to.
std::optional<std::string> CheckRequest(const json& request, std::string_view binary) {
  if (!request.is_object()) return "the request body must be a JSON object";
  const json& inputs = request.value("inputs", json());
  if (!inputs.is_array() || inputs.empty()) return "inputs must be a non-empty array";
  size_t total = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (auto error = CheckInput(inputs[i], i)) return error;
    total += static_cast<size_t>(std::max(0L, BinarySize(inputs[i])));
  }
  if (total != binary.size()) {
    return "the inputs' binary_data_size add up to " + std::to_string(total) +
           " bytes, the binary part holds " + std::to_string(binary.size());
  }
  if (request.contains("id") && !request["id"].is_string()) return "id must be a string";
  return std::nullopt;
}

// One element of a JSON tensor's data as binary data: little-endian, the datatype's width.
template <typename T>
void PackAs(const json& element, std::string& out) {
  const T value = element.is_boolean() ? static_cast<T>(element.get<bool>()) : element.get<T>();
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}

// A JSON tensor's data as binary data, flattened in row-major order; nullopt for a datatype this
// emulator does not pack (FP16 and BF16 have no C++ type here: they stay JSON).
std::optional<std::string> Pack(const json& data, const std::string& type) {
  std::string out;
  const std::function<bool(const json&)> each = [&](const json& e) -> bool {
    if (e.is_array()) return std::all_of(e.begin(), e.end(), each);
    if (type == "BYTES") {
      const std::string text = e.is_string() ? e.get<std::string>() : e.dump();
      PackAs<std::uint32_t>(json(text.size()), out);
      out += text;
    } else if (type == "FP32") {
      PackAs<float>(e, out);
    } else if (type == "FP64") {
      PackAs<double>(e, out);
    } else if (type == "INT64" || type == "UINT64") {
      PackAs<std::int64_t>(e, out);
    } else if (type == "INT32" || type == "UINT32") {
      PackAs<std::int32_t>(e, out);
    } else if (type == "INT16" || type == "UINT16") {
      PackAs<std::int16_t>(e, out);
    } else if (type == "INT8" || type == "UINT8" || type == "BOOL") {
      PackAs<std::int8_t>(e, out);
    } else {
      return false;
    }
    return true;
  };
  if (!each(data)) return std::nullopt;
  return out;
}

std::optional<std::string> ReadBody(mg_connection* conn, size_t max_bytes, std::string& body) {
  const mg_request_info* info = mg_get_request_info(conn);
  if (info->content_length > static_cast<long long>(max_bytes)) return "too large";
  char buffer[16384];
  for (int n; (n = mg_read(conn, buffer, sizeof buffer)) > 0;) {
    body.append(buffer, n);
    if (body.size() > max_bytes) return "too large";
  }
  return std::nullopt;
}

// The request's binary part (the binary data extension: past Inference-Header-Content-Length
// bytes of JSON), or nullopt when that header is not a length within the body.
std::optional<std::pair<std::string_view, std::string_view>> SplitBody(mg_connection* conn,
                                                                       const std::string& body) {
  const char* header = mg_get_header(conn, pipescale::routing::kHeaderLengthField.data());
  if (header == nullptr) return std::make_pair(std::string_view(body), std::string_view());
  char* end = nullptr;
  const long long json_bytes = std::strtoll(header, &end, 10);
  if (end == header || *end != '\0' || json_bytes < 0 ||
      static_cast<size_t>(json_bytes) > body.size()) {
    return std::nullopt;
  }
  const std::string_view all = body;
  return std::make_pair(all.substr(0, json_bytes), all.substr(json_bytes));
}

// The request asked for binary outputs: the request parameter, or any requested output's.
bool WantsBinary(const json& request) {
  const json& parameters = request.value("parameters", json::object());
  if (parameters.is_object() && parameters.value(kBinaryOutputParameter, json()) == true) {
    return true;
  }
  const json& outputs = request.value("outputs", json::array());
  return outputs.is_array() && std::any_of(outputs.begin(), outputs.end(), [](const json& o) {
           return o.is_object() && o.value("parameters", json::object()).is_object() &&
                  o["parameters"].value("binary_data", json()) == true;
         });
}

// The identity's outputs, one per input: binary where the input was (its bytes passed back) or
// where binary outputs were asked for; appends the binary part to `binary`.
json Outputs(const json& inputs, std::string_view request_binary, bool wants_binary,
             std::string& binary) {
  json outputs = json::array();
  size_t offset = 0;
  for (const json& input : inputs) {
    json output = {{"name", "output_" + input["name"].get<std::string>()},
                   {"datatype", input["datatype"]},
                   {"shape", input["shape"]}};
    std::optional<std::string> packed;
    if (const long bytes = BinarySize(input); bytes >= 0) {
      packed = std::string(request_binary.substr(offset, bytes));
      offset += bytes;
    } else if (wants_binary) {
      packed = Pack(input["data"], input["datatype"]);
    }
    if (packed) {
      output["parameters"] = {{kBinarySizeParameter, packed->size()}};
      binary += *packed;
    } else {
      output["data"] = input["data"];
    }
    outputs.push_back(std::move(output));
  }
  return outputs;
}

// POST /v2/models/{model}/infer: an identity model. The response carries one output per
// input, with its shape, type and data, in JSON or in the binary data extension.
int OnInfer(mg_connection* conn, Server& server) {
  server.Arrived();
  std::string body;
  const size_t limit = server.options().max_body_bytes;
  if (ReadBody(conn, limit, body)) {
    return ReplyError(conn, server, 413,
                      "request body exceeds " + std::to_string(limit) + " bytes");
  }
  const auto split = SplitBody(conn, body);
  if (!split) {
    return ReplyError(
        conn, server, 400,
        std::string(pipescale::routing::kHeaderLengthField) + " must be a length within the body");
  }
  const json request = json::parse(split->first, nullptr, false);
  if (request.is_discarded()) return ReplyError(conn, server, 400, "request body is not JSON");
  if (auto error = CheckRequest(request, split->second)) {
    return ReplyError(conn, server, 400, *error);
  }
  if (!server.Started()) {
    return ReplyError(conn, server, 503, "model '" + server.options().model + "' is not ready");
  }
  // A bounded queue, as a real server has (Triton's max_queue_size): past it the request is
  // refused at once, and the threads it would hold stay free for health probes and metrics.
  if (!server.Admit()) {
    return ReplyError(conn, server, 503,
                      "model '" + server.options().model + "' is overloaded: its queue is full");
  }
  const json& shape = request["inputs"][0]["shape"];
  // The data's size matches the shape and the body is within its limit, which bounds the rows.
  const Served served =
      server.Infer(shape.empty() ? 1 : static_cast<int>(std::min(shape[0].get<long>(), 1L << 20)));
  server.Release();
  if (served.expired) {
    return ReplyError(conn, server, 503,
                      "model '" + server.options().model + "' gave up on the request after " +
                          std::to_string(server.options().queue_timeout_ms) + " ms in its queue");
  }
  std::string binary;
  json response = {
      {"model_name", server.options().model},
      {"model_version", "1"},
      {"parameters",
       {{"batch_size", server.batch()},
        {"pipescale_queue_ms", served.queued_ms},
        {"pipescale_batch_rows", served.batch_rows}}},
      {"outputs", Outputs(request["inputs"], split->second, WantsBinary(request), binary)}};
  // A last task has no edges; what it would emit still counts, as its factor is measured.
  json next = server.Next();
  if (!next.empty()) response["parameters"]["pipescale_next"] = std::move(next);
  if (request.contains("id")) response["id"] = request["id"];
  if (binary.empty()) return ReplyJson(conn, 200, response);
  const std::string text = response.dump();
  mg_printf(conn,
            "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: "
            "%zu\r\n%s: %zu\r\n\r\n",
            text.size() + binary.size(), pipescale::routing::kHeaderLengthField.data(),
            text.size());
  mg_write(conn, text.data(), text.size());
  mg_write(conn, binary.data(), binary.size());
  return 200;
}

// Everything under /v2: health, server and model metadata, readiness and inference.
int OnV2(mg_connection* conn, void* data) {
  Server& server = *static_cast<Server*>(data);
  const mg_request_info* info = mg_get_request_info(conn);
  const std::string uri = info->local_uri != nullptr ? info->local_uri : "";
  const std::string method = info->request_method;
  const std::string model_prefix = "/v2/models/" + server.options().model;
  if (method == "GET" && uri == "/v2/health/live") return ReplyJson(conn, 200, {{"live", true}});
  if (method == "GET" && (uri == "/v2/health/ready" || uri == model_prefix + "/ready")) {
    const bool ready = server.Ready();
    return ReplyJson(conn, ready ? 200 : 400, {{"ready", ready}});
  }
  if (method == "GET" && uri == "/v2") {
    return ReplyJson(conn, 200,
                     {{"name", "pipescale-model-server"},
                      {"version", "1"},
                      {"extensions", json::array({"binary_tensor_data"})}});
  }
  if (method == "GET" && uri == model_prefix) {
    const json tensor = {{"name", "input"}, {"datatype", "FP32"}, {"shape", {-1, -1}}};
    return ReplyJson(
        conn, 200,
        {{"name", server.options().model},
         {"versions", {"1"}},
         {"platform", "pipescale-emulated"},
         {"inputs", {tensor}},
         {"outputs", {{{"name", "output_input"}, {"datatype", "FP32"}, {"shape", {-1, -1}}}}}});
  }
  if (uri == model_prefix + "/infer" || uri == model_prefix + "/versions/1/infer") {
    if (method != "POST") return ReplyError(conn, server, 405, "infer takes POST");
    return OnInfer(conn, server);
  }
  if (uri.rfind("/v2/models/", 0) == 0) {
    const std::string name = uri.substr(11, uri.find('/', 11) - 11);
    if (name != server.options().model) {
      return ReplyError(conn, server, 404, "model '" + name + "' is not served here");
    }
  }
  return ReplyError(conn, server, 404, "no such endpoint: " + method + " " + uri);
}

int OnMetrics(mg_connection* conn, void* server) {
  return Reply(conn, 200, "text/plain; version=0.0.4", static_cast<Server*>(server)->Metrics());
}

// What a ratio of --next or a factor may be: as spec.tasks[].next[].ratio and
// multiplicativeFactor allow.
constexpr double kMaxRatio = 100;

// "classify=0.8,recognize=0.5"
bool ParseNext(const std::string& s, Options& o) {
  o.next.clear();
  std::stringstream ss(s);
  for (std::string edge; std::getline(ss, edge, ',');) {
    const auto eq = edge.find('=');
    if (eq == std::string::npos || eq == 0) return false;
    auto ratio = pipescale::ParseNumber("--next", edge.substr(eq + 1), 0, kMaxRatio);
    if (!ratio) return false;
    o.next.emplace_back(edge.substr(0, eq), *ratio);
  }
  return true;
}

// A numeric flag (or variable) into `value`; false after saying what is wrong.
template <typename T>
bool Read(std::string_view name, const std::string& text, T min, T max, T& value) {
  const std::string problem = pipescale::ParseFlag(name, text, min, max, value);
  if (!problem.empty()) std::cerr << problem << "\n";
  return problem.empty();
}

bool ParseLatency(const std::string& s, Options& o) {
  std::stringstream ss(s);
  char comma1 = 0, comma2 = 0;
  return static_cast<bool>(ss >> o.a >> comma1 >> o.b >> comma2 >> o.c) && comma1 == ',' &&
         comma2 == ',';
}

// The latency scale: a finite number above 0 and nothing else ("1.3", "2"), as a typo must not
// run a pod at another speed unnoticed: "1,3" or "fast" is refused, not read as 1 or 0.
bool ParseScale(const std::string& s, Options& o) {
  char* end = nullptr;
  const double scale = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(scale) || scale <= 0) return false;
  o.latency_scale = scale;
  return true;
}

std::string Env(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

// Flags as `--flag value` or `--flag=value`; nullopt (after saying why) on a bad one.
std::optional<Options> ParseOptions(int argc, char** argv) {
  Options o;
  o.model = Env("PIPESCALE_TASK", o.model);
  o.host = Env("POD_IP", o.host);
  if (!Read("PIPESCALE_STARTUP_SECONDS", Env("PIPESCALE_STARTUP_SECONDS", "0"), 0.0, 86400.0,
            o.startup_seconds)) {
    return std::nullopt;
  }
  if (!ParseLatency(Env("PIPESCALE_LATENCY_MS", "0,1,5"), o)) {
    std::cerr << "PIPESCALE_LATENCY_MS must be a,b,c\n";
    return std::nullopt;
  }
  if (const std::string scale = Env("PIPESCALE_LATENCY_SCALE", "1"); !ParseScale(scale, o)) {
    std::cerr << "PIPESCALE_LATENCY_SCALE must be a number above 0 (d(b) times it), got '" << scale
              << "'\n";
    return std::nullopt;
  }
  if (!Read("PIPESCALE_MULTIPLICATIVE_FACTOR", Env("PIPESCALE_MULTIPLICATIVE_FACTOR", "1"), 0.0,
            kMaxRatio, o.factor)) {
    return std::nullopt;
  }
  // The plan's server queue, as the operator sets it (api/deployment_view.h); the flags win.
  if (!Read("PIPESCALE_MAX_QUEUE_DELAY_MS", Env("PIPESCALE_MAX_QUEUE_DELAY_MS", "1000"), 0, 3600000,
            o.max_wait_ms) ||
      !Read("PIPESCALE_QUEUE_TIMEOUT_MS", Env("PIPESCALE_QUEUE_TIMEOUT_MS", "0"), 0, 3600000,
            o.queue_timeout_ms)) {
    return std::nullopt;
  }
  if (!ParseNext(Env("PIPESCALE_NEXT", ""), o)) {
    std::cerr << "PIPESCALE_NEXT must be TASK=RATIO[,TASK=RATIO...]\n";
    return std::nullopt;
  }
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i], value;
    if (const auto eq = flag.find('='); eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag.resize(eq);
    } else if (i + 1 < argc) {
      value = argv[++i];
    }
    if (flag == "--model") {
      o.model = value;
    } else if (flag == "--host") {
      o.host = value;
    } else if (flag == "--port") {
      if (!Read(flag, value, 0, 65535, o.port)) return std::nullopt;
    } else if (flag == "--port-file") {
      o.port_file = value;
    } else if (flag == "--latency-ms" && !ParseLatency(value, o)) {
      std::cerr << "--latency-ms must be a,b,c\n";
      return std::nullopt;
    } else if (flag == "--latency-scale" && !ParseScale(value, o)) {
      std::cerr << "--latency-scale must be a number above 0 (d(b) times it), got '" << value
                << "'\n";
      return std::nullopt;
    } else if (flag == "--startup-seconds") {
      if (!Read(flag, value, 0.0, 86400.0, o.startup_seconds)) return std::nullopt;
    } else if (flag == "--batch-env") {
      o.batch_env = value;
    } else if (flag == "--max-wait-ms") {
      if (!Read(flag, value, 0, 3600000, o.max_wait_ms)) return std::nullopt;
    } else if (flag == "--queue-timeout-ms") {
      if (!Read(flag, value, 0, 3600000, o.queue_timeout_ms)) return std::nullopt;
    } else if (flag == "--max-body-bytes") {
      if (!Read(flag, value, size_t{1024}, size_t{1} << 30, o.max_body_bytes)) return std::nullopt;
    } else if (flag == "--drain-quiet-ms") {
      if (!Read(flag, value, 0, 20000, o.drain_quiet_ms)) return std::nullopt;
    } else if (flag == "--factor") {
      if (!Read(flag, value, 0.0, kMaxRatio, o.factor)) return std::nullopt;
    } else if (flag == "--next" && !ParseNext(value, o)) {
      std::cerr << "--next must be TASK=RATIO[,TASK=RATIO...]\n";
      return std::nullopt;
    } else if (flag != "--latency-ms" && flag != "--latency-scale" && flag != "--next") {
      std::cerr << "unknown flag " << flag << "\n";
      return std::nullopt;
    }
  }
  return o;
}

// After SIGTERM: serves on until drained (at most 20 s) or told again to stop.
void Drain(Server& server, const sigset_t& signals, std::chrono::milliseconds quiet) {
  server.Drain();
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  const timespec poll{.tv_sec = 0, .tv_nsec = 20'000'000};
  while (!server.Drained(quiet) && Clock::now() < deadline) {
    if (sigtimedwait(&signals, nullptr, &poll) > 0) return;
  }
}

}  // namespace

int main(int argc, char** argv) {
  const auto o = ParseOptions(argc, argv);
  if (!o) return 2;
  // The batch size the operator sets (batchSize.max allows at most 4096).
  int batch = 1;
  if (const char* batch_env = std::getenv(o->batch_env.c_str());
      batch_env != nullptr && *batch_env != '\0' &&
      !Read(o->batch_env, batch_env, 1, 4096, batch)) {
    return 2;
  }

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  // A thread per waiting request: civetweb serves a keep-alive client with one thread for as
  // long as it stays connected. 16 threads stay free of inference for probes and scrapes.
  const int thread_count = 4 * batch + 64;
  Options options = *o;
  options.max_queue = thread_count - 16;
  Server server(options, batch);
  const std::string port = o->host + ":" + std::to_string(o->port);
  const std::string threads = std::to_string(thread_count);
  const char* mg_options[] = {"listening_ports", port.c_str(), "num_threads", threads.c_str(),
                              nullptr};
  mg_callbacks callbacks{};
  mg_context* ctx = mg_start(&callbacks, nullptr, mg_options);
  if (ctx == nullptr) {
    std::cerr << "cannot listen on " << port << "\n";
    return 1;
  }
  mg_set_request_handler(ctx, "/v2", OnV2, &server);
  mg_set_request_handler(ctx, "/metrics", OnMetrics, &server);
  mg_server_port ports[1];
  mg_get_server_ports(ctx, 1, ports);
  std::cerr << "serving model " << o->model << " on " << o->host << ":" << ports[0].port
            << " with batch size " << batch << " at " << o->latency_scale
            << " times its latency profile\n";
  if (!o->port_file.empty()) {
    std::ofstream(o->port_file + ".tmp") << ports[0].port << "\n";
    std::rename((o->port_file + ".tmp").c_str(), o->port_file.c_str());
  }
  int signal = 0;
  sigwait(&signals, &signal);
  Drain(server, signals, std::chrono::milliseconds(o->drain_quiet_ms));
  mg_stop(ctx);
  return 0;
}

// Batches formed in the router for one task's variant (batchSize.formedBy: router), shared by
// every router thread: a request waits with those whose inputs it can be stacked with until the
// batch is full or its first request has waited its budget (routing/batching.h); the request
// that finds the batch ready sends it for all of them and hands each its rows of the answer.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "asio.h"
#include "common/result.h"
#include "routing/batching.h"
#include "routing/body.h"

namespace pipescale::router {

// A task's answer to one call: the body of a 200 (binary data after its JSON when it has a
// header length), the variant that served it, and how long the call took.
struct CallReply {
  std::string body;
  std::string header_length;  // the binary extension's Inference-Header-Content-Length, or ""
  std::string variant;
  int variant_index = -1;  // the same, as the graph's index (-1 when not known)
  double seconds = 0;
};

class Batcher {
 public:
  using Clock = std::chrono::steady_clock;
  // Makes the call for a batch: its stacked request and its rows.
  using Send = std::function<asio::awaitable<Result<CallReply>>(const routing::Body&, int rows)>;

  Batcher(int batch_size, double wait_ms) : batch_size_(batch_size), wait_ms_(wait_ms) {}
  // The plan's new batch size and wait; the batches formed from here on follow them.
  void Configure(int batch_size, double wait_ms);

  // This request's answer, with only its rows. It waits for its batch (until `deadline` at
  // most, then kExpired, unless its batch is already on its way); when the batch is ready and
  // this request is the one to notice, `send` sends it for all. A request whose inputs cannot
  // be stacked is sent alone.
  asio::awaitable<Result<CallReply>> Submit(const routing::Body& body, Clock::time_point deadline,
                                            const Send& send);

  std::pair<int, double> config() const;

 private:
  struct Waiter {
    explicit Waiter(const asio::any_io_executor& executor) : wake(executor) {}
    asio::steady_timer wake;  // on the waiting coroutine's own loop
    const routing::Body* body = nullptr;
    int rows = 1;
    bool taken = false;                      // in a batch on its way
    std::optional<Result<CallReply>> reply;  // set under the lock when the batch is answered
  };
  using Batch = std::vector<std::shared_ptr<Waiter>>;
  double Now() const;
  Batch Take(routing::BatchFormer& former);  // under mu_
  // Sends `batch` (taken out under the lock) and hands out the answers.
  asio::awaitable<void> Lead(const Batch& batch, const Send& send);

  mutable std::mutex mu_;
  int batch_size_;
  double wait_ms_;
  std::map<std::string, routing::BatchFormer> formers_;  // by the inputs' signature
  std::map<std::uint64_t, std::shared_ptr<Waiter>> waiters_;
  std::uint64_t next_ = 0;
  const Clock::time_point epoch_ = Clock::now();
};

}  // namespace pipescale::router

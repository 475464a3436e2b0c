// Runs reconciles from a work queue on N workers with per-key exponential backoff after
// errors, and reports controller-runtime's metric names (controller_runtime_reconcile_total,
// controller_runtime_reconcile_time_seconds, workqueue_depth, ...).
#pragma once

#include <prometheus/registry.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/result.h"
#include "controller/work_queue.h"

namespace pipescale::controller {

// What to do after an error: retry after `delay`, or wait for the object to change.
struct Retry {
  std::optional<std::chrono::milliseconds> delay;
};

// The error policy, pure: a conflict is retried almost at once, an invalid object waits for
// its next change, anything else backs off exponentially from 1 s to 5 min.
Retry OnError(const Error& error, int failures);

// When a key that asked to come back `after` is reconciled again, `now` being any steady
// clock's reading: at the next moment of its own phase of that period (from a hash of the key),
// never later than `after`. Keys that were all reconciled at once (an operator that just
// started) come back spread evenly over the period instead of all at once, and a key that
// only comes back by its period keeps it exactly. Pure.
std::chrono::milliseconds Spread(const std::string& key, std::chrono::milliseconds after,
                                 std::chrono::milliseconds now);

class Controller {
 public:
  // When to reconcile the key again (nullopt: only when it changes).
  using Outcome = Result<std::optional<std::chrono::milliseconds>>;
  // Expected failures are Errors. An exception is a bug: it is logged, counted in
  // pipescale_reconcile_panics_total and retried with backoff, and the worker carries on.
  using ReconcileFn = std::function<Outcome(const std::string& key)>;

  Controller(std::string name, ReconcileFn reconcile, prometheus::Registry& registry,
             int workers = 1);
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;
  ~Controller();

  void Enqueue(const std::string& key) { queue_.Add(key); }
  void Start();
  void Stop();  // finishes in-flight reconciles, then returns

  const WorkQueue& queue() const { return queue_; }

 private:
  void Work();
  Outcome ReconcileGuarded(const std::string& key);
  Outcome Panicked(const std::string& key, const std::string& what);

  std::string name_;
  ReconcileFn reconcile_;
  int workers_;
  WorkQueue queue_;
  std::mutex mu_;
  std::map<std::string, int> failures_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stopping_{false};

  prometheus::Family<prometheus::Counter>* total_;
  prometheus::Counter* success_;
  prometheus::Counter* error_;
  prometheus::Counter* requeue_after_;
  prometheus::Counter* errors_;
  prometheus::Histogram* time_;
  prometheus::Gauge* depth_;
  prometheus::Counter* retries_;
  prometheus::Counter* panics_;
};

}  // namespace pipescale::controller

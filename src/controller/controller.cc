#include "controller/controller.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>

#include <algorithm>
#include <exception>

#include "common/log.h"

namespace pipescale::controller {

using namespace std::chrono_literals;

std::chrono::milliseconds Spread(const std::string& key, std::chrono::milliseconds after,
                                 std::chrono::milliseconds now) {
  const long period = after.count();
  if (period <= 1) return after;
  uint64_t hash = 14695981039346656037ULL;  // FNV-1a: the same phase on every machine
  for (const unsigned char c : key) hash = (hash ^ c) * 1099511628211ULL;
  const long phase = static_cast<long>(hash % static_cast<uint64_t>(period));
  // The next moment t > now with t = phase (mod period).
  const long into = ((now.count() - phase) % period + period) % period;
  return std::chrono::milliseconds(period - into);
}

Retry OnError(const Error& error, int failures) {
  switch (error.kind) {
    case ErrorKind::kConflict:
      return {100ms};
    case ErrorKind::kInvalid:
      return {std::nullopt};
    default:
      break;
  }
  const auto base = std::chrono::milliseconds(1000);
  const auto cap = std::chrono::milliseconds(300'000);
  const int shift = std::clamp(failures - 1, 0, 20);
  return {std::min(cap, base * (1L << shift))};
}

Controller::Controller(std::string name, ReconcileFn reconcile, prometheus::Registry& registry,
                       int workers)
    : name_(std::move(name)), reconcile_(std::move(reconcile)), workers_(workers) {
  total_ = &prometheus::BuildCounter()
                .Name("controller_runtime_reconcile_total")
                .Help("Total number of reconciliations per controller")
                .Register(registry);
  success_ = &total_->Add({{"controller", name_}, {"result", "success"}});
  error_ = &total_->Add({{"controller", name_}, {"result", "error"}});
  requeue_after_ = &total_->Add({{"controller", name_}, {"result", "requeue_after"}});
  errors_ = &prometheus::BuildCounter()
                 .Name("controller_runtime_reconcile_errors_total")
                 .Help("Total number of reconciliation errors per controller")
                 .Register(registry)
                 .Add({{"controller", name_}});
  time_ = &prometheus::BuildHistogram()
               .Name("controller_runtime_reconcile_time_seconds")
               .Help("Length of time per reconciliation per controller")
               .Register(registry)
               .Add({{"controller", name_}},
                    prometheus::Histogram::BucketBoundaries{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                            0.1, 0.25, 0.5, 1, 2.5, 5, 10});
  depth_ = &prometheus::BuildGauge()
                .Name("workqueue_depth")
                .Help("Current depth of workqueue")
                .Register(registry)
                .Add({{"name", name_}});
  retries_ = &prometheus::BuildCounter()
                  .Name("workqueue_retries_total")
                  .Help("Total number of retries handled by workqueue")
                  .Register(registry)
                  .Add({{"name", name_}});
  panics_ = &prometheus::BuildCounter()
                 .Name("pipescale_reconcile_panics_total")
                 .Help("Reconciles that ended in an exception (a bug), counted as errors")
                 .Register(registry)
                 .Add({{"controller", name_}});
}

Controller::~Controller() { Stop(); }

void Controller::Start() {
  stopping_ = false;
  for (int i = 0; i < workers_; ++i) threads_.emplace_back([this] { Work(); });
}

void Controller::Stop() {
  stopping_ = true;
  queue_.ShutDown();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

// An exception here is a bug, but it must not end the worker thread (std::terminate, and every
// other object stops being reconciled with it): it becomes an error like any other, retried
// with backoff, and stands out in the log and in its own counter.
Controller::Outcome Controller::ReconcileGuarded(const std::string& key) {
  try {
    return reconcile_(key);
  } catch (const std::exception& e) {
    return Panicked(key, e.what());
  } catch (...) {
    return Panicked(key, "an exception not derived from std::exception");
  }
}

Controller::Outcome Controller::Panicked(const std::string& key, const std::string& what) {
  panics_->Increment();
  Log("error", "reconcile threw; retrying with backoff",
      {{"controller", name_}, {"key", key}, {"error", what}});
  return Error{ErrorKind::kTransient, "reconcile threw: " + what};
}

void Controller::Work() {
  while (auto key = queue_.Get()) {
    depth_->Set(static_cast<double>(queue_.Depth()));
    const auto start = std::chrono::steady_clock::now();
    auto result = ReconcileGuarded(*key);
    time_->Observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    if (result.ok()) {
      {
        std::lock_guard lock(mu_);
        failures_.erase(*key);
      }
      if (*result) {
        requeue_after_->Increment();
        const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::steady_clock::now().time_since_epoch());
        queue_.AddAfter(*key, Spread(*key, **result, now));
      } else {
        success_->Increment();
      }
    } else {
      error_->Increment();
      errors_->Increment();
      int failures = 0;
      {
        std::lock_guard lock(mu_);
        failures = ++failures_[*key];
      }
      if (const Retry retry = OnError(result.error(), failures); retry.delay) {
        retries_->Increment();
        queue_.AddAfter(*key, *retry.delay);
      }
    }
    queue_.Done(*key);
    depth_->Set(static_cast<double>(queue_.Depth()));
  }
}

}  // namespace pipescale::controller

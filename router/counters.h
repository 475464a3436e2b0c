// Counters that follow a request or a call for as long as it lives: also when what it awaits
// throws (a guard carries on), nothing may stay counted for good.
#pragma once

#include <prometheus/gauge.h>

#include <atomic>

#include "config.h"
#include "metrics.h"

namespace pipescale::router {

// Counts a request in flight for as long as it lives.
class InFlight {
 public:
  InFlight(RouterConfig& config, RouterMetrics& metrics) : config_(config), metrics_(metrics) {
    ++config_.in_flight;
    metrics_.in_flight().Increment();
  }
  ~InFlight() {
    --config_.in_flight;
    metrics_.in_flight().Decrement();
  }
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;
  InFlight(InFlight&&) = delete;
  InFlight& operator=(InFlight&&) = delete;

 private:
  RouterConfig& config_;
  RouterMetrics& metrics_;
};

// Counts a call outstanding at its pod and in flight at its task for as long as it lives: also
// when what it awaits throws (a guard carries on), a pod must not stay counted busy for good.
class Outstanding {
 public:
  // `at_pod`: null when the pod's count is held elsewhere (Kairos's matcher holds it from the
  // start it matched to the answer). `peers`: told of each change (null: the count is this
  // router's alone).
  Outstanding(std::atomic<int>* at_pod, prometheus::Gauge& at_task, const PeerLink* peers)
      : at_pod_(at_pod),
        at_task_(at_task),
        peers_(at_pod != nullptr ? peers : nullptr),
        ahead_(at_pod_ != nullptr ? at_pod_->fetch_add(1) : 0) {
    at_task_.Increment();
    if (peers_ != nullptr) peers_->Nudge();
  }
  ~Outstanding() {
    at_task_.Decrement();
    if (at_pod_ != nullptr) --*at_pod_;
    if (peers_ != nullptr) peers_->Nudge();
  }
  Outstanding(const Outstanding&) = delete;
  Outstanding& operator=(const Outstanding&) = delete;
  Outstanding(Outstanding&&) = delete;
  Outstanding& operator=(Outstanding&&) = delete;
  // Calls outstanding at the pod when this one was sent (the count it found, read and raised
  // at once, so two calls sent together cannot both find the pod idle).
  int ahead() const { return ahead_; }

 private:
  std::atomic<int>* at_pod_;
  prometheus::Gauge& at_task_;
  const PeerLink* peers_;
  const int ahead_;
};

}  // namespace pipescale::router

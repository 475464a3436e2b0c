// The model pods, as tests/emulator/model_server.cc serves: requests queue; a batch of up to the
// server's batch size (its MAX_BATCH_SIZE) starts once that many wait or the oldest has waited
// --max-wait-ms; it takes d(rows) on the pod's class, times its latency scale.
#include <algorithm>

#include "gym/world.h"

namespace pipescale::gym::engine {

double World::ServiceMs(int pod, int rows) const {
  const Pod& p = pods[pod];
  const Deployment& d = deployments[p.deployment];
  const model::Variant& v = pipeline.spec.tasks[d.task].variants[d.variant];
  const model::Profile* profile = v.FindProfile(pipeline.spec.hardware_classes[d.hw_class].name);
  const double ms = profile == nullptr ? 1 : profile->latency.Ms(std::max(1, rows));
  return p.latency_scale * ms + options.call_overhead_ms;
}

void World::Enqueue(int pod, std::int64_t call) {
  Pod& p = pods[pod];
  p.held_ms_area += static_cast<double>(p.outstanding) * (now_ms_ - p.held_since_ms);
  p.held_since_ms = now_ms_;
  ++p.outstanding;
  if (options.call_to_pod_ms > 0) {
    At(now_ms_ + options.call_to_pod_ms, EventKind::kCallArrives, call);
    return;
  }
  OnCallArrives(call);
}

void World::OnCallArrives(std::int64_t call) {
  const int pod = calls.at(call).pod;
  calls.at(call).queued_ms = now_ms_;
  pods[pod].queue.push_back(call);
  MaybeStart(pod);
}

// Triton's queue policy with timeout_action REJECT: a call that waited past the timeout is
// turned away when the server next looks at its queue, to form a batch.
void World::RejectExpired(int pod) {
  Pod& p = pods[pod];
  if (p.queue_timeout_ms <= 0) return;
  while (!p.queue.empty() && now_ms_ - calls.at(p.queue.front()).queued_ms > p.queue_timeout_ms) {
    const std::int64_t c = p.queue.front();
    p.queue.pop_front();
    calls.at(c).rejected = true;
    At(now_ms_ + options.call_from_pod_ms, EventKind::kCallDelivered, c);
  }
}

void World::MaybeStart(int pod) {
  Pod& p = pods[pod];
  if (!p.serving.empty()) return;
  RejectExpired(pod);
  if (p.queue.empty()) return;
  const double due = calls.at(p.queue.front()).queued_ms + p.max_wait_ms;
  if (static_cast<int>(p.queue.size()) < p.batch && now_ms_ < due) {
    if (p.wake_at_ms != due) {
      p.wake_at_ms = due;
      At(due, EventKind::kPodWake, pod);
    }
    return;
  }
  int rows = 0;
  while (!p.queue.empty() && static_cast<int>(p.serving.size()) < p.batch) {
    const std::int64_t c = p.queue.front();
    p.queue.pop_front();
    rows += calls.at(c).rows;
    p.serving.push_back(c);
  }
  p.busy_since_ms = now_ms_;
  At(now_ms_ + ServiceMs(pod, rows), EventKind::kBatchDone, pod, rows);
}

void World::OnBatchDone(int pod) {
  Pod& p = pods[pod];
  p.busy_ms += now_ms_ - p.busy_since_ms;
  p.busy_since_ms = -1;
  std::vector<std::int64_t> done;
  done.swap(p.serving);
  const Deployment& d = deployments[p.deployment];
  int rows = 0;
  for (std::int64_t c : done) rows += calls.at(c).rows;
  const double served_ms = ServiceMs(pod, rows);
  // Each answer reaches the router as its batch ends (the round trip is in the pod's time: it
  // measured closer to the box than a pod free during it, bench/README.md).
  for (std::int64_t c : done) {
    Call& call = calls.at(c);
    call.queue_ms = now_ms_ - served_ms - call.queued_ms;
    current.served[{d.task, d.variant}] += 1;
    At(now_ms_ + options.call_from_pod_ms, EventKind::kCallDelivered, c);
  }
  MaybeStart(pod);
}

void World::OnCallDelivered(std::int64_t id) {
  const int pod = calls.at(id).pod;
  Pod& p = pods[pod];
  p.held_ms_area += static_cast<double>(p.outstanding) * (now_ms_ - p.held_since_ms);
  p.held_since_ms = now_ms_;
  --p.outstanding;
  if (calls.at(id).rejected) {
    OnCallRejected(id);
  } else {
    OnCallDone(id, calls.at(id).queue_ms);
  }
  if (p.state == Pod::State::kTerminating && p.outstanding == 0)
    At(now_ms_, EventKind::kPodGone, pod);
}

}  // namespace pipescale::gym::engine

#include "routing/walk.h"

#include <algorithm>
#include <cmath>

#include "common/strings.h"
#include "routing/body.h"

namespace pipescale::routing {

unsigned StatusOf(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kExpired:
      return 504;
    case ErrorKind::kNotFound:
    case ErrorKind::kUnavailable:
      return 503;
    default:
      return 502;
  }
}

Failure FailureOf(const Error& error) {
  const char* reason = "failed";
  switch (error.kind) {
    case ErrorKind::kExpired:
      reason = "deadline";
      break;
    case ErrorKind::kNotFound:
      reason = "no ready pod";
      break;
    case ErrorKind::kUnavailable:
      reason = "overloaded";
      break;
    case ErrorKind::kInvalid:
      reason = "refused";
      break;
    default:
      break;
  }
  return {.status = StatusOf(error.kind), .reason = reason, .message = error.message};
}

namespace {

// Whether each of `tasks` (read into `now`) without a Ready pod has one restarting.
bool RestartsEach(const TaskLoads& loads, std::span<const TaskNow> now,
                  const std::vector<int>& tasks) {
  for (size_t i = 0; i < now.size(); ++i) {
    if (now[i].pods.empty() && !loads.Restarting(tasks[i])) return false;
  }
  return true;
}

}  // namespace

Walk Walker::Start(int path, int rows, double now_ms) const {
  Walk walk{.path = path, .rows = rows, .start_ms = now_ms};
  walk.deadline_ms = now_ms + SloOrTimeoutMs(path);
  return walk;
}

double Walker::SloOrTimeoutMs(int path) const {
  const double slo_ms = graph_.DeadlineMs(path);
  return slo_ms > 0 ? slo_ms : policy_.timeout_ms;
}

DoorStep Walker::AtDoor(const TaskLoads& loads, Walk& walk, double now_ms,
                        double held_for_pods) const {
  if (!policy_.admission) return {};
  if (walk.path < 0) return AtDoorUnnamed(loads, walk, now_ms);
  const std::vector<int>& tasks = graph_.PathTasks(walk.path);
  const std::span<const TaskNow> now = TasksNow(loads, tasks, walk.rows, tasks_now_);
  const double remaining = walk.deadline_ms - now_ms;
  // A held request has spent its SLO waiting for pods: it takes only what they have to spare (in
  // once they would answer it within kHeldShare of an SLO), so the requests that came after it
  // and can still make theirs go first, and a backlog of held ones never queues them late.
  const double priority_share = AdmitShare(graph_.PriorityOf(walk.path));
  const double share = walk.cold ? std::min(priority_share, kHeldShare) : priority_share;
  const double budget = walk.cold ? std::min(remaining, SloOrTimeoutMs(walk.path)) : remaining;
  const Door door = Admit(now, budget * share);
  // A path asleep, or whose tasks without a Ready pod each have one restarting, is held up to its
  // cold hold from the first look (a wake or a restart takes longer than an SLO; late beats
  // lost), and is served within it once its pods are up. A pod still to be placed (the cluster
  // full, say) is waited for within the request's own deadline only.
  if (door == Door::kWaitForPods && (graph_.Sleeps() || RestartsEach(loads, now, tasks))) {
    HoldCold(walk);
  }
  // While its path's earlier requests wait for its pods (or are still answered after them), a
  // request is part of the wake (or restart) they wait for and is held as they are, for the
  // path's cold hold: refused as late, it waits; let in, it may still end behind the backlog at a
  // later task (which the door's look at each task now does not see) and is answered late
  // rather than cut at its SLO. Those held this way are not counted among the backlog, so that
  // past it (a load the pods cannot serve) the door refuses at once again.
  if (door != Door::kWaitForPods && !walk.cold && held_for_pods > 0) {
    HoldCold(walk);
    walk.behind_held = walk.cold;
  }
  switch (door) {
    case Door::kAdmit:
      return {};
    case Door::kRefuse:
      if (walk.cold && walk.deadline_ms - now_ms > kDoorPollMs) {
        return {.kind = DoorStep::Kind::kWait, .again_ms = now_ms + kDoorPollMs};
      }
      return {.kind = DoorStep::Kind::kRefuse,
              .refusal = {.status = 503,
                          .reason = kShedLate,
                          .message = StrFormat("path %s is full: its pods would answer in %.0f ms, "
                                               "more than %.0f%% of the %.0f ms left",
                                               graph_.PathName(walk.path).c_str(), PredictedMs(now),
                                               100 * share, budget)}};
    case Door::kWaitForPods:
      break;
  }
  if (walk.deadline_ms - now_ms > kDoorPollMs)
    return {.kind = DoorStep::Kind::kWait, .again_ms = now_ms + kDoorPollMs};
  size_t waiting = 0;
  while (waiting + 1 < now.size() && !now[waiting].pods.empty()) ++waiting;
  return NoPodInTime(tasks[waiting]);
}

void Walker::HoldCold(Walk& walk) const {
  if (walk.cold) return;
  const double hold_ms = graph_.ColdHoldMs(walk.path);
  if (hold_ms <= 0) return;
  walk.cold = true;
  walk.deadline_ms = std::max(walk.deadline_ms, walk.start_ms + hold_ms);
}

DoorStep Walker::NoPodInTime(int task) const {
  return {.kind = DoorStep::Kind::kRefuse,
          .refusal = {.status = 503,
                      .reason = kShedNoPod,
                      .message = "task " + graph_.TaskName(task) +
                                 " had no ready pod before the deadline"}};
}

// A request that names no path goes where the models send it: under scale to zero it waits
// until every task has a Ready pod; else it goes in at once, and waits at a task of its walk that
// has none (WaitsForPod).
DoorStep Walker::AtDoorUnnamed(const TaskLoads& loads, Walk& walk, double now_ms) const {
  if (!graph_.Sleeps()) return {};
  for (int task = 0; task < static_cast<int>(graph_.tasks().size()); ++task) {
    if (loads.PodCount(task) > 0) continue;
    HoldCold(walk);
    if (walk.deadline_ms - now_ms > kDoorPollMs) {
      return {.kind = DoorStep::Kind::kWait, .again_ms = now_ms + kDoorPollMs};
    }
    return NoPodInTime(task);
  }
  return {};
}

VariantStep Walker::ChooseVariant(const TaskLoads& loads, const Walk& walk, int task, int from_task,
                                  int from_variant, double now_ms, double u) const {
  if (loki_ == nullptr) return {};
  const std::string& name = graph_.TaskName(task);
  const std::string planned = loki_->Route(graph_.PathName(walk.path), name,
                                           graph_.VariantName(from_task, from_variant), u);
  if (planned.empty()) return {};
  const int planned_index = graph_.VariantIndex(task, planned);
  if (policy_.drop == DropPolicy::kNone) return {.variant = planned_index};
  // What the tasks after this one on the path would take now, whichever variant serves here.
  double downstream = 0;
  const std::vector<int>& tasks = graph_.PathTasks(walk.path);
  if (const auto here = std::find(tasks.begin(), tasks.end(), task); here != tasks.end()) {
    downstream =
        PredictedMs(TasksNow(loads, std::span(here + 1, tasks.end()), walk.rows, tasks_now_));
  }
  std::vector<Option> options;
  for (const std::string& variant : loki_->Variants(name)) {
    TaskNowAt(loads, task, graph_.VariantIndex(task, variant), walk.rows, task_now_);
    options.push_back({variant, PredictedMs(std::span(&task_now_, 1)) + downstream});
  }
  const Verdict verdict = JudgeLateness(policy_.drop, planned, options, walk.deadline_ms - now_ms,
                                        graph_.IsLast(walk.path, task));
  switch (verdict.kind) {
    case Verdict::Kind::kGo:
      return {.variant = planned_index};
    case Verdict::Kind::kReroute:
      return {.kind = VariantStep::Kind::kReroute,
              .variant = graph_.VariantIndex(task, verdict.variant)};
    case Verdict::Kind::kDrop:
      return {.kind = VariantStep::Kind::kDrop,
              .drop = {.status = 504,
                       .reason = verdict.reason,
                       .message = "dropped before task " + name + ": " + verdict.reason}};
  }
  return {.variant = planned_index};
}

void Walker::PickPod(const TaskLoads& loads, int task, int variant, int tried, double u,
                     PodPick& pick) const {
  pick.pod = -1;
  pick.spilled = false;
  std::vector<int>& pods = pick.pods;
  pods.clear();
  const int count = loads.PodCount(task);
  // The plan's variant when it has a Ready pod; else any pod of the task serves.
  if (variant >= 0) {
    for (int i = 0; i < count; ++i) {
      if (i != tried && loads.Pod(task, i).variant == variant) pods.push_back(i);
    }
  }
  if (pods.empty()) {
    for (int i = 0; i < count; ++i) {
      if (i != tried) pods.push_back(i);
    }
  }
  if (const std::optional<SpillPool> spill = loads.Spill(task)) {
    // MArk: the main classes, unless every main replica would answer late and the burst class
    // has a replica; the baseline (no spill) keeps to the main classes.
    pick.main.clear();
    pick.burst.clear();
    pick.load.clear();
    for (const int i : pods) {
      const PodLoad pod = loads.Pod(task, i);
      if (pod.hardware_class >= 0 && pod.hardware_class == spill->hardware_class) {
        pick.burst.push_back(i);
      } else {
        pick.main.push_back(i);
        pick.load.push_back({pod.outstanding, pod.batch, pod.batch_ms});
      }
    }
    // With spill off, the burst class's pods are never candidates, even when they are all.
    if (policy_.spill && !pick.burst.empty() && ShouldSpill(pick.load, spill->rt_max_ms)) {
      pick.spilled = true;
      pods.swap(pick.burst);
    } else if (!policy_.spill || !pick.main.empty()) {
      pods.swap(pick.main);
    }
  }
  // Each pod read once; one that left a call unanswered only when every candidate did.
  pick.candidates.clear();
  pick.live.clear();
  for (size_t j = 0; j < pods.size(); ++j) {
    const PodLoad pod = loads.Pod(task, pods[j]);
    pick.candidates.push_back({pod.weight, pod.outstanding, pod.batch});
    if (!pod.ejected) pick.live.push_back(static_cast<int>(j));
  }
  if (!pick.live.empty() && pick.live.size() < pods.size()) {
    // In place: live[j] >= j.
    for (size_t j = 0; j < pick.live.size(); ++j) {
      pods[j] = pods[pick.live[j]];
      pick.candidates[j] = pick.candidates[pick.live[j]];
    }
    pods.resize(pick.live.size());
    pick.candidates.resize(pick.live.size());
  }
  const int chosen = routing::PickPod(pick.candidates, u);
  if (chosen >= 0) pick.pod = pods[chosen];
}

namespace {

// What a call sent to `pod` now would take: the batches it holds, then its own (d(b) each).
double PredictedMs(const PodLoad& pod) {
  const double batches_ahead =
      std::ceil(static_cast<double>(std::max(pod.outstanding, 0)) / std::max(pod.batch, 1));
  return (batches_ahead + 1) * pod.batch_ms;
}

}  // namespace

double Walker::AttemptTimeoutMs(const TaskLoads& loads, const Walk& walk, int task, int pod,
                                int attempt, double now_ms) const {
  const double left = std::max(walk.deadline_ms - now_ms, 0.0) + policy_.grace_ms;
  if (attempt + 1 >= kAttempts || pod < 0) return left;
  const PodLoad load = loads.Pod(task, pod);
  if (load.batch_ms <= 0) return left;
  // The soonest another pod, not ejected, would serve the call: within the half that would be
  // left, or the call stays. Under overload every pod is that slow, and a retry would only add
  // a call to another queue (given up on sooner, the demo's 27/s step lost 40 of its 55%).
  double other_ms = left;
  for (int i = 0; i < loads.PodCount(task); ++i) {
    const PodLoad other = loads.Pod(task, i);
    if (i != pod && !other.ejected) other_ms = std::min(other_ms, PredictedMs(other));
  }
  if (other_ms >= left / 2) return left;
  // Never so late that the other pod could no longer serve it: a silent pod's queue grows with
  // the calls it holds, which would otherwise buy it all the time left.
  return std::min(left - other_ms, std::max(left / 2, kSlowFactor * PredictedMs(load)));
}

std::optional<Error> Walker::BeforeCall(const Walk& walk, int task, double now_ms) const {
  // The call carries the time left in whole milliseconds: under one, nothing can be served.
  if (walk.deadline_ms - now_ms >= 1) return std::nullopt;
  return Error{ErrorKind::kExpired, "the deadline passed before task " + graph_.TaskName(task)};
}

Error Walker::NoPod(int task) const {
  return {ErrorKind::kNotFound, "task " + graph_.TaskName(task) + " has no ready pod"};
}

CallVerdict Walker::AfterCall(const Walk& walk, int task, int attempt, const CallOutcome& outcome,
                              double now_ms) const {
  using Kind = CallVerdict::Kind;
  if (outcome.status == 200) return {};
  const std::string& name = graph_.TaskName(task);
  if (outcome.status != 0 && outcome.status < 500) {
    return {Kind::kFail,
            {ErrorKind::kInvalid, "task " + name + " refused the request (" +
                                      std::to_string(outcome.status) + "): " + outcome.detail}};
  }
  // Past the deadline a silent pod may only have been busy with other routers' calls (under
  // overload its queue outlasts a budget): ejecting it would cost the pool its capacity.
  if (now_ms >= walk.deadline_ms) {
    return {Kind::kFail,
            {ErrorKind::kExpired, "the deadline passed while task " + name + " served"}};
  }
  const std::string what = outcome.status == 0
                               ? outcome.detail
                               : "HTTP " + std::to_string(outcome.status) + ": " + outcome.detail;
  // A model that answered 503 is overloaded or not ready: it did not fail, and the client is
  // told so (503) if no other pod serves. Anything else from a model is its failure (502).
  Error error = outcome.status == 503
                    ? Error{ErrorKind::kUnavailable, "task " + name + ": " + what}
                    : Error{ErrorKind::kTransient, "task " + name + " failed: " + what};
  // Once more, on another pod: a failed pod must not fail the request alone.
  return {.kind = attempt + 1 < kAttempts ? Kind::kRetry : Kind::kFail,
          .error = std::move(error),
          .eject = outcome.status == 0 && !outcome.pod_answered_meanwhile};
}

Error Walker::NoPodLeft(int task, const CallVerdict& last) const {
  if (!last.eject) return last.error;
  return {ErrorKind::kNotFound,
          "task " + graph_.TaskName(task) + " has no pod left to try: " + last.error.message};
}

bool Walker::WaitsForPod(const TaskLoads& loads, Walk& walk, int task, const Error& error,
                         double now_ms) const {
  if (error.kind != ErrorKind::kNotFound) return false;
  // Its pods died under the call (a crash the table does not show yet), or are restarting: back
  // within a start-up. Not pods still to be placed, as at the door.
  if (loads.PodCount(task) == 0 && !loads.Restarting(task)) return false;
  HoldCold(walk);
  return walk.deadline_ms - now_ms > kDoorPollMs;
}

Failure Walker::BadAnswer(int task, const Error& error) const {
  return {.status = 502,
          .reason = "bad answer",
          .message = "task " + graph_.TaskName(task) + ": " + error.message};
}

Failure Walker::PoolFull(int task) const {
  return {.status = 503,
          .reason = kPoolFull,
          .message = "task " + graph_.TaskName(task) + ": its queue is full"};
}

std::optional<Failure> Walker::AfterAnswer(const Walk& walk, double now_ms) const {
  if (now_ms <= walk.deadline_ms + policy_.grace_ms) return std::nullopt;
  return Failure{.status = 504,
                 .reason = "deadline",
                 .message = StrFormat("served after the deadline of %.0f ms",
                                      walk.deadline_ms - walk.start_ms)};
}

void Walker::EndTrail(Walk& walk, std::span<const int> trail, double now_ms) const {
  walk.ended.emplace_back(walk.path >= 0 ? walk.path : graph_.PathOf(trail), now_ms);
}

Ending Walker::Finish(Walk& walk, double now_ms) const {
  // Never served past the deadline plus the grace: the client is told, and it is counted.
  if (auto late = AfterAnswer(walk, now_ms)) walk.Fail(std::move(*late));
  Ending out;
  if (walk.failure) {
    out.status = walk.failure->status;
    out.failure = *walk.failure;
  }
  // Each path once, at the latest end of its trails; a walk that ended none counts under its
  // named path, or none.
  for (const auto& ended : walk.ended) {
    const int path = ended.first;
    auto it = std::find_if(out.counts.begin(), out.counts.end(),
                           [&](const Ending::Count& c) { return c.path == path; });
    if (it == out.counts.end()) it = out.counts.insert(out.counts.end(), {.path = path});
    it->ms = std::max(it->ms, ended.second - walk.start_ms);
  }
  if (out.counts.empty()) out.counts.push_back({.path = walk.path, .ms = now_ms - walk.start_ms});
  return out;
}

std::string AnswerJson(std::string_view model_name, std::span<const std::string> outputs,
                       std::span<const std::string> paths, std::string_view id) {
  std::string body = R"({"model_name":)" + Quoted(model_name) + R"(,"outputs":[)";
  for (size_t i = 0; i < outputs.size(); ++i) (body += i > 0 ? "," : "") += outputs[i];
  body += R"(],"parameters":{"pipescale_paths":[)";
  for (size_t i = 0; i < paths.size(); ++i) (body += i > 0 ? "," : "") += Quoted(paths[i]);
  body += "]}";
  if (!id.empty()) body += R"(,"id":)" + Quoted(id);
  return body + '}';
}

}  // namespace pipescale::routing

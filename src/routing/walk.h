// One request's walk through a pipeline's DAG, as pipescale-router serves it and `pipescale
// simulate` replays it: the steps that decide — who gets in at the door, which variant serves it
// at a task, which pod takes a call, whether a failed call is tried again, and how the request
// ends — over a read-only view of the task loads (loads.h). The caller owns time and I/O: it
// asks a step, acts on the answer (waits, sends, counts) and asks the next, so that each policy
// of the request path exists once. Pure: time and randomness are passed in.
#pragma once

#include <algorithm>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"
#include "routing/admission.h"
#include "routing/graph.h"
#include "routing/loads.h"
#include "routing/loki.h"
#include "routing/picker.h"
#include "routing/pools.h"

namespace pipescale::routing {

// The request path's defaults, stated once for the router's flags and the simulator.
inline constexpr double kGraceMs = 50;  // answered past its deadline by more: a 504
// A request held for pods (Walk::cold) is let in once they would answer it within this share of
// its path's SLO: what they have to spare, after the requests that can still make theirs.
inline constexpr double kHeldShare = 0.5;
inline constexpr double kDoorPollMs = 20;        // a request waiting for pods looks again
inline constexpr double kCallTimeoutMs = 30000;  // the deadline of a request no SLO bounds
inline constexpr int kAttempts = 2;              // a failed call is tried once on another pod
// A pod that left a call unanswered (its connection failed, was reset, or the attempt's time ran
// out) is left out of picks while the task has another, then a call tries it again: a frozen
// node or a hung accelerator costs a call now and then, not every call, until Kubernetes sees
// it. EjectMs(n) after the n-th time in a row: kEjectMs, doubling up to 16 times that.
inline constexpr double kEjectMs = 5000;
inline double EjectMs(int times) { return kEjectMs * (1 << std::clamp(times - 1, 0, 4)); }
// An attempt may take this many times what the pod's queue and batch predict before it is
// given up on (Walker::AttemptTimeoutMs).
inline constexpr double kSlowFactor = 2;

// How the walk behaves: the router's flags, the simulator's options.
struct Policy {
  // The door refuses a request its path's pods would serve late, and holds one whose path has
  // a task without a Ready pod (admission.h).
  bool admission = true;
  bool spill = true;  // MArk's burst class takes what the main would serve late
  DropPolicy drop = DropPolicy::kReroute;  // requests behind a Loki plan that fall behind
  double grace_ms = kGraceMs;
  double timeout_ms = kCallTimeoutMs;
};

// Why a request gets no 200: the status, a short reason its counters are labelled by, and the
// error body's message.
struct Failure {
  unsigned status = 502;
  std::string reason;
  std::string message;
};

// The HTTP status a visit's error gives the client: 504 when its deadline passed, 503 when no pod
// could take it (none Ready, a full queue, an overloaded model), 502 for a model's failure.
unsigned StatusOf(ErrorKind kind);
// The failure an error makes, with a reason by its kind ("deadline", "no ready pod", ...).
Failure FailureOf(const Error& error);

// A request from the door to its answer.
struct Walk {
  int path = -1;  // the path the client named; -1: the models decide
  int rows = 1;   // the query's size: its first input's leading dimension
  double start_ms = 0, deadline_ms = 0;
  // Held for a task with no Ready pod, asleep under scale to zero or restarting (at the door, or
  // at the task: Walker::WaitsForPod): a cold request, whose deadline moved to its path's cold
  // hold (Graph::ColdHoldMs).
  bool cold = false;
  // Held (cold) behind its path's requests held for pods, or let in while they were not yet
  // answered: part of their wake, not one of those the door counts (`held_for_pods`).
  bool behind_held = false;
  std::optional<Failure> failure;             // the first of any of its visits
  std::vector<std::pair<int, double>> ended;  // each trail that ended: its path (-1: none), when

  void Fail(Failure f) {
    if (!failure) failure = std::move(f);
  }
};

struct DoorStep {
  enum class Kind { kAdmit, kRefuse, kWait };
  Kind kind = Kind::kAdmit;
  Failure refusal;      // kRefuse: a 503, reason kShedLate or kShedNoPod
  double again_ms = 0;  // kWait: when to look again
};

struct VariantStep {
  enum class Kind { kGo, kReroute, kDrop };
  Kind kind = Kind::kGo;
  int variant = -1;  // kGo, kReroute: the variant to serve it; -1: any pod of the task
  Failure drop;      // kDrop: a 504 with Loki's reason
};

// A pick of a pod for a call. The vectors are scratch the caller keeps, so that a pick allocates
// nothing once warm.
struct PodPick {
  int pod = -1;          // among TaskLoads::Pod(task, ·); -1 when none may take it
  bool spilled = false;  // MArk's burst class took it: every main replica would answer late
  std::vector<int> pods, main, burst;
  std::vector<int> live;  // positions in `pods` of those not ejected
  std::vector<MainReplica> load;
  std::vector<Candidate> candidates;
};

// What a call to a pod came back with: its HTTP status (0: no answer, the connection failed)
// and the answer's body or the transport's error.
struct CallOutcome {
  unsigned status = 0;
  std::string detail;
  // The pod answered another call while this one waited: alive, only slow to this one.
  bool pod_answered_meanwhile = false;
};

struct CallVerdict {
  enum class Kind { kDone, kRetry, kFail };
  Kind kind = Kind::kDone;
  // kFail: what the visit fails with; kRetry: the same, should no other pod be left to try.
  Error error;
  // The pod left the call unanswered and answered nothing else meanwhile: out of picks for a
  // while (EjectMs).
  bool eject = false;
};

// How a request ends: its status and, for the per-path counters, the paths it counts under with
// its latency on each (a named path; else each path its trails took, or -1 when none ended).
struct Ending {
  unsigned status = 200;
  Failure failure;  // when the status is not 200
  struct Count {
    int path = -1;
    double ms = 0;
  };
  std::vector<Count> counts;
};

class Walker {
 public:
  // `loki`: a Loki plan's tables, or null. All three must outlive the walker.
  Walker(const Graph& graph, const LokiTables* loki, const Policy& policy)
      : graph_(graph), loki_(loki), policy_(policy) {}

  // A request of `rows` rows for `path` (-1: the models decide) arriving at `now_ms`.
  Walk Start(int path, int rows, double now_ms) const;

  // At the door: in, refused, or waiting for its path's tasks' Ready pods: within its deadline,
  // or up to the path's cold hold (which becomes the walk's deadline; Walk::cold) under scale to
  // zero and for a pod restarting. `held_for_pods`: the requests of the walk's path held at the
  // door now for its pods (a wake's or a restart's backlog); while there are any, a request the
  // door would refuse as late is held behind them (Walk::behind_held) instead, and one it lets
  // in takes the same hold as its deadline.
  DoorStep AtDoor(const TaskLoads& loads, Walk& walk, double now_ms,
                  double held_for_pods = 0) const;

  // The variant of `task` to serve a request that `from_variant` of `from_task` served before
  // (-1, -1 at the first task): Loki's table and drop policy where there is a plan; `u` uniform
  // in [0, 1).
  VariantStep ChooseVariant(const TaskLoads& loads, const Walk& walk, int task, int from_task,
                            int from_variant, double now_ms, double u) const;

  // Which of `task`'s pods takes a call: those of `variant` when it has any (else any of the
  // task's), MArk's main classes unless every main replica would answer late, then the least
  // loaded (picker.h), never `tried` (-1: none), nor a pod left out for a call it left
  // unanswered (PodLoad::ejected) unless every candidate is. `u` uniform in [0, 1).
  void PickPod(const TaskLoads& loads, int task, int variant, int tried, double u,
               PodPick& pick) const;

  // How long attempt `attempt` of a call to pod `pod` of `task` may go unanswered before the
  // pod is given up on: the time left plus the grace on the last attempt, for a pod whose d(b)
  // is not known, or where no other pod (not ejected) would serve the call within half of that;
  // else the larger of half and kSlowFactor times what the pod's queue and batch predict, but no
  // more than leaves the other pod the time it would take. A pod that hangs then costs the
  // request half its budget, leaving the other half to a pod that can use it, and a live pod
  // behind a queue is not given up on for it, nor when every pod is loaded (a retry would only
  // add to another queue).
  double AttemptTimeoutMs(const TaskLoads& loads, const Walk& walk, int task, int pod, int attempt,
                          double now_ms) const;
  // Before a call to `task` leaves: the error when the deadline has passed.
  std::optional<Error> BeforeCall(const Walk& walk, int task, double now_ms) const;
  // The error when `task` has no pod to take a call.
  Error NoPod(int task) const;
  // After attempt `attempt` (0: the first) of a call to `task` came back `outcome`: done when
  // answered 200; a 4xx, or a deadline passed, fails the visit; another failure is tried once
  // more on another pod.
  CallVerdict AfterCall(const Walk& walk, int task, int attempt, const CallOutcome& outcome,
                        double now_ms) const;
  // What a call fails with when no pod of `task` is left to try after `last` (the last
  // attempt's verdict): "no ready pod" (kNotFound) where the pod left it unanswered, as a pod
  // that died does (a visit waits for another: WaitsForPod); else the last attempt's error.
  Error NoPodLeft(int task, const CallVerdict& last) const;
  // Whether a visit whose call failed with `error` waits for a pod of `task` in a newer table than
  // `loads`: when the task had none left (kNotFound) because its pods died under the call or are
  // restarting, as the door holds a request (Walk::cold); its deadline moves to its path's cold
  // hold, and it waits while more than a poll of that is left.
  bool WaitsForPod(const TaskLoads& loads, Walk& walk, int task, const Error& error,
                   double now_ms) const;
  // A task's answer the walk cannot read or route (its outputs, or the next tasks it names): the
  // model's fault, a 502.
  Failure BadAnswer(int task, const Error& error) const;
  // A task whose Kairos queue is full turns the request away: a 503.
  Failure PoolFull(int task) const;
  // An answered call's end: the failure when it came back past the deadline and its grace.
  std::optional<Failure> AfterAnswer(const Walk& walk, double now_ms) const;

  // A trail of tasks (in walk order) that ended at `now_ms`: the walk counts it under its path.
  void EndTrail(Walk& walk, std::span<const int> trail, double now_ms) const;

  // The request's end at `now_ms`: late past its grace is a 504.
  Ending Finish(Walk& walk, double now_ms) const;

  const Graph& graph() const { return graph_; }
  const Policy& policy() const { return policy_; }

 private:
  DoorStep AtDoorUnnamed(const TaskLoads& loads, Walk& walk, double now_ms) const;
  void HoldCold(Walk& walk) const;
  // A request's own budget on `path`: its SLO, else the router's timeout.
  double SloOrTimeoutMs(int path) const;
  DoorStep NoPodInTime(int task) const;

  const Graph& graph_;
  const LokiTables* loki_;
  const Policy& policy_;
  // Scratch for the tasks a step predicts over: a walker serves one thread.
  mutable std::vector<TaskNow> tasks_now_;
  mutable TaskNow task_now_;
};

// The pipeline's answer as one model: {"model_name", "outputs" (each already JSON), "parameters":
// {"pipescale_paths": the paths it took}, "id" when the request had one}.
std::string AnswerJson(std::string_view model_name, std::span<const std::string> outputs,
                       std::span<const std::string> paths, std::string_view id);

}  // namespace pipescale::routing

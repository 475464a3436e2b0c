// Who gets in at the door: a request whose path cannot be served within its share of the time
// left (by its path's priority) at the queues the model pods hold now is refused at once (503
// with Retry-After) rather than queued into a late 504, where it would also hold up requests that
// can still make theirs; one whose path has a task with no Ready pod yet waits at the door. Pure.
#pragma once

#include <span>
#include <vector>

#include "model/pipeline.h"
#include "routing/pools.h"

namespace pipescale::routing {

// One task of a path as a request entering now would find it.
struct TaskNow {
  std::vector<MainReplica> pods;  // its Ready pods: requests outstanding, batch, d(batch)
  double fill_ms = 0;             // the router's wait budget for the batches it forms there
};

// A task Kairos's matcher serves, as a query finds it: the matcher's prediction for the query
// (KairosQueue::PredictMs) stands for its pods, whose batch sizes say nothing of a query that
// runs alone.
TaskNow MatchedTaskNow(double predicted_ms);

// The work ahead of a new request at one pod: the batches it holds, the one in service counted
// whole (MArk's bouncer predicts the same way).
double WorkAheadMs(const MainReplica& pod);

// How long a request entering now would take along `tasks` if each task served it at its
// least loaded pod: at each, its batch's fill, the work ahead and its own batch. Infinite when
// a task has no pod.
double PredictedMs(std::span<const TaskNow> tasks);

// Why a request was refused at the door (the router's pipescale_router_shed_total).
inline constexpr const char* kShedLate = "late";
inline constexpr const char* kShedNoPod = "no-pod";
inline constexpr const char* kShedReasons[] = {kShedLate, kShedNoPod};

// The share of the time left that a request's predicted service may take and still be let in:
// as the pods' queues grow, sheddable requests (half) are refused first, then standard ones (all
// of it), and critical ones never for being late (they may still end in a 504). A share below 1
// for standard paths was measured to refuse requests that would have made it: the prediction
// counts the batch in service whole.
double AdmitShare(model::Priority priority);

enum class Door {
  kAdmit,
  kRefuse,       // it would be late even at the least loaded pods
  kWaitForPods,  // a task has no Ready pod (starting up, or scaled from zero)
};
// At the door with `budget_ms` to spend (the time left times AdmitShare).
Door Admit(std::span<const TaskNow> tasks, double budget_ms);

}  // namespace pipescale::routing

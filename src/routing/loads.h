// What a request would find at each task now, as the walk's steps read it: the router from its
// routing table and the pods' counters, the simulator from its world. Read-only; tasks are the
// Graph's indices, variants their index in their task's list, hardware classes the pipeline's.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "routing/admission.h"

namespace pipescale::routing {

// One Ready pod of a task.
struct PodLoad {
  int variant = -1;         // the variant it serves; -1 when not known
  int hardware_class = -1;  // the class it runs on; -1 when not known
  int outstanding = 0;      // calls sent to it and not yet answered
  int batch = 1;            // the batch its server forms (1 where the router forms them)
  double batch_ms = 0;      // d(batch) of its variant on its class; 0 when not known
  double weight = 1;        // its planned capacity (requests per second), > 0
  bool ejected = false;     // it left a call unanswered lately (walk.h, EjectMs)
};

// MArk's pool at a task: the warm burst class and the response-time limit a main replica must
// meet.
struct SpillPool {
  int hardware_class = -1;
  double rt_max_ms = 0;
};

class TaskLoads {
 public:
  virtual ~TaskLoads() = default;
  // The Ready pods of `task`, in an order fixed while the view lives.
  virtual int PodCount(int task) const = 0;
  virtual PodLoad Pod(int task, int index) const = 0;
  // Where the router forms the batches of `variant` at `task` (-1: the task's first variant
  // whose batches it forms), how long a batch may wait to fill; 0 where it forms none.
  virtual double FillMs(int task, int variant) const = 0;
  // Where Kairos's matcher serves `task`: its prediction for a query of `rows` rows arriving
  // now; nullopt where no matcher serves it or it has no replica.
  virtual std::optional<double> MatchedMs(int task, int rows) const = 0;
  // Where MArk's pool serves `task`: its burst class; nullopt where none.
  virtual std::optional<SpillPool> Spill(int task) const = 0;
  // Whether a pod of `task` is restarting (routing::RestartingPods): not Ready now, but back
  // within its start-up, so a request that finds the task without a Ready pod is held for it.
  virtual bool Restarting(int task) const = 0;
};

// What a request of `rows` rows entering `task` now would find there (admission.h): its pods (of
// `variant` only, unless -1) with the router's fill time where it forms the batches; where
// Kairos's matcher serves the task, the matcher's prediction instead. Into `now`, whose
// capacity is kept.
void TaskNowAt(const TaskLoads& loads, int task, int variant, int rows, TaskNow& now);

// TaskNowAt each of `tasks` on any variant, into `out` (resized, capacity kept).
std::span<const TaskNow> TasksNow(const TaskLoads& loads, std::span<const int> tasks, int rows,
                                  std::vector<TaskNow>& out);

}  // namespace pipescale::routing

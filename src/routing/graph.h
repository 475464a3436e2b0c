// A pipeline's DAG as a request walks it: where it enters, where each task's output goes (the
// path the client named, or the branches and fan-out the model's response names), which
// execution path a walk took, and the names behind the indices the walk keeps (tasks, paths and
// hardware classes in the pipeline's order, variants in their task's). Pure.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "model/pipeline.h"

namespace pipescale::routing {

// The response parameter in which a model names the tasks its output goes to and how many
// requests each gets: {"pipescale_next": {"classify": 3}} (a detector that found 3 objects).
inline constexpr const char* kNextParameter = "pipescale_next";
inline constexpr int kMaxFanOut = 256;  // requests one response may send to one task

// Requests for one next task.
struct Call {
  int task = 0;  // its index
  int count = 1;
  bool operator==(const Call&) const = default;
};

// The requests a response names for each next task (kNextParameter), by task name.
using NextCounts = std::map<std::string, int>;

// The response's kNextParameter, read: empty when absent; kInvalid (the model's fault) when it is
// not an object or a count is not an integer from 0 to kMaxFanOut.
Result<NextCounts> ReadNext(const nlohmann::json& response_parameters);

class Graph {
 public:
  explicit Graph(const model::Pipeline& pipeline);

  // Indices by name, -1 for none; names by index, "" for -1.
  int TaskIndex(std::string_view name) const;
  int PathIndex(std::string_view name) const;
  int VariantIndex(int task, std::string_view name) const;
  int ClassIndex(std::string_view name) const;
  const std::string& TaskName(int task) const;
  const std::string& PathName(int path) const;
  const std::string& VariantName(int task, int variant) const;
  const std::string& ClassName(int hardware_class) const;

  const std::vector<std::string>& tasks() const { return tasks_; }
  const std::vector<std::string>& paths() const { return path_names_; }
  const std::vector<std::string>& variants(int task) const { return variants_[task]; }

  // The path a client names: its index, or -1 for "" (the models decide which it takes).
  // kNotFound names it when the pipeline has no such path.
  Result<int> FindPath(std::string_view name) const;

  // The tasks a request starts at: the path's first, or (-1) every task no edge enters.
  const std::vector<int>& Entry(int path) const;

  // Where the output of `task` goes. On a path: its next task (as many requests as the response
  // names for it, else 1), nothing at its end. Else (-1): the tasks and counts the response's
  // `pipescale_next` names, each an edge of `task`, or every edge once. kInvalid (the model's
  // fault, a 502) for a count or a task the graph does not allow.
  Result<std::vector<Call>> Next(int path, int task,
                                 const nlohmann::json& response_parameters) const;
  // The same with the response's counts read (ReadNext).
  Result<std::vector<Call>> Next(int path, int task, const NextCounts& named) const;

  // Whether a request at `task` ends there: the last task of the path, or (-1) a task with no
  // next edge.
  bool IsLast(int path, int task) const;

  // The path whose tasks are exactly `trail` (a walk from an entry to a task with nowhere to
  // go), or -1 when the pipeline lists none.
  int PathOf(std::span<const int> trail) const;

  // The deadline of a request: the path's SLO, else (-1) the longest of all paths' (the models
  // decide which it takes). 0 when the pipeline lists no path.
  double DeadlineMs(int path) const;

  // How long a request for the path may be held at the door for a task's Ready pod, asleep or
  // restarting (model::Pipeline::ColdHoldMs; for -1 the longest of all paths').
  double ColdHoldMs(int path) const;
  // Whether its paths sleep when idle (spec.scaleToZero): a request held for their pods from the
  // first look, and one that names no path waits until every task has a Ready pod.
  bool Sleeps() const { return sleeps_; }

  // The tasks of the path, in order; empty for -1.
  const std::vector<int>& PathTasks(int path) const;
  // The path's priority; standard for -1.
  model::Priority PriorityOf(int path) const;

 private:
  std::vector<std::string> tasks_, path_names_, classes_;
  std::vector<std::vector<int>> edges_;             // by task: its next tasks
  std::vector<std::vector<std::string>> variants_;  // by task
  std::vector<std::vector<int>> path_tasks_;        // by path
  std::vector<double> slo_ms_;                      // by path
  std::vector<double> cold_hold_ms_;                // by path
  double longest_cold_hold_ms_ = 0;
  bool sleeps_ = false;
  std::vector<model::Priority> priority_;     // by path
  std::vector<int> roots_;                    // tasks no edge enters
  std::vector<std::vector<int>> path_entry_;  // by path: its first task
};

}  // namespace pipescale::routing

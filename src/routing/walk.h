// How a request walks a pipeline's DAG: where it enters, where each task's output goes (the
// path the client named, or the branches and fan-out the model's response names), and which
// execution path a walk took, for the per-path metrics the operator plans from. Pure.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/result.h"
#include "model/pipeline.h"

namespace pipescale::router {

// The response parameter in which a model names the tasks its output goes to and how many
// requests each gets: {"pipescale_next": {"classify": 3}} (a detector that found 3 objects).
inline constexpr const char* kNextParameter = "pipescale_next";
inline constexpr int kMaxFanOut = 256;  // requests one response may send to one task

struct Call {
  std::string task;
  int count = 1;
  bool operator==(const Call&) const = default;
};

// The requests a response names for each next task (kNextParameter), by task.
using NextCounts = std::map<std::string, int>;

// The response's kNextParameter, read: empty when absent; kInvalid (the model's fault) when it is
// not an object or a count is not an integer from 0 to kMaxFanOut.
Result<NextCounts> ReadNext(const nlohmann::json& response_parameters);

class Graph {
 public:
  explicit Graph(const model::Pipeline& pipeline);

  // The tasks a request starts at: the named path's first, or every task no edge enters.
  // kNotFound names the path when the pipeline has none of that name.
  Result<std::vector<std::string>> Entry(const std::string& path) const;

  // Where the output of `task` goes. On a named path: its next task (as many requests as the
  // response names for it, else 1), nothing at its end. Else: the tasks and counts the
  // response's `pipescale_next` names, each an edge of `task`, or every edge once. kInvalid
  // (the model's fault, a 502) for a count or a task the graph does not allow.
  Result<std::vector<Call>> Next(const std::string& path, const std::string& task,
                                 const nlohmann::json& response_parameters) const;
  // The same with the response's counts read (ReadNext); kInvalid for a task the graph does not
  // allow.
  Result<std::vector<Call>> Next(const std::string& path, const std::string& task,
                                 const NextCounts& named) const;

  // Whether a request at `task` ends there: the last task of the named path, or a task with no
  // next edge when the models decide.
  bool IsLast(const std::string& path, const std::string& task) const;

  // The execution path whose tasks are exactly `tasks` (a walk from an entry to a task with
  // nowhere to go), or "" when the pipeline lists none.
  std::string PathOf(const std::vector<std::string>& tasks) const;

  // The deadline of a request: the named path's SLO, else the longest of all paths' (the
  // models decide which it takes). 0 when the pipeline lists no path.
  double DeadlineMs(const std::string& path) const;

  const std::vector<std::string>& tasks() const { return tasks_; }
  // The variants of `task` the pipeline lists.
  const std::vector<std::string>& variants(const std::string& task) const {
    return variants_.at(task);
  }
  std::vector<std::string> paths() const;
  // The tasks of the named path, in order; empty for "" or a path the pipeline lacks.
  const std::vector<std::string>& PathTasks(const std::string& path) const;
  // The named path's priority; standard for "" or a path the pipeline lacks.
  model::Priority PriorityOf(const std::string& path) const;

 private:
  std::vector<std::string> tasks_;
  std::map<std::string, std::vector<std::string>> edges_;     // task -> next tasks
  std::map<std::string, std::vector<std::string>> variants_;  // task -> its variants
  std::map<std::string, std::vector<std::string>> paths_;     // path -> its tasks
  std::map<std::string, double> slo_ms_;
  std::map<std::string, model::Priority> priority_;
};

}  // namespace pipescale::router

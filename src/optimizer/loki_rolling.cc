#include "optimizer/loki_rolling.h"

#include <algorithm>

#include "optimizer/pool.h"

namespace pipescale::optimizer::loki {
namespace {

// The pods `from` has beyond `to`, Deployment by Deployment (by RunningKey).
int PodsBeyond(const std::map<std::string, int>& from, const std::map<std::string, int>& to) {
  int beyond = 0;
  for (const auto& [key, pods] : from) {
    const auto it = to.find(key);
    beyond += std::max(0, pods - (it == to.end() ? 0 : it->second));
  }
  return beyond;
}

}  // namespace

std::string RunningKeyOf(const model::PipelineSpec& spec, const Vertex& vertex, const Config& c) {
  const model::Task& task = spec.tasks[vertex.task];
  return RunningKey(task.name, task.variants[vertex.variant].name,
                    spec.hardware_classes[c.hardware_class].name);
}

std::map<std::string, int> ReplicasByKey(const model::Plan& plan) {
  std::map<std::string, int> out;
  for (const model::TaskPlan& t : plan.tasks) {
    out[RunningKey(t.task, t.variant, t.hardware_class)] += t.replicas;
  }
  return out;
}

int StoppedPods(const model::Plan& plan, const std::map<std::string, int>& running) {
  return PodsBeyond(running, ReplicasByKey(plan));
}

int StartedPods(const model::Plan& plan, const std::map<std::string, int>& running) {
  return PodsBeyond(ReplicasByKey(plan), running);
}

int StopLimit(const std::map<std::string, int>& running, int starting) {
  int ready = 0;
  for (const auto& [key, r] : running) ready += r;
  return std::max(0, std::max(1, (ready + starting + 3) / 4) - starting);
}

void RoomForRunning(const model::Pipeline& pipeline, const std::map<std::string, int>& running,
                    Instance& in) {
  for (Vertex& vertex : in.vertices) {
    for (const Config& c : vertex.configs) {
      const auto it = running.find(RunningKeyOf(pipeline.spec, vertex, c));
      if (it != running.end()) vertex.max_replicas = std::max(vertex.max_replicas, it->second);
    }
  }
}

void LimitStops(const model::Pipeline& pipeline, const Instance& in, const Columns& col,
                const std::map<std::string, int>& running, int limit, Milp& milp) {
  std::map<std::string, std::vector<MilpTerm>> kept;
  for (size_t v = 0; v < in.vertices.size(); ++v) {
    for (size_t k = 0; k < in.vertices[v].configs.size(); ++k) {
      kept[RunningKeyOf(pipeline.spec, in.vertices[v], in.vertices[v].configs[k])].push_back(
          {col.n[v][k], 1});
    }
  }
  std::vector<MilpTerm> stops;
  for (const auto& [key, ready] : running) {
    if (ready <= 0) continue;
    const int stopped = milp.AddVar(0, ready, 0, false);
    std::vector<MilpTerm> row = kept[key];
    row.push_back({stopped, 1});
    milp.AddRow(std::move(row), ready, kInfinity);
    stops.push_back({stopped, 1});
  }
  if (!stops.empty()) milp.AddRow(std::move(stops), -kInfinity, limit);
}

}  // namespace pipescale::optimizer::loki

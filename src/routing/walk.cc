#include "routing/walk.h"

#include <algorithm>
#include <set>

#include "common/strings.h"

namespace pipescale::router {

using nlohmann::json;

Graph::Graph(const model::Pipeline& pipeline) {
  for (const model::Task& t : pipeline.spec.tasks) {
    tasks_.push_back(t.name);
    auto& next = edges_[t.name];
    for (const model::Edge& e : t.next) next.push_back(e.task);
    auto& variants = variants_[t.name];
    for (const model::Variant& v : t.variants) variants.push_back(v.name);
  }
  for (const model::Path& p : pipeline.spec.paths) {
    paths_[p.name] = p.tasks;
    slo_ms_[p.name] = p.slo_ms;
    priority_[p.name] = p.priority;
  }
}

model::Priority Graph::PriorityOf(const std::string& path) const {
  const auto it = priority_.find(path);
  return it == priority_.end() ? model::Priority::kStandard : it->second;
}

Result<std::vector<std::string>> Graph::Entry(const std::string& path) const {
  if (!path.empty()) {
    auto it = paths_.find(path);
    if (it == paths_.end() || it->second.empty()) {
      return Error{ErrorKind::kNotFound, "the pipeline has no path " + QuoteUserText(path)};
    }
    return std::vector<std::string>{it->second.front()};
  }
  std::set<std::string> entered;
  for (const auto& [task, next] : edges_) entered.insert(next.begin(), next.end());
  std::vector<std::string> roots;
  for (const std::string& t : tasks_) {
    if (!entered.contains(t)) roots.push_back(t);
  }
  return roots;
}

Result<NextCounts> ReadNext(const json& response_parameters) {
  NextCounts out;
  if (!response_parameters.is_object()) return out;
  const auto named = response_parameters.find(kNextParameter);
  if (named == response_parameters.end()) return out;
  if (!named->is_object()) {
    return Error{ErrorKind::kInvalid, std::string(kNextParameter) + " must be an object"};
  }
  for (const auto& [next, value] : named->items()) {
    if (!value.is_number_integer() || value.get<long>() < 0 || value.get<long>() > kMaxFanOut) {
      return Error{ErrorKind::kInvalid, std::string(kNextParameter) + "." + next +
                                            " must be an integer from 0 to " +
                                            std::to_string(kMaxFanOut)};
    }
    out[next] = static_cast<int>(value.get<long>());
  }
  return out;
}

Result<std::vector<Call>> Graph::Next(const std::string& path, const std::string& task,
                                      const json& response_parameters) const {
  auto named = ReadNext(response_parameters);
  if (!named) return named.error();
  return Next(path, task, *named);
}

Result<std::vector<Call>> Graph::Next(const std::string& path, const std::string& task,
                                      const NextCounts& named) const {
  auto count_for = [&](const std::string& next) {
    const auto it = named.find(next);
    return it == named.end() ? 1 : it->second;
  };
  std::vector<Call> out;
  if (!path.empty()) {
    const std::vector<std::string>& tasks = paths_.at(path);
    const auto at = std::find(tasks.begin(), tasks.end(), task);
    if (at == tasks.end() || at + 1 == tasks.end()) return out;
    if (const int count = count_for(*(at + 1)); count > 0) out.push_back({*(at + 1), count});
    return out;
  }
  const std::vector<std::string>& edges = edges_.at(task);
  for (const auto& [next, count] : named) {
    if (std::find(edges.begin(), edges.end(), next) == edges.end()) {
      return Error{ErrorKind::kInvalid, "task " + task + " named " + QuoteUserText(next) +
                                            ", which is not one of its next tasks"};
    }
  }
  for (const std::string& next : edges) {
    if (!named.empty() && !named.contains(next)) continue;
    if (const int count = count_for(next); count > 0) out.push_back({next, count});
  }
  return out;
}

bool Graph::IsLast(const std::string& path, const std::string& task) const {
  if (!path.empty()) {
    auto it = paths_.find(path);
    return it != paths_.end() && !it->second.empty() && it->second.back() == task;
  }
  auto it = edges_.find(task);
  return it == edges_.end() || it->second.empty();
}

const std::vector<std::string>& Graph::PathTasks(const std::string& path) const {
  static const std::vector<std::string> kNone;
  const auto it = paths_.find(path);
  return it == paths_.end() ? kNone : it->second;
}

std::string Graph::PathOf(const std::vector<std::string>& tasks) const {
  for (const auto& [name, path_tasks] : paths_) {
    if (path_tasks == tasks) return name;
  }
  return "";
}

std::vector<std::string> Graph::paths() const {
  std::vector<std::string> out;
  for (const auto& [name, tasks] : paths_) out.push_back(name);
  return out;
}

double Graph::DeadlineMs(const std::string& path) const {
  if (!path.empty()) {
    auto it = slo_ms_.find(path);
    return it == slo_ms_.end() ? 0 : it->second;
  }
  double longest = 0;
  for (const auto& [name, slo] : slo_ms_) longest = std::max(longest, slo);
  return longest;
}

}  // namespace pipescale::router

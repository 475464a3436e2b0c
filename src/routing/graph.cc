#include "routing/graph.h"

#include <algorithm>

#include "common/strings.h"

namespace pipescale::routing {

using nlohmann::json;

namespace {

int IndexOf(const std::vector<std::string>& names, std::string_view name) {
  const auto it = std::find(names.begin(), names.end(), name);
  return it == names.end() ? -1 : static_cast<int>(it - names.begin());
}

const std::string& NameAt(const std::vector<std::string>& names, int i) {
  static const std::string kNone;
  return i >= 0 && static_cast<size_t>(i) < names.size() ? names[i] : kNone;
}

}  // namespace

Graph::Graph(const model::Pipeline& pipeline) {
  for (const model::Task& t : pipeline.spec.tasks) tasks_.push_back(t.name);
  for (const model::HardwareClass& c : pipeline.spec.hardware_classes) classes_.push_back(c.name);
  std::vector<bool> entered(tasks_.size(), false);
  for (const model::Task& t : pipeline.spec.tasks) {
    auto& next = edges_.emplace_back();
    // A validated pipeline names only its own tasks; anything else is no edge.
    for (const model::Edge& e : t.next) {
      if (const int to = TaskIndex(e.task); to >= 0) {
        next.push_back(to);
        entered[to] = true;
      }
    }
    auto& variants = variants_.emplace_back();
    for (const model::Variant& v : t.variants) variants.push_back(v.name);
  }
  for (size_t t = 0; t < tasks_.size(); ++t) {
    if (!entered[t]) roots_.push_back(static_cast<int>(t));
  }
  sleeps_ = pipeline.spec.scale_to_zero.has_value();
  for (const model::Path& p : pipeline.spec.paths) {
    path_names_.push_back(p.name);
    auto& tasks = path_tasks_.emplace_back();
    for (const std::string& t : p.tasks) {
      if (const int i = TaskIndex(t); i >= 0) tasks.push_back(i);
    }
    path_entry_.push_back(tasks.empty() ? std::vector<int>{} : std::vector<int>{tasks.front()});
    slo_ms_.push_back(p.slo_ms);
    cold_hold_ms_.push_back(pipeline.ColdHoldMs(path_names_.size() - 1));
    priority_.push_back(p.priority);
  }
  longest_cold_hold_ms_ = pipeline.LongestColdHoldMs();
}

int Graph::TaskIndex(std::string_view name) const { return IndexOf(tasks_, name); }
int Graph::PathIndex(std::string_view name) const { return IndexOf(path_names_, name); }
int Graph::ClassIndex(std::string_view name) const { return IndexOf(classes_, name); }
int Graph::VariantIndex(int task, std::string_view name) const {
  return task < 0 ? -1 : IndexOf(variants_[task], name);
}
const std::string& Graph::TaskName(int task) const { return NameAt(tasks_, task); }
const std::string& Graph::PathName(int path) const { return NameAt(path_names_, path); }
const std::string& Graph::ClassName(int hardware_class) const {
  return NameAt(classes_, hardware_class);
}
const std::string& Graph::VariantName(int task, int variant) const {
  static const std::string kNone;
  return task < 0 ? kNone : NameAt(variants_[task], variant);
}

Result<int> Graph::FindPath(std::string_view name) const {
  if (name.empty()) return -1;
  const int path = PathIndex(name);
  if (path < 0 || path_tasks_[path].empty()) {
    return Error{ErrorKind::kNotFound, "the pipeline has no path " + QuoteUserText(name)};
  }
  return path;
}

const std::vector<int>& Graph::Entry(int path) const {
  return path < 0 ? roots_ : path_entry_[path];
}

model::Priority Graph::PriorityOf(int path) const {
  return path < 0 ? model::Priority::kStandard : priority_[path];
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

Result<std::vector<Call>> Graph::Next(int path, int task, const json& response_parameters) const {
  auto named = ReadNext(response_parameters);
  if (!named) return named.error();
  return Next(path, task, *named);
}

Result<std::vector<Call>> Graph::Next(int path, int task, const NextCounts& named) const {
  auto count_for = [&](int next) {
    const auto it = named.find(tasks_[next]);
    return it == named.end() ? 1 : it->second;
  };
  std::vector<Call> out;
  if (path >= 0) {
    const std::vector<int>& tasks = path_tasks_[path];
    const auto at = std::find(tasks.begin(), tasks.end(), task);
    if (at == tasks.end() || at + 1 == tasks.end()) return out;
    if (const int count = count_for(*(at + 1)); count > 0) out.push_back({*(at + 1), count});
    return out;
  }
  const std::vector<int>& edges = edges_[task];
  for (const auto& [next, count] : named) {
    const int to = TaskIndex(next);
    if (std::find(edges.begin(), edges.end(), to) == edges.end()) {
      return Error{ErrorKind::kInvalid, "task " + tasks_[task] + " named " + QuoteUserText(next) +
                                            ", which is not one of its next tasks"};
    }
  }
  for (const int next : edges) {
    if (!named.empty() && !named.contains(tasks_[next])) continue;
    if (const int count = count_for(next); count > 0) out.push_back({next, count});
  }
  return out;
}

bool Graph::IsLast(int path, int task) const {
  if (path >= 0) return !path_tasks_[path].empty() && path_tasks_[path].back() == task;
  return edges_[task].empty();
}

const std::vector<int>& Graph::PathTasks(int path) const {
  static const std::vector<int> kNone;
  return path < 0 ? kNone : path_tasks_[path];
}

int Graph::PathOf(std::span<const int> trail) const {
  for (size_t p = 0; p < path_tasks_.size(); ++p) {
    if (std::ranges::equal(path_tasks_[p], trail)) return static_cast<int>(p);
  }
  return -1;
}

double Graph::DeadlineMs(int path) const {
  if (path >= 0) return slo_ms_[path];
  double longest = 0;
  for (const double slo : slo_ms_) longest = std::max(longest, slo);
  return longest;
}

double Graph::ColdHoldMs(int path) const {
  return path >= 0 ? cold_hold_ms_[path] : longest_cold_hold_ms_;
}

}  // namespace pipescale::routing

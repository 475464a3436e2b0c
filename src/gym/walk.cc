// The router's walk of one request, as router/handler.cc walks it, with the same pure policies:
// the door (routing/admission.h), Loki's routes and drops (routing/loki.h), Kairos's queue and
// MArk's spill (routing/pools.h), router-formed batches (routing/batching.h) and the pick of a
// pod (routing/picker.h). What it cannot see here, it does not model: HTTP, retries of failed
// pods (no pod fails in the gym), the body's content.
#include <algorithm>
#include <cmath>

#include "api/deployment.h"
#include "api/routing_parse.h"
#include "gym/world.h"
#include "routing/admission.h"
#include "routing/endpoints.h"
#include "routing/picker.h"

namespace pipescale::gym::engine {
namespace {

constexpr double kGraceMs = 50;          // the router's default --grace
constexpr double kDoorPollMs = 20;       // how often a request waiting for pods looks again
constexpr size_t kMaxNextHops = 100000;  // answers of the graph kept

}  // namespace

const std::string& World::PathName(int path) const {
  static const std::string kModelsDecide;
  return path >= 0 ? pipeline.spec.paths[path].name : kModelsDecide;
}

void World::OnArrival(int path, int rows) {
  const std::int64_t id = walks.Add(Walk{});
  Walk& w = walks.at(id);
  w.path = path;
  w.rows = rows;
  w.start_ms = now_ms_;
  const std::string& name = PathName(path);
  const double deadline = graph->DeadlineMs(name);
  w.deadline_ms = now_ms_ + (deadline > 0 ? deadline : 30000);
  current.query_rows[rows] += 1;
  OnDoorPoll(id);
}

void World::TaskNowAt(int task, int variant, int rows, router::TaskNow& now) const {
  if (auto pool = pools.find(task); pool != pools.end() && pool->second.kairos) {
    if (const std::optional<double> ms = pool->second.kairos->PredictMs(rows, now_ms_)) {
      now = router::MatchedTaskNow(*ms);
      return;
    }
  }
  now.pods.clear();
  now.fill_ms = 0;
  for (int pi : ready[task]) {
    const Pod& p = pods[pi];
    if (variant >= 0 && deployments[p.deployment].variant != variant) continue;
    now.pods.push_back({p.outstanding, pod_router_batch[pi] > 0 ? 1 : p.batch, pod_batch_ms[pi]});
  }
  if (variant < 0) {
    for (const Batcher& b : batchers) {
      if (b.task == task) {
        now.fill_ms = b.former ? b.wait_ms : 0;
        break;
      }
    }
  } else if (auto b = batcher_of.find({task, variant}); b != batcher_of.end()) {
    now.fill_ms = batchers[b->second].wait_ms;
  }
}

std::span<const router::TaskNow> World::TasksNow(std::span<const int> tasks, int rows) const {
  // Kept between calls with their pods' capacity: the door looks at every request.
  if (tasks_now_.size() < tasks.size()) tasks_now_.resize(tasks.size());
  for (size_t i = 0; i < tasks.size(); ++i) TaskNowAt(tasks[i], -1, rows, tasks_now_[i]);
  return {tasks_now_.data(), tasks.size()};
}

void World::OnDoorPoll(std::int64_t id) {
  Walk& w = walks.at(id);
  if (admission && w.path >= 0) {
    const model::Path& path = pipeline.spec.paths[w.path];
    const double remaining = w.deadline_ms - now_ms_;
    const double share = router::AdmitShare(path.priority);
    switch (router::AtTheDoor(TasksNow(path_tasks[w.path], w.rows), remaining * share)) {
      case router::Door::kAdmit:
        break;
      case router::Door::kRefuse:
        current.shed[path.name + "/" + router::kShedLate] += 1;
        FailWalk(id, 503, router::kShedLate);
        EndWalk(id);
        return;
      case router::Door::kWaitForPods:
        if (remaining <= kDoorPollMs) {
          current.shed[path.name + "/" + router::kShedNoPod] += 1;
          FailWalk(id, 503, router::kShedNoPod);
          EndWalk(id);
        } else {
          At(now_ms_ + kDoorPollMs, EventKind::kDoorPoll, id);
        }
        return;
    }
  }
  const std::optional<std::vector<int>>& entry = EntryTasks(w.path);
  if (!entry) {
    FailWalk(id, 404, "no such path");
    EndWalk(id);
    return;
  }
  std::vector<std::int64_t> started;
  for (int task : *entry) {
    const std::int64_t v = visits.Add(Visit{.walk = id, .task = task});
    ++w.pending;
    started.push_back(v);
  }
  for (std::int64_t v : started) StartVisit(v);
}

const std::optional<std::vector<int>>& World::EntryTasks(int path) {
  // The graph's entries follow from the pipeline alone, which a run does not change.
  if (entry_tasks_.empty()) entry_tasks_.resize(pipeline.spec.paths.size() + 1);
  std::optional<std::vector<int>>& tasks = entry_tasks_[path + 1];
  if (tasks) return tasks;
  auto entry = graph->Entry(PathName(path));
  if (!entry) return tasks;  // a walk that the router answers 404: rare, and asked again
  tasks.emplace();
  for (const std::string& task : *entry) tasks->push_back(pipeline.TaskIndex(task));
  return tasks;
}

std::optional<int> World::PlanVariant(Visit& v) {
  if (!loki) return -1;
  const Walk& w = walks.at(v.walk);
  const model::Task& task = pipeline.spec.tasks[v.task];
  const std::string& path = PathName(w.path);
  const std::string from =
      v.from_variant >= 0 ? pipeline.spec.tasks[v.from_task].variants[v.from_variant].name : "";
  std::uniform_real_distribution<double> u(0, 1);
  const std::string planned = loki->Route(path, task.name, from, u(rng));
  if (planned.empty()) return -1;
  const auto index = [&](const std::string& name) {
    for (size_t i = 0; i < task.variants.size(); ++i) {
      if (task.variants[i].name == name) return static_cast<int>(i);
    }
    return -1;
  };
  if (drop_policy == model::DropPolicy::kNone) return index(planned);
  double downstream = 0;
  if (w.path >= 0) {
    const std::vector<int>& tasks = path_tasks[w.path];
    const auto here = std::find(tasks.begin(), tasks.end(), v.task);
    if (here != tasks.end()) {
      downstream = router::PredictedMs(TasksNow(std::span(here + 1, tasks.end()), w.rows));
    }
  }
  std::vector<router::Option> choices;
  router::TaskNow now;
  for (const std::string& variant : loki->Variants(task.name)) {
    TaskNowAt(v.task, index(variant), w.rows, now);
    choices.push_back({variant, router::PredictedMs(std::span(&now, 1)) + downstream});
  }
  const bool last = graph->IsLast(path, task.name);
  const router::Verdict verdict =
      router::Decide(drop_policy, planned, choices, w.deadline_ms - now_ms_, last);
  switch (verdict.kind) {
    case router::Verdict::Kind::kGo:
      return index(planned);
    case router::Verdict::Kind::kReroute:
      current.reroutes += 1;
      return index(verdict.variant);
    case router::Verdict::Kind::kDrop:
      current.drops[verdict.reason] += 1;
      FailWalk(v.walk, 504, verdict.reason);
      return std::nullopt;
  }
  return index(planned);
}

void World::StartVisit(std::int64_t id) {
  Visit& v = visits.at(id);
  if (walks.at(v.walk).path < 0) v.trail.push_back(v.task);
  const std::optional<int> variant = PlanVariant(v);
  if (!variant) {
    EndVisit(id);
    return;
  }
  v.variant = *variant;
  Send(id);
}

void World::Send(std::int64_t id) {
  Visit& v = visits.at(id);
  Walk& w = walks.at(v.walk);
  if (w.deadline_ms - now_ms_ <= 0) {
    FailWalk(v.walk, 504, "deadline");
    EndVisit(id);
    return;
  }
  // A router-formed batch: the plan's variant's batcher, or the task's first.
  int b = -1;
  if (auto it = batcher_of.find({v.task, v.variant}); it != batcher_of.end()) {
    b = it->second;
  } else if (v.variant < 0) {
    for (size_t i = 0; i < batchers.size() && b < 0; ++i) {
      if (batchers[i].task == v.task) b = static_cast<int>(i);
    }
  }
  if (b >= 0) {
    batchers[b].former->Add(static_cast<std::uint64_t>(id), w.rows, now_ms_);
    OnBatcherDue(b);
    return;
  }
  if (auto pool = pools.find(v.task); pool != pools.end() && pool->second.kairos) {
    if (!pool->second.has_replicas) {
      FailWalk(v.walk, 503, "no ready pod");
      EndVisit(id);
      return;
    }
    if (!pool->second.kairos->Arrive(static_cast<std::uint64_t>(id), w.rows, now_ms_)) {
      current.drops[router::kPoolFull] += 1;
      FailWalk(v.walk, 503, router::kPoolFull);
      EndVisit(id);
      return;
    }
    v.kairos_waiting = true;
    At(w.deadline_ms, EventKind::kPoolExpire, id);
    MatchPool(v.task);
    return;
  }
  const int pod = PickPod(v.task, v.variant);
  if (pod < 0) {
    FailWalk(v.walk, 503, "no ready pod");
    EndVisit(id);
    return;
  }
  SendCall(Call{.visits = {id}, .rows = w.rows}, pod);
}

int World::PickPod(int task, int variant) {
  // The scratch vectors keep their capacity between calls: a pick per call.
  std::vector<int>& all = pick_.all;
  all.clear();
  for (int pi : ready[task]) {
    if (variant >= 0 && deployments[pods[pi].deployment].variant == variant) all.push_back(pi);
  }
  if (all.empty()) all.assign(ready[task].begin(), ready[task].end());
  if (auto pool = pools.find(task); pool != pools.end() && !pool->second.spill_class.empty()) {
    const int spill = pipeline.HardwareClassIndex(pool->second.spill_class);
    std::vector<int>& main = pick_.main;
    std::vector<int>& burst = pick_.burst;
    std::vector<router::MainReplica>& load = pick_.load;
    main.clear();
    burst.clear();
    load.clear();
    for (int pi : all) {
      if (deployments[pods[pi].deployment].hw_class == spill) {
        burst.push_back(pi);
      } else {
        main.push_back(pi);
        load.push_back({pods[pi].outstanding, pods[pi].batch, pod_batch_ms[pi]});
      }
    }
    if (!burst.empty() && router::ShouldSpill(load, pool->second.rt_max_ms)) {
      current.spills[task] += 1;
      all.swap(burst);
    } else if (!main.empty()) {
      all.swap(main);
    }
  }
  std::vector<router::Candidate>& candidates = pick_.candidates;
  candidates.clear();
  for (int pi : all) {
    candidates.push_back(
        {pod_weight[pi], pods[pi].outstanding, pod_router_batch[pi] > 0 ? 1 : pods[pi].batch});
  }
  std::uniform_real_distribution<double> u(0, 1);
  const double u1 = u(rng), u2 = u(rng);
  const int pick = router::PickPod(candidates, u1, u2);
  return pick < 0 ? -1 : all[pick];
}

void World::SendCall(Call call, int pod) {
  call.pod = pod;
  call.sent_ms = now_ms_;
  current.task_calls[deployments[pods[pod].deployment].task] += 1;
  const std::int64_t id = calls.Add(std::move(call));
  Enqueue(pod, id);
}

void World::OnBatcherDue(int b) {
  Batcher& batcher = batchers[b];
  while (true) {
    std::vector<std::uint64_t> ids = batcher.former->Take(now_ms_);
    if (ids.empty()) break;
    Call call;
    for (std::uint64_t id : ids) {
      call.visits.push_back(static_cast<std::int64_t>(id));
      call.rows += walks.at(visits.at(static_cast<std::int64_t>(id)).walk).rows;
    }
    current.batch_rows[batcher.task].first += call.rows;
    current.batch_rows[batcher.task].second += 1;
    const int pod = PickPod(visits.at(call.visits.front()).task, batcher.variant);
    if (pod < 0) {
      for (std::int64_t v : call.visits) {
        FailWalk(visits.at(v).walk, 503, "no ready pod");
        EndVisit(v);
      }
      continue;
    }
    SendCall(std::move(call), pod);
  }
  const double due = batcher.former->DueMs();
  if (std::isfinite(due) && due != batcher.due_ms) {
    batcher.due_ms = due;
    At(due, EventKind::kBatcherDue, b);
  }
}

void World::MatchPool(int task) {
  Pool& pool = pools.at(task);
  for (const router::KairosQueue::Start& s : pool.kairos->Match(now_ms_)) {
    const auto id = static_cast<std::int64_t>(s.query);
    Visit& v = visits.at(id);
    v.kairos_waiting = false;
    SendCall(Call{.visits = {id}, .rows = walks.at(v.walk).rows}, s.replica);
  }
}

void World::OnPoolExpire(std::int64_t id) {
  const Visit* v = visits.Find(id);
  if (v == nullptr || !v->kairos_waiting) return;
  pools.at(v->task).kairos->Leave(static_cast<std::uint64_t>(id));
  FailWalk(v->walk, 504, "deadline");
  EndVisit(id);
}

// The model's answer to one visit: how many requests each next task gets, drawn as the emulated
// server draws them (the variant's multiplicative factor, rounded at random, each object sent
// down every edge with the edge's ratio as its chance). By edge of the task, in `next_counts_`.
const std::vector<int>& World::NextParameters(int task, int variant) {
  const model::Task& t = pipeline.spec.tasks[task];
  const double factor = t.variants[variant < 0 ? 0 : variant].multiplicative_factor;
  std::uniform_real_distribution<double> u(0, 1);
  const double whole = std::floor(factor);
  const int found = static_cast<int>(whole) + (u(rng) < factor - whole ? 1 : 0);
  current.emitted[{task, variant}] += found;
  next_counts_.assign(t.next.size(), 0);
  for (size_t e = 0; e < t.next.size(); ++e) {
    for (int i = 0; i < found; ++i) next_counts_[e] += u(rng) < t.next[e].ratio ? 1 : 0;
  }
  return next_counts_;
}

const std::optional<std::vector<World::NextHop>>& World::NextOf(int path, int task,
                                                                const std::vector<int>& counts) {
  // The router's graph decides; a walk asks the same few questions all run long, so each is
  // asked of it once and its answer kept by task index.
  next_key_.assign({path, task});
  next_key_.insert(next_key_.end(), counts.begin(), counts.end());
  auto it = next_hops_.find(next_key_);
  if (it != next_hops_.end()) return it->second;
  if (next_hops_.size() >= kMaxNextHops) next_hops_.clear();  // fan-outs past any pipeline's
  it = next_hops_.emplace(next_key_, std::nullopt).first;
  const model::Task& t = pipeline.spec.tasks[task];
  router::NextCounts named;
  for (size_t e = 0; e < t.next.size(); ++e) named[t.next[e].task] = counts[e];
  auto next = graph->Next(PathName(path), t.name, named);
  if (next) {
    it->second.emplace();
    for (const router::Call& c : *next)
      it->second->push_back({pipeline.TaskIndex(c.task), c.count});
  }
  return it->second;
}

void World::OnCallDone(std::int64_t id, double queue_ms) {
  Call call = std::move(calls.at(id));
  calls.Erase(id);
  const Pod& pod = pods[call.pod];
  const Deployment& d = deployments[pod.deployment];
  if (auto pool = pools.find(d.task); pool != pools.end() && pool->second.kairos) {
    pool->second.kairos->Complete(call.pod);
    MatchPool(d.task);
  }
  const double service_ms = now_ms_ - call.sent_ms - std::max(0.0, queue_ms);
  auto& sample = current.batch_service[{pod.deployment, call.rows}];
  sample.first += service_ms / 1000;
  sample.second += 1;
  for (std::int64_t vid : call.visits) {
    Visit& v = visits.at(vid);
    Walk& w = walks.at(v.walk);
    if (now_ms_ > w.deadline_ms + kGraceMs) {
      FailWalk(v.walk, 504, "deadline");
      EndVisit(vid);
      continue;
    }
    current.variant_ok[{d.task, d.variant}] += 1;
    const auto& next = NextOf(w.path, d.task, NextParameters(d.task, d.variant));
    if (!next) {
      FailWalk(v.walk, 502, "bad next");
      EndVisit(vid);
      continue;
    }
    const double accuracy = v.accuracy * pipeline.spec.tasks[d.task].variants[d.variant].accuracy;
    if (next->empty()) {
      w.ended.emplace_back(w.path >= 0 ? w.path : PathIndexOf(v.trail), now_ms_);
      w.accuracy_sum += accuracy;
      EndVisit(vid);
      continue;
    }
    std::vector<std::int64_t> started;
    for (const NextHop& hop : *next) {
      for (int i = 0; i < hop.count; ++i) {
        const std::int64_t nv = visits.Add(Visit{.walk = v.walk,
                                                 .task = hop.task,
                                                 .from_task = d.task,
                                                 .from_variant = d.variant,
                                                 .trail = v.trail,
                                                 .accuracy = accuracy});
        ++w.pending;
        started.push_back(nv);
      }
    }
    EndVisit(vid);
    for (std::int64_t nv : started) StartVisit(nv);
  }
}

int World::PathIndexOf(const std::vector<int>& trail) const {
  std::vector<std::string> names;
  names.reserve(trail.size());
  for (int t : trail) names.push_back(pipeline.spec.tasks[t].name);
  const std::string path = graph->PathOf(names);
  for (size_t i = 0; i < pipeline.spec.paths.size(); ++i) {
    if (pipeline.spec.paths[i].name == path) return static_cast<int>(i);
  }
  return -1;
}

void World::FailWalk(std::int64_t id, int code, const std::string& reason) {
  Walk& w = walks.at(id);
  if (w.code != 0) return;
  w.code = code;
  w.reason = reason;
}

void World::EndVisit(std::int64_t id) {
  const std::int64_t walk = visits.at(id).walk;
  visits.Erase(id);
  if (--walks.at(walk).pending == 0) EndWalk(walk);
}

void World::EndWalk(std::int64_t id) {
  Walk w = std::move(walks.at(id));
  walks.Erase(id);
  if (w.code == 0 && now_ms_ > w.deadline_ms + kGraceMs) {
    w.code = 504;
    w.reason = "deadline";
  }
  const int code = w.code == 0 ? 200 : w.code;
  // The paths the clients count it under: the named one; else those its trails took (the
  // answer's pipescale_paths), or none known ("unlisted") when it failed.
  std::vector<int> paths;
  if (w.path >= 0 || code != 200) {
    paths.push_back(w.path);
  } else {
    for (const auto& [p, at] : w.ended) {
      if (std::find(paths.begin(), paths.end(), p) == paths.end()) paths.push_back(p);
    }
  }
  for (int p : paths) RecordRequest(p, code, w.reason, now_ms_ - w.start_ms);
  if (code == 200 && !w.ended.empty()) {
    accuracy_sum += w.accuracy_sum / static_cast<double>(w.ended.size());
    accuracy_count += 1;
  }
}

}  // namespace pipescale::gym::engine

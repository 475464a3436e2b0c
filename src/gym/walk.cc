// The router's walk of one request in simulated time. Every decision is the router's own step
// (routing/walk.h: the door, Loki's variant and drops, the pod and MArk's spill, the end of the
// walk); here are only the events between them: the door's next look, a router batch filling,
// Kairos's queue, the calls to the pods and their answers. What it cannot see here, it does not
// model: HTTP, failed pods, the body's content.
#include <algorithm>
#include <cmath>

#include "gym/world.h"

namespace pipescale::gym::engine {
namespace {

constexpr size_t kMaxNextHops = 100000;  // answers of the graph kept

}  // namespace

int World::Loads::PodCount(int task) const { return static_cast<int>(w_.ready[task].size()); }

routing::PodLoad World::Loads::Pod(int task, int index) const {
  const int pi = w_.ready[task][index];
  const engine::Pod& p = w_.pods[pi];
  const Deployment& d = w_.deployments[p.deployment];
  return {.variant = d.variant,
          .hardware_class = d.hw_class,
          .outstanding = p.outstanding,
          .batch = w_.pod_router_batch[pi] > 0 ? 1 : p.planned_batch,
          .batch_ms = w_.pod_batch_ms[pi],
          .weight = w_.pod_weight[pi]};
}

double World::Loads::FillMs(int task, int variant) const {
  const int b = w_.BatcherFor(task, variant);
  return b < 0 ? 0 : w_.batchers[b].wait_ms;
}

std::optional<double> World::Loads::MatchedMs(int task, int rows) const {
  const auto pool = w_.pools.find(task);
  if (pool == w_.pools.end() || !pool->second.kairos) return std::nullopt;
  return pool->second.kairos->PredictMs(rows, w_.now_ms_);
}

std::optional<routing::SpillPool> World::Loads::Spill(int task) const {
  const auto pool = w_.pools.find(task);
  if (pool == w_.pools.end() || pool->second.spill_class < 0) return std::nullopt;
  return routing::SpillPool{.hardware_class = pool->second.spill_class,
                            .rt_max_ms = pool->second.rt_max_ms};
}

int World::BatcherFor(int task, int variant) const {
  if (variant >= 0) {
    const auto it = batcher_of.find({task, variant});
    return it != batcher_of.end() && batchers[it->second].wait_ms >= 0 ? it->second : -1;
  }
  for (size_t i = 0; i < batchers.size(); ++i) {
    if (batchers[i].task == task && batchers[i].wait_ms >= 0) return static_cast<int>(i);
  }
  return -1;
}

void World::ResetWalker() { walker.emplace(*graph, loki.get(), policy); }

void World::OnArrival(int path, int rows) {
  const std::int64_t id = walks.Add(Walk{.state = walker->Start(path, rows, now_ms_)});
  current.query_rows[rows] += 1;
  current.path_arrivals[path] += 1;
  for (int task : graph->PathTasks(path)) current.task_arrivals[task] += 1;
  OnDoorPoll(id);
}

void World::OnDoorPoll(std::int64_t id) {
  Walk& w = walks.at(id);
  long& backlog = cold_backlog[w.state.path];
  const routing::DoorStep step =
      walker->AtDoor(loads_, w.state, now_ms_, static_cast<double>(backlog));
  if (w.state.cold && !w.state.behind_held && !w.in_backlog) {
    w.in_backlog = true;
    ++backlog;
  }
  AtDoor(w, step.kind == routing::DoorStep::Kind::kWait);
  switch (step.kind) {
    case routing::DoorStep::Kind::kRefuse:
      current.shed[graph->PathName(w.state.path) + "/" + step.refusal.reason] += 1;
      w.state.Fail(step.refusal);
      EndWalk(id);
      return;
    case routing::DoorStep::Kind::kWait:
      At(step.again_ms, EventKind::kDoorPoll, id);
      return;
    case routing::DoorStep::Kind::kAdmit:
      break;
  }
  const std::vector<int>& entry = graph->Entry(w.state.path);
  w.pending += static_cast<int>(entry.size());
  std::vector<std::int64_t> started;
  started.reserve(entry.size());
  for (const int task : entry) started.push_back(visits.Add(Visit{.walk = id, .task = task}));
  for (const std::int64_t v : started) StartVisit(v);
}

void World::StartVisit(std::int64_t id) {
  Visit& v = visits.at(id);
  Walk& w = walks.at(v.walk);
  if (w.state.path < 0) v.trail.push_back(v.task);
  // A draw only where a plan routes: the other examples' runs keep their streams.
  const double u = loki ? std::uniform_real_distribution<double>(0, 1)(rng) : 0;
  const routing::VariantStep step =
      walker->ChooseVariant(loads_, w.state, v.task, v.from_task, v.from_variant, now_ms_, u);
  switch (step.kind) {
    case routing::VariantStep::Kind::kDrop:
      current.drops[step.drop.reason] += 1;
      w.state.Fail(step.drop);
      EndVisit(id);
      return;
    case routing::VariantStep::Kind::kReroute:
      current.reroutes += 1;
      break;
    case routing::VariantStep::Kind::kGo:
      break;
  }
  v.variant = step.variant;
  Send(id);
}

void World::FailVisit(std::int64_t id, routing::Failure failure) {
  walks.at(visits.at(id).walk).state.Fail(std::move(failure));
  EndVisit(id);
}

void World::Send(std::int64_t id) {
  Visit& v = visits.at(id);
  Walk& w = walks.at(v.walk);
  if (auto expired = walker->BeforeCall(w.state, v.task, now_ms_)) {
    FailVisit(id, routing::FailureOf(*expired));
    return;
  }
  // A router-formed batch: the plan's variant's batcher, or the task's first.
  if (const int b = BatcherFor(v.task, v.variant); b >= 0) {
    batchers[b].former->Add(static_cast<std::uint64_t>(id), w.state.rows, now_ms_);
    OnBatcherDue(b);
    return;
  }
  if (auto pool = pools.find(v.task); pool != pools.end() && pool->second.kairos) {
    if (!pool->second.has_replicas) {
      FailVisit(id, routing::FailureOf(walker->NoPod(v.task)));
      return;
    }
    if (!pool->second.kairos->Arrive(static_cast<std::uint64_t>(id), w.state.rows, now_ms_)) {
      current.drops[routing::kPoolFull] += 1;
      FailVisit(id, walker->PoolFull(v.task));
      return;
    }
    v.kairos_waiting = true;
    At(w.state.deadline_ms, EventKind::kPoolExpire, id);
    MatchPool(v.task);
    return;
  }
  const int pod = PickPod(v.task, v.variant, v.tried_pod);
  if (pod < 0) {
    FailVisit(id, routing::FailureOf(walker->NoPod(v.task)));
    return;
  }
  SendCall(Call{.visits = {id}, .rows = w.state.rows}, pod);
}

int World::PickPod(int task, int variant, int tried) {
  const double u = std::uniform_real_distribution<double>(0, 1)(rng);
  const std::vector<int>& mine = ready[task];
  const auto at = std::find(mine.begin(), mine.end(), tried);
  const int tried_index = at == mine.end() ? -1 : static_cast<int>(at - mine.begin());
  walker->PickPod(loads_, task, variant, tried_index, u, pick_);
  if (pick_.spilled) current.spills[task] += 1;
  return pick_.pod < 0 ? -1 : ready[task][pick_.pod];
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
      call.rows += walks.at(visits.at(static_cast<std::int64_t>(id)).walk).state.rows;
    }
    current.batch_rows[batcher.task].first += call.rows;
    current.batch_rows[batcher.task].second += 1;
    const int pod = PickPod(batcher.task, batcher.variant);
    if (pod < 0) {
      for (std::int64_t v : call.visits)
        FailVisit(v, routing::FailureOf(walker->NoPod(batcher.task)));
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
  for (const routing::KairosQueue::Start& s : pool.kairos->Match(now_ms_)) {
    const auto id = static_cast<std::int64_t>(s.query);
    Visit& v = visits.at(id);
    v.kairos_waiting = false;
    SendCall(Call{.visits = {id}, .rows = walks.at(v.walk).state.rows}, s.replica);
  }
}

void World::OnPoolExpire(std::int64_t id) {
  const Visit* v = visits.Find(id);
  if (v == nullptr || !v->kairos_waiting) return;
  pools.at(v->task).kairos->Leave(static_cast<std::uint64_t>(id));
  FailVisit(id, routing::FailureOf({ErrorKind::kExpired, "the deadline passed while task " +
                                                             graph->TaskName(v->task) +
                                                             " waited for a replica"}));
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

const Result<std::vector<routing::Call>>& World::NextOf(int path, int task,
                                                        const std::vector<int>& counts) {
  // The router's graph decides; a walk asks the same few questions all run long, so each is
  // asked of it once and its answer kept.
  next_key_.assign({path, task});
  next_key_.insert(next_key_.end(), counts.begin(), counts.end());
  auto it = next_hops_.find(next_key_);
  if (it != next_hops_.end()) return it->second;
  if (next_hops_.size() >= kMaxNextHops) next_hops_.clear();  // fan-outs past any pipeline's
  const model::Task& t = pipeline.spec.tasks[task];
  routing::NextCounts named;
  for (size_t e = 0; e < t.next.size(); ++e) named[t.next[e].task] = counts[e];
  return next_hops_.emplace(next_key_, graph->Next(path, task, named)).first->second;
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
  for (std::int64_t vid : call.visits) OnAnswered(vid, d.task, d.variant);
}

// A pod's queue policy turned the call away (a 503): as the router does, each of its visits is
// tried once more on another pod, or fails with what the pod said.
void World::OnCallRejected(std::int64_t id) {
  Call call = std::move(calls.at(id));
  calls.Erase(id);
  const int task = deployments[pods[call.pod].deployment].task;
  const routing::CallOutcome outcome{.status = 503, .detail = "its queue timeout passed"};
  for (std::int64_t vid : call.visits) {
    Visit& v = visits.at(vid);
    routing::CallVerdict verdict =
        walker->AfterCall(walks.at(v.walk).state, task, v.attempt, outcome, now_ms_);
    const bool elsewhere = ready[task].size() > 1;
    if (verdict.kind == routing::CallVerdict::Kind::kRetry && elsewhere) {
      ++v.attempt;
      v.tried_pod = call.pod;
      Send(vid);
      continue;
    }
    FailVisit(vid, routing::FailureOf(verdict.error));
  }
}

void World::OnAnswered(std::int64_t id, int task, int variant) {
  Visit& v = visits.at(id);
  Walk& w = walks.at(v.walk);
  if (auto late = walker->AfterAnswer(w.state, now_ms_)) {
    FailVisit(id, std::move(*late));
    return;
  }
  current.variant_ok[{task, variant}] += 1;
  const auto& next = NextOf(w.state.path, task, NextParameters(task, variant));
  if (!next) {
    FailVisit(id, walker->BadAnswer(task, next.error()));
    return;
  }
  const double accuracy = v.accuracy * pipeline.spec.tasks[task].variants[variant].accuracy;
  if (next->empty()) {
    walker->EndTrail(w.state, v.trail, now_ms_);
    w.accuracy_sum += accuracy;
    EndVisit(id);
    return;
  }
  std::vector<std::int64_t> started;
  for (const routing::Call& hop : *next) {
    for (int i = 0; i < hop.count; ++i) {
      started.push_back(visits.Add(Visit{.walk = v.walk,
                                         .task = hop.task,
                                         .from_task = task,
                                         .from_variant = variant,
                                         .trail = v.trail,
                                         .accuracy = accuracy}));
      ++w.pending;
    }
  }
  EndVisit(id);
  for (std::int64_t nv : started) StartVisit(nv);
}

void World::EndVisit(std::int64_t id) {
  const std::int64_t walk = visits.at(id).walk;
  visits.Erase(id);
  if (--walks.at(walk).pending == 0) EndWalk(walk);
}

void World::EndWalk(std::int64_t id) {
  Walk w = std::move(walks.at(id));
  walks.Erase(id);
  if (w.in_backlog) --cold_backlog[w.state.path];
  const routing::Ending ending = walker->Finish(w.state, now_ms_);
  for (const routing::Ending::Count& count : ending.counts) {
    RecordRequest(count.path, static_cast<int>(ending.status), ending.failure.reason, count.ms,
                  w.state.cold);
  }
  if (ending.status == 200 && !w.state.ended.empty()) {
    accuracy_sum += w.accuracy_sum / static_cast<double>(w.state.ended.size());
    accuracy_count += 1;
  }
}

}  // namespace pipescale::gym::engine

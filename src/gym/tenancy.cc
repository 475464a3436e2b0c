// Several pipelines on one node file, in one simulated time: the worlds' events are handled in
// one order (the earliest first, across the worlds), their pods take room on the same nodes, and
// each pipeline's operator counts every pod and, with the arbiter, plans within its share.
#include <chrono>
#include <limits>
#include <set>

#include "gym/world.h"

namespace pipescale::gym {
namespace engine {

bool Tenancy::AllReady() const {
  return std::all_of(worlds.begin(), worlds.end(),
                     [](const World* w) { return w->ReadyToStart(); });
}

std::uint64_t Tenancy::PodsChanged() const {
  std::uint64_t n = 0;
  for (const World* w : worlds) n += w->pods_changed;
  return n;
}

std::vector<nlohmann::json> Tenancy::PodObjects() const {
  std::vector<nlohmann::json> out;
  for (const World* w : worlds) {
    for (nlohmann::json& pod : w->PodObjects()) out.push_back(std::move(pod));
  }
  return out;
}

void Tenancy::RoomFreed(const World& from) {
  for (World* w : worlds) {
    if (w == &from) continue;
    w->now_ms_ = std::max(w->now_ms_, from.now_ms_);  // no event of it is earlier (one order)
    w->PlacePending();
  }
}

}  // namespace engine

Result<std::vector<PolicyReport>> SimulateTogether(const std::vector<Tenant>& tenants,
                                                   const Options& options, bool divide) {
  if (tenants.empty()) return std::vector<PolicyReport>{};
  if (options.nodes.empty()) {
    return Error{ErrorKind::kInvalid, "pipelines that share a cluster need its nodes (--nodes)"};
  }
  const auto wall = std::chrono::steady_clock::now();
  engine::Tenancy tenancy;
  std::vector<std::unique_ptr<engine::World>> worlds;
  std::map<std::string, engine::World*> by_key;
  for (const Tenant& tenant : tenants) {
    Options o = options;
    o.policy = "";  // each pipeline's own optimizer
    o.trace = tenant.trace;
    if (!worlds.empty()) o.progress = nullptr;  // one bar, the first pipeline's
    auto world = engine::MakeWorld(tenant.pipeline, o);
    if (!world) return world.error();
    const std::string key = reconciler::PipelineKey((*world)->pipeline);
    if (!by_key.emplace(key, world->get()).second) {
      return Error{ErrorKind::kInvalid, "two pipelines are named " + key};
    }
    (*world)->options.policy = divide ? kShared : kFirstCome;
    worlds.push_back(std::move(*world));
  }
  tenancy.node_free = worlds.front()->node_free;
  double clock = 0;
  if (divide) {
    tenancy.arbiter = std::make_unique<reconciler::Arbiter>([&](const std::string& key) {
      const auto it = by_key.find(key);
      if (it == by_key.end()) return;
      it->second->now_ms_ = std::max(it->second->now_ms_, clock);
      it->second->Nudge();
    });
  }
  for (auto& w : worlds) {
    w->tenancy = &tenancy;
    tenancy.worlds.push_back(w.get());
  }
  for (auto& w : worlds) w->Begin();
  while (true) {
    engine::World* next = nullptr;
    for (auto& w : worlds) {
      if (next == nullptr || w->NextAt() < next->NextAt()) next = w.get();
    }
    if (next == nullptr || next->NextAt() == std::numeric_limits<double>::infinity()) break;
    clock = next->NextAt();
    next->HandleNext();
  }
  std::vector<PolicyReport> reports;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall).count();
  for (auto& w : worlds) {
    reports.push_back(w->End());
    reports.back().wall_seconds = seconds;
  }
  return reports;
}

}  // namespace pipescale::gym

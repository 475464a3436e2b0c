// The simulated cluster: the operator's writes applied to Deployment objects as the apiserver
// would keep them, pods created and removed to match (a template change rolls them), each
// placed on a node with room as the scheduler would, Ready after its class's start-up.
#include <algorithm>

#include "api/deployment.h"
#include "api/deployment_view.h"
#include "api/quantity.h"
#include "common/flags.h"
#include "gym/world.h"
#include "model/limits.h"
#include "routing/endpoints.h"

namespace pipescale::gym::engine {
namespace {

using nlohmann::json;

const json& Field(const json& j, const char* key) {
  static const json kNull;
  return j.is_object() && j.contains(key) ? j[key] : kNull;
}

json& Container(json& deployment) {
  return deployment["spec"]["template"]["spec"]["containers"][0];
}

// A container's env value of `name`, or "".
std::string Env(const json& container, const std::string& name) {
  for (const json& e : Field(container, "env")) {
    if (e.value("name", "") == name && e.contains("value") && e["value"].is_string()) {
      return e["value"];
    }
  }
  return "";
}

// The model server's flags in the container's args, as `--flag=value`.
std::string Arg(const json& container, const std::string& flag) {
  for (const json& a : Field(container, "args")) {
    if (!a.is_string()) continue;
    const std::string s = a;
    if (s.rfind(flag + "=", 0) == 0) return s.substr(flag.size() + 1);
  }
  return "";
}

// Requests of the pod template's containers; an extended resource only limited counts its limit.
std::map<std::string, double> Requests(const json& deployment) {
  std::map<std::string, double> out;
  for (const json& c :
       Field(Field(Field(Field(deployment, "spec"), "template"), "spec"), "containers")) {
    const json& resources = Field(c, "resources");
    for (const char* part : {"limits", "requests"}) {
      for (const auto& [name, value] : Field(resources, part).items()) {
        const bool extended = name.find('/') != std::string::npos;
        if (std::string(part) == "limits" && !extended) continue;
        if (!value.is_string() && !value.is_number()) continue;
        const auto q =
            api::ParseQuantity(value.is_string() ? value.get<std::string>() : value.dump());
        if (q) out[name] = std::max(out[name], *q);
      }
    }
  }
  return out;
}

}  // namespace

int World::EnsureDeployment(int task, int variant, int hw_class, int batch) {
  const model::Task& t = pipeline.spec.tasks[task];
  const model::Variant& v = t.variants[variant];
  const std::string name =
      api::DeploymentName(pipeline, t, v, pipeline.spec.hardware_classes[hw_class].name);
  if (auto it = deployment_index.find(name); it != deployment_index.end()) return it->second;
  reconciler::DeploymentWrite create{.kind = reconciler::DeploymentWrite::Kind::kCreate,
                                     .name = name};
  create.body = api::BuildDeployment(pipeline, {.name = pipeline.name, .uid = "gym"}, t, v,
                                     pipeline.spec.hardware_classes[hw_class], 0, batch);
  WriteDeployment(create);
  return deployment_index.at(name);
}

int World::DeploymentFor(const json& written) {
  const std::string name = Field(Field(written, "metadata"), "name").get<std::string>();
  if (auto it = deployment_index.find(name); it != deployment_index.end()) return it->second;
  const json& labels = Field(Field(written, "metadata"), "labels");
  Deployment d;
  d.name = name;
  d.task = pipeline.TaskIndex(labels.value("pipescale.io/task", ""));
  d.hw_class = pipeline.HardwareClassIndex(labels.value("pipescale.io/hardware-class", ""));
  const std::string variant = labels.value("pipescale.io/variant", "");
  d.variant = 0;
  if (d.task >= 0) {
    const auto& vs = pipeline.spec.tasks[d.task].variants;
    for (size_t i = 0; i < vs.size(); ++i) {
      if (vs[i].name == variant) d.variant = static_cast<int>(i);
    }
  }
  deployments.push_back(std::move(d));
  deployment_index[name] = static_cast<int>(deployments.size()) - 1;
  return static_cast<int>(deployments.size()) - 1;
}

void World::WriteDeployment(const reconciler::DeploymentWrite& write) {
  using Kind = reconciler::DeploymentWrite::Kind;
  const auto found = deployment_index.find(write.name);
  if (write.kind == Kind::kCreate && found == deployment_index.end()) {
    const int i = DeploymentFor(write.body);
    deployments[i].object = write.body;
  } else if (found == deployment_index.end()) {
    return;  // a patch of what does not exist: the apiserver answers 404
  } else if (write.kind == Kind::kDelete) {
    deployments[found->second].object["spec"]["replicas"] = 0;
  } else {
    json& target = deployments[found->second].object;
    json patch = write.body;
    // Strategic merge: the first container's env merges by name; the rest as a merge patch.
    json containers = json::array();
    if (patch.contains("spec") && patch["spec"].contains("template")) {
      containers = Field(Field(patch["spec"]["template"], "spec"), "containers");
      patch["spec"].erase("template");
    }
    target.merge_patch(patch);
    for (const json& c : containers) {
      for (const json& e : Field(c, "env")) {
        json& env = Container(target)["env"];
        auto same = std::find_if(env.begin(), env.end(), [&](const json& x) {
          return x.value("name", "") == e.value("name", "");
        });
        if (same != env.end()) {
          *same = e;
        } else {
          env.push_back(e);
        }
      }
    }
  }
  Deployment& d = deployments[deployment_index.at(write.name)];
  d.object_changed = true;
  const json& container = Container(d.object);
  const model::Variant& v = pipeline.spec.tasks[d.task].variants[d.variant];
  const std::string batch = v.RouterBatches() ? "" : Env(container, v.batch_env);
  const auto server_batch = ParseInteger(v.batch_env, batch, 1, limits::kMaxBatch);
  const int new_batch = d.server ? d.server->batch : server_batch ? *server_batch : 1;
  // The model server's queue: its flag, else the plan's env (api/deployment_view.h), else its
  // default; a baseline's server holds its own.
  std::string wait = Arg(container, "--max-wait-ms");
  if (wait.empty()) wait = Env(container, api::kMaxQueueDelayEnv);
  const std::string timeout = Env(container, api::kQueueTimeoutEnv);
  const std::string scale = Env(container, "PIPESCALE_LATENCY_SCALE");
  // What the router profiles the pod at: its own reading of the pod's env.
  const int new_planned =
      d.server || batch.empty()
          ? new_batch
          : routing::PlannedBatch(
                Field(Field(Field(Field(d.object, "spec"), "template"), "spec"), "containers"),
                v.batch_env);
  if (new_batch != d.batch || new_planned != d.planned_batch || d.revision == 0) ++d.revision;
  d.batch = new_batch;
  d.planned_batch = new_planned;
  d.max_wait_ms = d.server ? d.server->max_delay_ms : wait.empty() ? 1000 : std::atof(wait.c_str());
  d.queue_timeout_ms = d.server          ? d.server->queue_timeout_ms
                       : timeout.empty() ? 0
                                         : std::max(0.0, std::atof(timeout.c_str()));
  d.latency_scale = scale.empty() ? 1 : std::max(0.01, std::atof(scale.c_str()));
  d.replicas = std::max(0, Field(d.object["spec"], "replicas").get<int>());
  ++report.scaling_actions;
}

void World::SetReplicas(int deployment, int replicas) {
  Deployment& d = deployments[deployment];
  if (d.replicas == replicas) return;
  reconciler::DeploymentWrite w{.kind = reconciler::DeploymentWrite::Kind::kPatch, .name = d.name};
  w.body = {{"spec", {{"replicas", replicas}}}};
  WriteDeployment(w);
}

void World::ApplyDecision(const reconciler::Decision& decision) {
  for (const reconciler::DeploymentWrite& w : decision.writes) WriteDeployment(w);
  for (const auto* cm : {&decision.routing, &decision.router_pipeline}) {
    if (!*cm) continue;
    if ((*cm)->create || !routing_config_map) {
      routing_config_map = (*cm)->body;
    } else {
      routing_config_map->merge_patch((*cm)->body);
    }
  }
  for (const reconciler::ObjectWrite& w : decision.router) {
    auto slot = router_objects.find(w.type.plural);
    if (w.create || slot == router_objects.end()) {
      router_objects[w.type.plural] = w.body;
    } else {
      slot->second.merge_patch(w.body);
    }
  }
  Reconcile();
  RebuildRouting();
}

void World::CreatePod(int deployment) {
  const Deployment& d = deployments[deployment];
  Pod p;
  p.deployment = deployment;
  p.revision = d.revision;
  p.created_ms = now_ms_;
  p.batch = d.batch;
  p.planned_batch = d.planned_batch;
  p.max_wait_ms = d.max_wait_ms;
  p.queue_timeout_ms = d.queue_timeout_ms;
  p.latency_scale = d.latency_scale;
  pods.push_back(std::move(p));
  live_pods.push_back(static_cast<int>(pods.size()) - 1);
  ++pods_changed;
  ++report.pod_starts;
  PodChanged();
}

void World::Terminate(int pod) {
  Pod& p = pods[pod];
  const bool serving = p.state == Pod::State::kReady || p.state == Pod::State::kTerminating;
  p.state = Pod::State::kTerminating;
  ++pods_changed;
  PodChanged();
  // It leaves the router's endpoints now and goes once its calls are answered.
  if (!serving || p.outstanding == 0) At(now_ms_, EventKind::kPodGone, pod);
}

void World::Reconcile() {
  for (size_t di = 0; di < deployments.size(); ++di) {
    const Deployment& d = deployments[di];
    std::vector<int> fresh, old;
    for (int pi : live_pods) {
      const Pod& p = pods[pi];
      if (p.deployment != static_cast<int>(di) || p.state == Pod::State::kTerminating) continue;
      (p.revision == d.revision ? fresh : old).push_back(pi);
    }
    // A rollout: the new revision's pods come up first (surge); an old pod goes as each new one
    // is Ready (OnPodReady), or at once when there is no new one to wait for.
    while (static_cast<int>(fresh.size()) < d.replicas) {
      CreatePod(static_cast<int>(di));
      fresh.push_back(static_cast<int>(pods.size()) - 1);
    }
    // Scale-in: the newest first, as a ReplicaSet picks not-Ready and younger pods.
    std::sort(fresh.begin(), fresh.end(), [&](int a, int b) {
      const bool ra = pods[a].state == Pod::State::kReady, rb = pods[b].state == Pod::State::kReady;
      return ra != rb ? rb : pods[a].created_ms > pods[b].created_ms;
    });
    for (size_t i = 0; fresh.size() - i > static_cast<size_t>(d.replicas); ++i) {
      Terminate(fresh[i]);
    }
    int ready_new = 0;
    for (int pi : fresh) ready_new += pods[pi].state == Pod::State::kReady ? 1 : 0;
    for (int pi : old) {
      if (d.replicas == 0 || ready_new-- > 0) Terminate(pi);
    }
  }
  PlacePending();
}

bool World::Fits(const json& node, int deployment) const {
  const json& spec = deployments[deployment].object["spec"]["template"]["spec"];
  const json& labels = node["metadata"]["labels"];
  for (const auto& [k, v] : Field(spec, "nodeSelector").items()) {
    if (!labels.contains(k) || labels[k] != v) return false;
  }
  for (const json& taint : Field(Field(node, "spec"), "taints")) {
    if (taint.value("effect", "") != "NoSchedule") continue;
    bool tolerated = false;
    for (const json& t : Field(spec, "tolerations")) {
      tolerated |=
          t.value("key", "") == taint.value("key", "") &&
          (t.value("operator", "") == "Exists" || t.value("value", "") == taint.value("value", ""));
    }
    if (!tolerated) return false;
  }
  return true;
}

void World::PlacePending() {
  for (int pi : live_pods) {
    Pod& p = pods[pi];
    if (p.state != Pod::State::kPending) continue;
    const std::map<std::string, double> need = Requests(deployments[p.deployment].object);
    for (size_t n = 0; n < nodes.size() && p.node < 0; ++n) {
      if (!Fits(nodes[n], p.deployment)) continue;
      std::map<std::string, double>& free = Free()[n];
      bool room = free["pods"] >= 1;
      for (const auto& [r, q] : need) room &= free[r] + 1e-9 >= q;
      if (!room) continue;
      for (const auto& [r, q] : need) free[r] -= q;
      free["pods"] -= 1;
      p.node = static_cast<int>(n);
    }
    if (nodes.empty()) p.node = 0;  // no cluster file: room without bound
    if (p.node < 0) continue;
    p.state = Pod::State::kStarting;
    ++pods_changed;
    PodChanged();  // bound to its node
    const Deployment& d = deployments[p.deployment];
    const double startup = pipeline.spec.hardware_classes[d.hw_class].startup_seconds;
    // Pods of one scale-out do not turn Ready together: the controller creates them one by one,
    // the scheduler binds each, the kubelet starts each and probes it on its own period.
    std::uniform_real_distribution<double> spread(0, options.pod_start_spread_s);
    const double ready_s = options.pod_start_overhead_s + spread(rng) + startup;
    At(now_ms_ + 1000 * ready_s, EventKind::kPodReady, pi);
  }
}

void World::OnPodReady(int pod) {
  Pod& p = pods[pod];
  if (p.state != Pod::State::kStarting) return;  // terminated while starting
  p.state = Pod::State::kReady;
  ++pods_changed;
  p.held_since_ms = now_ms_;
  Reconcile();  // a rollout's old pod may go now
  RebuildRouting();
  PodChanged();
}

void World::OnPodGone(int pod) {
  Pod& p = pods[pod];
  if (p.state == Pod::State::kGone) return;
  if (p.node >= 0 && !nodes.empty()) {
    std::map<std::string, double>& free = Free()[p.node];
    for (const auto& [r, q] : Requests(deployments[p.deployment].object)) free[r] += q;
    free["pods"] += 1;
  }
  p.state = Pod::State::kGone;
  ++pods_changed;
  live_pods.erase(std::find(live_pods.begin(), live_pods.end(), pod));
  RebuildRouting();
  PlacePending();
  if (tenancy != nullptr) tenancy->RoomFreed(*this);
  PodChanged();
}

void World::UpdateDeploymentObjects(std::map<std::string, json>& out) {
  for (size_t di = 0; di < deployments.size(); ++di) {
    Deployment& dep = deployments[di];
    json& d = out[dep.name];
    // The object only when a write changed it (a copy of every Deployment at every interval was
    // a fifth of a simulated day); the status, a few counts, always.
    if (dep.object_changed) {
      d = dep.object;
      d["metadata"]["generation"] = 1;
      dep.object_changed = false;
    }
    int replicas = 0, ready_count = 0, updated = 0;
    for (int pi : live_pods) {
      const Pod& p = pods[pi];
      if (p.deployment != static_cast<int>(di)) continue;
      ++replicas;
      ready_count += p.state == Pod::State::kReady ? 1 : 0;
      updated += p.revision == dep.revision ? 1 : 0;
    }
    d["status"] = {{"replicas", replicas},
                   {"readyReplicas", ready_count},
                   {"availableReplicas", ready_count},
                   {"updatedReplicas", updated},
                   {"observedGeneration", 1}};
  }
}

std::vector<json> World::PodObjects() const {
  std::vector<json> out;
  for (int pi : live_pods) {
    const Pod& p = pods[pi];
    const json& tmpl = deployments[p.deployment].object["spec"]["template"];
    json pod = {{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata",
                 {{"name", "pod-" + std::to_string(pi)},
                  {"namespace", pipeline.namespace_name},
                  {"labels", Field(Field(tmpl, "metadata"), "labels")}}},
                {"spec", Field(tmpl, "spec")},
                {"status", {{"phase", p.state == Pod::State::kPending ? "Pending" : "Running"}}}};
    if (p.node >= 0 && !nodes.empty()) {
      pod["spec"]["nodeName"] = nodes[p.node]["metadata"]["name"];
    } else if (p.state == Pod::State::kPending) {
      pod["status"]["conditions"] = json::array(
          {{{"type", "PodScheduled"}, {"status", "False"}, {"reason", "Unschedulable"}}});
    }
    out.push_back(std::move(pod));
  }
  return out;
}

}  // namespace pipescale::gym::engine

#include "node_agent/agent.h"

#include <unistd.h>

#include <filesystem>
#include <regex>
#include <thread>

#include "common/json_fields.h"
#include "common/log.h"
#include "kube/config.h"
#include "node_agent/hardware.h"
#include "node_agent/probe.h"

namespace pipescale::emulator {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using State = ContainerView::State;
namespace fs = std::filesystem;

const kube::ResourceType kSecrets{"v1", "secrets", true};
const kube::ResourceType kPipelines{"pipescale.io/v1alpha1", "inferencepipelines", true};
constexpr const char* kServiceAccountMount = "/var/run/secrets/kubernetes.io/serviceaccount";

// A Secret's value, or "" when it is not base64 (the kubelet would fail the pod; here it runs).
std::string SecretValue(const std::string& in) {
  auto decoded = kube::Base64Decode(in, "secret");
  return decoded ? std::move(*decoded) : "";
}

// $(NAME) in args becomes the variable's value, as the kubelet expands it.
std::string Expand(const std::string& arg, const std::map<std::string, std::string>& env) {
  static const std::regex var(R"(\$\(([A-Za-z_][A-Za-z0-9_]*)\))");
  std::string out;
  auto begin = std::sregex_iterator(arg.begin(), arg.end(), var);
  size_t last = 0;
  for (auto it = begin; it != std::sregex_iterator(); ++it) {
    out += arg.substr(last, it->position() - last);
    auto found = env.find((*it)[1]);
    out += found != env.end() ? found->second : it->str();
    last = it->position() + it->length();
  }
  return out + arg.substr(last);
}

std::string FieldValue(const json& pod, const std::string& path, const std::string& pod_ip) {
  const json& meta = pod["metadata"];
  if (path == "metadata.name") return meta.value("name", "");
  if (path == "metadata.namespace") return meta.value("namespace", "");
  if (path == "metadata.uid") return meta.value("uid", "");
  if (path == "spec.nodeName") return pod["spec"].value("nodeName", "");
  if (path == "spec.serviceAccountName") return pod["spec"].value("serviceAccountName", "");
  if (path == "status.podIP") return pod_ip;
  if (path == "status.hostIP") return "127.0.0.1";
  static const std::regex label(R"(metadata\.(labels|annotations)\['([^']+)'\])");
  if (std::smatch m; std::regex_match(path, m, label)) {
    return meta.value(m[1].str(), json::object()).value(m[2].str(), "");
  }
  return "";
}

// The status of a pod status's Ready condition ("" when it has none).
std::string ReadyOf(const json& status) {
  if (!status.is_object()) return "";
  for (const json& c : status.value("conditions", json::array())) {
    if (c.is_object() && c.value("type", "") == "Ready") return c.value("status", "");
  }
  return "";
}

int Seconds(const json& probe, const char* key, int fallback) {
  return probe.value(key, json(fallback)).is_number_integer() ? probe.value(key, fallback)
                                                              : fallback;
}

}  // namespace

Agent::Agent(const kube::Client& client, AgentOptions options)
    : client_(client),
      options_(std::move(options)),
      nodes_(client, options_.nodes_file),
      leases_(client),
      pods_(client,
            {.type = kube::kPods,
             .indexes = {{"node",
                          [](const json& pod) {
                            return StringField(Member(pod, "spec"), "nodeName");
                          }}}},
            [this](const std::string&, const json&) {
              {
                std::lock_guard lock(changed_mu_);
                changed_ = true;
              }
              changed_cv_.notify_one();
            }),
      pipelines_(client, {.type = kPipelines}, [](const std::string&, const json&) {}) {}

Agent::~Agent() = default;

void Agent::Run(const std::atomic<bool>& stop) {
  if (nodes_.Sync()) leases_.Set(nodes_.uids());
  std::thread leases([&] { leases_.Run(stop); });
  pods_.Start();
  pipelines_.Start();
  pods_.WaitForSync(30s);
  pipelines_.WaitForSync(30s);
  while (!stop) {
    Sync();
    WaitForChange(200ms);
  }
  // Every pod at once, as a node shutting down: SIGTERM to all, SIGKILL to what is left at 5 s.
  for (bool stopped = false; !stopped; std::this_thread::sleep_for(50ms)) {
    stopped = true;
    for (auto& [key, pod] : states_) {
      for (auto& c : pod.containers) {
        if (c.process) stopped = c.process->Stop(5s) && stopped;
      }
    }
  }
  leases.join();
  if (options_.delete_nodes_on_exit) nodes_.DeleteAll();
  pods_.Stop();
  pipelines_.Stop();
}

void Agent::WaitForChange(std::chrono::milliseconds most) {
  std::unique_lock lock(changed_mu_);
  changed_cv_.wait_for(lock, most, [this] { return changed_; });
  changed_ = false;
}

void Agent::Sync() {
  if (nodes_.Sync()) leases_.Set(nodes_.uids());
  std::map<std::string, json> mine;
  for (const std::string& node : nodes_.names()) {
    for (json& pod : pods_.ByIndex("node", node)) {
      std::string key = kube::ObjectKey(pod);  // before the move: `=` reads its right first
      mine[std::move(key)] = std::move(pod);
    }
  }
  for (auto it = states_.begin(); it != states_.end();) {
    auto found = mine.find(it->first);
    const json* object = nullptr;
    if (found != mine.end() && found->second["metadata"].value("uid", "") == it->second.uid) {
      object = &found->second;
    }
    if (object == nullptr || object->at("metadata").contains("deletionTimestamp")) {
      if (Terminate(it->second, object)) {
        it = states_.erase(it);
        continue;
      }
    } else {
      Tend(it->second);
      Report(it->second, *object);
    }
    ++it;
  }
  for (const auto& [key, pod] : mine) {
    if (states_.contains(key)) continue;
    if (!pod["metadata"].contains("deletionTimestamp")) {
      Admit(pod);
    } else {
      // Deleted between its binding and our first look: nothing of it runs, so it goes at once
      // (else it would stay Terminating for good, as with a kubelet that never saw it).
      RemovePod(pod["metadata"].value("namespace", ""), pod["metadata"].value("name", ""));
    }
  }
}

std::string Agent::NextAddress() {
  const int n = next_address_++ % (250 * 250);
  return "127." + std::to_string(options_.network) + "." + std::to_string(n / 250) + "." +
         std::to_string(n % 250 + 2);
}

std::string Agent::Binary(const std::string& image) const {
  if (auto it = options_.images.find(image); it != options_.images.end()) return it->second;
  const auto colon = image.rfind(':');
  const auto slash = image.rfind('/');
  if (colon != std::string::npos && (slash == std::string::npos || colon > slash)) {
    if (auto it = options_.images.find(image.substr(0, colon)); it != options_.images.end()) {
      return it->second;
    }
  }
  return "";
}

void Agent::Admit(const json& object) {
  PodState& pod = states_[kube::ObjectKey(object)];
  pod.uid = object["metadata"].value("uid", "");
  pod.ns = object["metadata"].value("namespace", "");
  pod.name = object["metadata"].value("name", "");
  pod.node = object["spec"].value("nodeName", "");
  pod.spec = object;
  pod.ip = NextAddress();
  pod.start_time = Rfc3339Now();
  fs::create_directories(options_.work_dir + "/" + pod.ns + "_" + pod.name);
  for (const json& c : object["spec"].value("containers", json::array())) {
    ContainerState state;
    state.view.name = c.value("name", "");
    state.view.image = c.value("image", "");
    state.view.reason = "ContainerCreating";
    pod.containers.push_back(std::move(state));
  }
  for (size_t i = 0; i < pod.containers.size(); ++i) StartContainer(pod, i);
}

void Agent::StartContainer(PodState& pod, size_t i) {
  ContainerState& c = pod.containers[i];
  const json& spec = pod.spec["spec"]["containers"][i];
  c.view.ready = false;
  c.probe_successes = c.probe_failures = 0;
  const std::string binary = Binary(c.view.image);
  if (binary.empty()) {
    const bool first = c.view.reason != "ErrImagePull" && c.view.reason != "ImagePullBackOff";
    c.view.state = State::kWaiting;
    c.view.reason = first ? "ErrImagePull" : "ImagePullBackOff";
    c.view.message = "Back-off pulling image \"" + c.view.image + "\"";
    if (first) {
      Event(pod, c.view.name, "Warning", "Failed",
            "Failed to pull image \"" + c.view.image +
                "\": the node agent has no binary for this image (--image NAME=BINARY)");
      Event(pod, c.view.name, "Warning", "Failed", "Error: ErrImagePull");
    }
    c.next_restart = Clock::now() + std::chrono::seconds(c.backoff_seconds);
    c.backoff_seconds = std::min(c.backoff_seconds * 2, 30);
    return;
  }
  std::string error;
  auto env = Environment(pod, spec, error);
  auto sa = env ? ServiceAccountFiles(pod, spec, error) : std::map<std::string, std::string>{};
  if (!error.empty()) {
    c.view.state = State::kWaiting;
    c.view.reason = "CreateContainerConfigError";
    c.view.message = error;
    c.next_restart = Clock::now() + 2s;
    return;
  }
  Launch launch{.binary = binary, .env = *env, .service_account = sa};
  for (const char* list : {"command", "args"}) {
    const json& items = spec.value(list, json::array());
    for (size_t k = std::string(list) == "command" ? 1 : 0; k < items.size(); ++k) {
      if (items[k].is_string()) launch.args.push_back(Expand(items[k], *env));
    }
  }
  launch.work_dir = options_.work_dir + "/" + pod.ns + "_" + pod.name + "/" + c.view.name;
  launch.log_file = launch.work_dir + ".log";
  launch.hostname = pod.name;
  fs::create_directories(launch.work_dir);
  c.process = std::make_unique<Container>();
  if (!c.process->Start(launch, error)) {
    c.view.state = State::kWaiting;
    c.view.reason = "RunContainerError";
    c.view.message = error;
    return;
  }
  c.view.state = State::kRunning;
  c.view.reason.clear();
  c.view.message.clear();
  c.view.started_at = Rfc3339Now();
  const json& probe = spec.value("readinessProbe", json::object());
  c.next_probe = Clock::now() + std::chrono::seconds(Seconds(probe, "initialDelaySeconds", 0));
  if (c.view.restarts == 0) {
    Event(pod, c.view.name, "Normal", "Pulled",
          "Container image \"" + c.view.image + "\" already present on machine");
    Event(pod, c.view.name, "Normal", "Created", "Created container " + c.view.name);
    Event(pod, c.view.name, "Normal", "Started", "Started container " + c.view.name);
  }
  Log("info", "started container",
      {{"pod", pod.ns + "/" + pod.name}, {"container", c.view.name}, {"ip", pod.ip}});
}

std::optional<std::map<std::string, std::string>> Agent::Environment(const PodState& pod,
                                                                     const json& container,
                                                                     std::string& error) {
  const std::string server = client_.config().server;  // https://127.0.0.1:PORT
  const std::string port = server.substr(server.rfind(':') + 1);
  std::map<std::string, std::string> env = {
      {"PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
      {"HOSTNAME", pod.name},
      {"HOME", "/root"},
      // The `kubernetes` Service cannot have loopback endpoints, so in-cluster clients
      // reach the apiserver directly.
      {"KUBERNETES_SERVICE_HOST", "127.0.0.1"},
      {"KUBERNETES_SERVICE_PORT", port},
      {"KUBERNETES_SERVICE_PORT_HTTPS", port},
      // Processes share the machine's network: the pod's address is where they must bind.
      {"POD_IP", pod.ip}};
  const std::string pipeline =
      pod.spec["metadata"].value("labels", json::object()).value("pipescale.io/pipeline", "");
  if (!pipeline.empty()) {
    env.merge(EmulatedHardware(pod.spec, pipelines_.Get(pod.ns + "/" + pipeline)));
  }
  for (const json& e : container.value("env", json::array())) {
    const std::string name = e.value("name", "");
    if (e.contains("value")) {
      env[name] = Expand(e["value"].get<std::string>(), env);
      continue;
    }
    const json from = e.value("valueFrom", json::object());
    if (from.contains("fieldRef")) {
      env[name] = FieldValue(pod.spec, from["fieldRef"].value("fieldPath", ""), pod.ip);
      continue;
    }
    for (const char* ref : {"secretKeyRef", "configMapKeyRef"}) {
      if (!from.contains(ref)) continue;
      const bool secret = std::string(ref) == "secretKeyRef";
      const json& r = from[ref];
      auto object = client_.Get(
          kube::ObjectPath(secret ? kSecrets : kube::kConfigMaps, pod.ns, r.value("name", "")));
      const std::string key = r.value("key", "");
      if (!object || !(*object)["data"].contains(key)) {
        if (r.value("optional", false)) continue;
        error = std::string(secret ? "secret" : "configmap") + " \"" + r.value("name", "") +
                "\" or its key \"" + key + "\" not found";
        return std::nullopt;
      }
      const std::string value = (*object)["data"][key];
      env[name] = secret ? SecretValue(value) : value;
    }
  }
  return env;
}

std::map<std::string, std::string> Agent::ServiceAccountFiles(const PodState& pod,
                                                              const json& container,
                                                              std::string& error) {
  std::string volume;
  for (const json& m : container.value("volumeMounts", json::array())) {
    if (m.value("mountPath", "") == kServiceAccountMount) volume = m.value("name", "");
  }
  if (volume.empty()) return {};
  if (geteuid() != 0) {
    Log("warning", "not root: the pod runs without its service-account token",
        {{"pod", pod.ns + "/" + pod.name}});
    return {};
  }
  for (const json& v : pod.spec["spec"].value("volumes", json::array())) {
    if (v.value("name", "") != volume || !v.contains("secret")) continue;
    const std::string secret = v["secret"].value("secretName", "");
    auto object = client_.Get(kube::ObjectPath(kSecrets, pod.ns, secret));
    if (!object) {
      error = "MountVolume.SetUp failed for volume \"" + volume + "\": secret \"" + secret +
              "\" not found";
      return {};
    }
    std::map<std::string, std::string> files;
    for (const auto& [k, value] : (*object)["data"].items()) files[k] = SecretValue(value);
    return files;
  }
  return {};
}

void Agent::Tend(PodState& pod) {
  const std::string policy = pod.spec["spec"].value("restartPolicy", "Always");
  for (size_t i = 0; i < pod.containers.size(); ++i) {
    ContainerState& c = pod.containers[i];
    const json& spec = pod.spec["spec"]["containers"][i];
    if (c.view.state == State::kRunning && !c.process->Running()) {
      c.view.state = State::kTerminated;
      c.view.exit_code = c.process->exit_code().value_or(1);
      c.view.reason = c.view.exit_code == 0 ? "Completed" : "Error";
      c.view.finished_at = Rfc3339Now();
      c.view.ready = false;
      const bool again = policy == "Always" || (policy == "OnFailure" && c.view.exit_code != 0);
      if (again) {
        Event(pod, c.view.name, "Warning", "BackOff", "Back-off restarting failed container");
        c.next_restart = Clock::now() + std::chrono::seconds(c.backoff_seconds);
        c.backoff_seconds = std::min(c.backoff_seconds * 2, 30);
      }
    }
    const bool restartable =
        c.view.state == State::kWaiting ||
        (c.view.state == State::kTerminated &&
         (policy == "Always" || (policy == "OnFailure" && c.view.exit_code != 0)));
    if (restartable && Clock::now() >= c.next_restart) {
      if (c.view.state == State::kTerminated) ++c.view.restarts;
      StartContainer(pod, i);
    }
    if (c.view.state == State::kRunning) Probe(pod, c, spec);
  }
}

void Agent::Probe(PodState& pod, ContainerState& c, const json& spec) {
  if (!spec.contains("readinessProbe")) {
    c.view.ready = true;
    return;
  }
  if (Clock::now() < c.next_probe) return;
  const json& probe = spec["readinessProbe"];
  c.next_probe =
      Clock::now() + std::chrono::seconds(std::max(1, Seconds(probe, "periodSeconds", 10)));
  const auto timeout = std::chrono::seconds(std::max(1, Seconds(probe, "timeoutSeconds", 1)));
  if (RunProbe(probe, spec, pod.ip, timeout)) {
    c.probe_failures = 0;
    if (++c.probe_successes >= Seconds(probe, "successThreshold", 1)) c.view.ready = true;
  } else {
    c.probe_successes = 0;
    if (++c.probe_failures >= Seconds(probe, "failureThreshold", 3) && c.view.ready) {
      c.view.ready = false;
      Event(pod, c.view.name, "Warning", "Unhealthy", "Readiness probe failed");
    }
  }
}

bool Agent::Terminate(PodState& pod, const json* object) {
  // The grace period the API recorded for this deletion, else the pod's, else 30 s.
  int grace = pod.spec["spec"].value("terminationGracePeriodSeconds", 30);
  if (object != nullptr) grace = object->at("metadata").value("deletionGracePeriodSeconds", grace);
  if (object == nullptr) grace = 0;
  bool stopped = true;
  for (ContainerState& c : pod.containers) {
    if (!c.process) continue;
    if (c.view.state == State::kRunning && !c.view.reason.starts_with("Killing")) {
      c.view.reason = "Killing";
      Event(pod, c.view.name, "Normal", "Killing", "Stopping container " + c.view.name);
    }
    stopped = c.process->Stop(std::chrono::seconds(grace)) && stopped;
  }
  if (!stopped) return false;
  if (object != nullptr) {
    // Without a kubelet's final delete the pod would stay Terminating and keep its resources
    // in the scheduler's books.
    RemovePod(pod.ns, pod.name);
  }
  std::error_code ec;
  fs::remove_all(options_.work_dir + "/" + pod.ns + "_" + pod.name + "/serviceaccount", ec);
  return true;
}

void Agent::RemovePod(const std::string& ns, const std::string& name) {
  (void)client_.Delete(kube::ObjectPath(kube::kPods, ns, name) + "?gracePeriodSeconds=0");
}

void Agent::Report(PodState& pod, const json& object) {
  PodView view{.pod_ip = pod.ip,
               .start_time = pod.start_time,
               .restart_policy = pod.spec["spec"].value("restartPolicy", "Always")};
  for (const ContainerState& c : pod.containers) view.containers.push_back(c.view);
  const json status = PodStatus(view, object.value("status", json::object()));
  // As the kubelet's status manager reconciles: again when the apiserver's Ready differs from
  // ours, e.g. after the node lifecycle controller marked the pods of a node it lost touch with.
  if (status == pod.reported && ReadyOf(status) == ReadyOf(object.value("status", json()))) return;
  auto patched = client_.MergePatch(kube::ObjectPath(kube::kPods, pod.ns, pod.name, "status"),
                                    {{"status", status}});
  if (patched) pod.reported = status;
}

void Agent::Event(const PodState& pod, const std::string& container, const std::string& type,
                  const std::string& reason, const std::string& message) {
  const std::string now = Rfc3339Now();
  (void)client_.Create(kube::CollectionPath(kube::kEvents, pod.ns),
                       {{"apiVersion", "v1"},
                        {"kind", "Event"},
                        {"metadata", {{"generateName", pod.name + "."}, {"namespace", pod.ns}}},
                        {"involvedObject",
                         {{"apiVersion", "v1"},
                          {"kind", "Pod"},
                          {"namespace", pod.ns},
                          {"name", pod.name},
                          {"uid", pod.uid},
                          {"fieldPath", "spec.containers{" + container + "}"}}},
                        {"reason", reason},
                        {"message", message},
                        {"type", type},
                        {"source", {{"component", "kubelet"}, {"host", pod.node}}},
                        {"firstTimestamp", now},
                        {"lastTimestamp", now},
                        {"count", 1}});
}

}  // namespace pipescale::emulator

#include "profile/pods.h"

#include "common/flags.h"
#include "common/json_fields.h"
#include "model/limits.h"
#include "routing/endpoints.h"

namespace pipescale::profile {
namespace {

using nlohmann::json;

const json& Array(const json& object, const char* key) {
  static const json kEmpty = json::array();
  const json& v = Member(object, key);
  return v.is_array() ? v : kEmpty;
}

std::string Expression(const json& e) {
  std::string key = StringField(e, "key");
  const std::string op = StringField(e, "operator");
  std::string values;
  for (const json& v : Array(e, "values")) {
    if (v.is_string()) values += (values.empty() ? "" : ",") + v.get<std::string>();
  }
  if (op == "In") return key + " in (" + values + ")";
  if (op == "NotIn") return key + " notin (" + values + ")";
  if (op == "Exists") return key;
  if (op == "DoesNotExist") return "!" + key;
  return "";
}

int PortOf(const json& containers) {
  int first = 0;
  for (const json& c : containers) {
    for (const json& p : Array(c, "ports")) {
      const int port = IntField(p, "containerPort", 0);
      if (port <= 0) continue;
      if (StringField(p, "name") == "http") return port;
      if (first == 0) first = port;
    }
  }
  return first > 0 ? first : routing::kDefaultModelPort;
}

int BatchOf(const json& containers, const std::string& env) {
  if (env.empty()) return 0;
  for (const json& c : containers) {
    for (const json& e : Array(c, "env")) {
      if (StringField(e, "name") != env) continue;
      const auto batch = ParseInteger(env, StringField(e, "value"), 1, limits::kMaxBatch);
      return batch ? *batch : 0;
    }
  }
  return 0;
}

}  // namespace

Result<std::string> LabelSelector(const json& deployment) {
  const json& selector = Member(Member(deployment, "spec"), "selector");
  std::string out;
  const auto add = [&](const std::string& term) {
    if (!term.empty()) out += (out.empty() ? "" : ",") + term;
  };
  const json& labels = Member(selector, "matchLabels");
  for (auto it = labels.begin(); it != labels.end(); ++it) {
    if (it->is_string()) add(it.key() + "=" + it->get<std::string>());
  }
  for (const json& e : Array(selector, "matchExpressions")) add(Expression(e));
  if (out.empty()) return Error{ErrorKind::kInvalid, "the Deployment has no spec.selector"};
  return out;
}

Result<PodChoice> PickPod(const json& pod_list, const std::string& batch_env) {
  const json* chosen = nullptr;
  PodChoice out;
  for (const json& pod : Array(pod_list, "items")) {
    ++out.pods;
    if (!routing::PodReady(pod) || StringField(Member(pod, "status"), "podIP").empty()) continue;
    ++out.ready;
    const std::string name = StringField(Member(pod, "metadata"), "name");
    if (chosen == nullptr || name < StringField(Member(*chosen, "metadata"), "name")) {
      chosen = &pod;
    }
  }
  if (chosen == nullptr) {
    return Error{ErrorKind::kUnavailable,
                 "none of its " + std::to_string(out.pods) + " pods is Ready with an IP"};
  }
  const json& containers = Array(Member(*chosen, "spec"), "containers");
  out.name = StringField(Member(*chosen, "metadata"), "name");
  const std::string ip = StringField(Member(*chosen, "status"), "podIP");
  const std::string host = ip.find(':') != std::string::npos ? "[" + ip + "]" : ip;
  out.address = host + ":" + std::to_string(PortOf(containers));
  out.hardware_class =
      StringField(Member(Member(*chosen, "metadata"), "labels"), "pipescale.io/hardware-class");
  out.batch = BatchOf(containers, batch_env);
  return out;
}

}  // namespace pipescale::profile

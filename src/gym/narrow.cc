#include "gym/narrow.h"

#include <algorithm>
#include <utility>

#include "common/json_fields.h"
#include "common/strings.h"
#include "optimizer/registry.h"

namespace pipescale::gym {
namespace {

constexpr const char* kLokiHardwareOnly = "loki-hardware-only";
constexpr const char* kMarkReactive = "mark-reactive";

// The array at `key` of `parent`, or null when either is not there in that shape: shape errors
// are left for validation to name (nlohmann's operator[] would throw on them).
nlohmann::json* ArrayAt(nlohmann::json& parent, const char* key) {
  if (!parent.is_object()) return nullptr;
  auto it = parent.find(key);
  return it != parent.end() && it->is_array() ? &*it : nullptr;
}

nlohmann::json* Spec(nlohmann::json& object) {
  if (!object.is_object()) return nullptr;
  auto it = object.find("spec");
  return it != object.end() && it->is_object() ? &*it : nullptr;
}

// The elements of a JSON array that `keep` accepts (nlohmann::json has no erase_if).
template <typename Keep>
void Filter(nlohmann::json& array, Keep keep) {
  nlohmann::json kept = nlohmann::json::array();
  for (nlohmann::json& item : array) {
    if (keep(item)) kept.push_back(std::move(item));
  }
  array = std::move(kept);
}

double Accuracy(const nlohmann::json& variant) {
  auto it = variant.is_object() ? variant.find("accuracy") : variant.end();
  return variant.is_object() && it != variant.end() && it->is_number() ? it->get<double>() : 1.0;
}

// Loki without its second step: only hardware scales (the Loki paper's comparison point).
void MostAccurateOnly(nlohmann::json& object) {
  nlohmann::json* spec = Spec(object);
  nlohmann::json* tasks = spec != nullptr ? ArrayAt(*spec, "tasks") : nullptr;
  if (tasks == nullptr) return;
  for (nlohmann::json& task : *tasks) {
    nlohmann::json* variants = ArrayAt(task, "variants");
    if (variants == nullptr || variants->empty()) continue;
    auto best = std::max_element(
        variants->begin(), variants->end(),
        [](const nlohmann::json& a, const nlohmann::json& b) { return Accuracy(a) < Accuracy(b); });
    *variants = nlohmann::json::array({*best});
  }
}

bool Named(const nlohmann::json& item, const char* key, const std::string& name) {
  return StringField(item, key) == name;
}

// The pipeline on `hardware_class` alone.
Status OnlyClass(nlohmann::json& object, const std::string& policy,
                 const std::string& hardware_class) {
  nlohmann::json* spec = Spec(object);
  nlohmann::json* classes = spec != nullptr ? ArrayAt(*spec, "hardwareClasses") : nullptr;
  if (classes == nullptr) return Done{};
  Filter(*classes, [&](const nlohmann::json& c) { return Named(c, "name", hardware_class); });
  if (classes->empty()) {
    return Error{ErrorKind::kInvalid, "policy " + QuoteUserText(policy) +
                                          ": the pipeline has no hardware class " +
                                          QuoteUserText(hardware_class)};
  }
  nlohmann::json* tasks = ArrayAt(*spec, "tasks");
  if (tasks == nullptr) return Done{};
  for (nlohmann::json& task : *tasks) {
    nlohmann::json* variants = ArrayAt(task, "variants");
    if (variants == nullptr) continue;
    Filter(*variants, [&](nlohmann::json& v) {
      nlohmann::json* profiles = ArrayAt(v, "profiles");
      if (profiles == nullptr) return false;
      Filter(*profiles,
             [&](const nlohmann::json& p) { return Named(p, "hardwareClass", hardware_class); });
      return !profiles->empty();
    });
    if (variants->empty()) {
      return Error{
          ErrorKind::kInvalid,
          StrFormat("policy %s: task %s has no variant profiled on %s",
                    QuoteUserText(policy).c_str(), QuoteUserText(StringField(task, "name")).c_str(),
                    QuoteUserText(hardware_class).c_str())};
    }
  }
  return Done{};
}

}  // namespace

std::string PolicyOf(const std::string& optimizer) {
  return optimizer == "hpa" ? kOperatorHpa : optimizer;
}

Result<std::string> Narrow(const std::string& policy, nlohmann::json& object) {
  if (policy == kOperatorHpa) return std::string("hpa");
  if (policy == kLokiHardwareOnly) {
    MostAccurateOnly(object);
    return std::string("loki");
  }
  if (policy == kMarkReactive) {
    if (nlohmann::json* spec = Spec(object)) (*spec)["forecast"] = {{"method", "none"}};
    return std::string("mark");
  }
  // OPTIMIZER@CLASS only: any other name goes back unchanged, for the caller's "unknown policy".
  const size_t at = policy.find('@');
  if (at == std::string::npos || optimizer::FindOptimizer(policy.substr(0, at)) == nullptr) {
    return policy;
  }
  if (at + 1 == policy.size()) {
    return Error{ErrorKind::kInvalid,
                 "policy " + QuoteUserText(policy) + ": name a hardware class after @"};
  }
  if (auto only = OnlyClass(object, policy, policy.substr(at + 1)); !only) return only.error();
  return policy.substr(0, at);
}

}  // namespace pipescale::gym

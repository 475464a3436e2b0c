#include "api/pod_template.h"

namespace pipescale::api {
namespace {

using nlohmann::json;

// Lists in a pod are as long as the user needs (a model server may take many env vars): the
// document's own limit on values bounds them.
constexpr size_t kMaxItems = limits::kMaxValues;

void CheckEnv(Reader& r, const json& container, const std::string& path) {
  const json* env = r.Array(container, "env", path, false, kMaxItems);
  if (env == nullptr) return;
  const std::string at = Reader::At(path, "env");
  for (size_t i = 0; i < env->size(); ++i) {
    const json& e = (*env)[i];
    if (!e.is_object()) {
      r.Fail(Reader::At(at, i), "must be an object");
      continue;
    }
    (void)r.String(e, "name", Reader::At(at, i), false);
  }
}

void CheckResources(Reader& r, const json& container, const std::string& path) {
  const json* resources = r.Object(container, "resources", path, false);
  if (resources == nullptr) return;
  const std::string at = Reader::At(path, "resources");
  (void)r.Object(*resources, "requests", at, false);
  (void)r.Object(*resources, "limits", at, false);
}

void CheckPodSpec(Reader& r, const json& pod, const std::string& path) {
  const json* spec = r.Object(pod, "spec", path, false);
  if (spec == nullptr) return;
  const std::string at = Reader::At(path, "spec");
  (void)r.Object(*spec, "nodeSelector", at, false);
  const json* containers = r.Array(*spec, "containers", at, false, kMaxItems);
  if (containers == nullptr) return;
  const std::string cpath = Reader::At(at, "containers");
  for (size_t i = 0; i < containers->size(); ++i) {
    const json& c = (*containers)[i];
    if (!c.is_object()) {
      r.Fail(Reader::At(cpath, i), "must be an object");
      continue;
    }
    CheckEnv(r, c, Reader::At(cpath, i));
    CheckResources(r, c, Reader::At(cpath, i));
  }
}

}  // namespace

std::optional<json> ParsePodTemplate(Reader& r, const json& variant, const std::string& path) {
  const json* pod = r.Object(variant, "template", path, false);
  if (pod == nullptr) return std::nullopt;
  const std::string at = Reader::At(path, "template");
  const size_t problems = r.problems();
  if (const json* meta = r.Object(*pod, "metadata", at, false)) {
    (void)r.Object(*meta, "labels", Reader::At(at, "metadata"), false);
  }
  CheckPodSpec(r, *pod, at);
  if (r.problems() != problems) return std::nullopt;
  return *pod;
}

}  // namespace pipescale::api

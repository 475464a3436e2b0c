#include "api/pipeline_object.h"

#include "api/router_objects.h"
#include "api/status_json.h"

namespace pipescale::api {

ParsedPipeline ParseSpecOf(const nlohmann::json& object) {
  if (!object.is_object()) return ParsePipeline(object.dump());
  nlohmann::json spec_only = object;
  spec_only.erase("status");
  return ParsePipeline(spec_only.dump());
}

PipelineObject ReadPipelineObject(const nlohmann::json& object) {
  PipelineObject out{.meta = ReadObjectMeta(object), .parsed = ParseSpecOf(object)};
  const nlohmann::json& stored = StatusOf(object);
  out.status = ReadStatus(stored, out.meta.namespace_name + "/" + out.meta.name);
  if (StatusToJson(out.status) != stored) out.unrendered_status = stored;
  if (out.parsed.pipeline && out.parsed.pipeline->spec.router) {
    out.for_router = PipelineForRouter(object);
  }
  return out;
}

nlohmann::json PipelineObject::StoredStatus() const {
  return unrendered_status ? *unrendered_status : StatusToJson(status);
}

}  // namespace pipescale::api

// An InferencePipeline as the operator reads it: decoded once per version (the informer's
// decoder, or the answer to a status write) into what a reconcile decides from, so that no
// reconcile parses the object again: its metadata, its spec parsed and validated, its status
// typed, and what the router reads of it.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "api/object_meta.h"
#include "api/pipeline_parse.h"
#include "model/status.h"

namespace pipescale::api {

struct PipelineObject {
  ObjectMeta meta;
  // The spec, parsed without the status: the status may be large and is not the user's to
  // validate.
  ParsedPipeline parsed;
  model::PipelineStatus status;  // as ReadStatus reads it
  // The routing ConfigMap's pipeline.json (PipelineForRouter): set when the spec is valid and
  // asks for a router, the only case it is written.
  std::string for_router;
  // The status as stored, when the typed one does not render back to it (StatusToJson): fields
  // another writer left there, or values ReadStatus dropped. nullopt for a status the operator
  // wrote, the usual case, so the cache keeps no second copy of it.
  std::optional<nlohmann::json> unrendered_status;

  // The status as the cluster holds it, which the next status write's merge patch starts from.
  nlohmann::json StoredStatus() const;
};

// Never throws: an invalid spec is a ParsedPipeline with errors, and a status is read leniently
// (what it drops is logged once, naming the pipeline).
PipelineObject ReadPipelineObject(const nlohmann::json& object);

// The object's spec as ParsePipeline reads it, without the status.
ParsedPipeline ParseSpecOf(const nlohmann::json& object);

}  // namespace pipescale::api

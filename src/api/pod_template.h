// A variant's pod template: user JSON the operator builds each of the variant's Deployments on
// (api/deployment.h), merging in labels, resources, env vars and a node selector. What that merge
// reads of the template is checked here, where the spec is parsed, so that a template either is
// an invalid spec naming its field or builds a Deployment.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "api/field_reader.h"

namespace pipescale::api {

// The template under `variant`'s "template" (nullopt when there is none, or after reporting each
// problem at its field, e.g. `spec.tasks[0].variants[0].template.spec: must be an object`). The
// shapes checked are the ones BuildDeployment reads: metadata and metadata.labels objects; spec
// an object; spec.containers a list of objects, each with env a list of objects whose name is a
// string, and resources an object whose requests and limits are objects; spec.nodeSelector an
// object. Anything else in the template is passed through untouched for the apiserver to judge.
std::optional<nlohmann::json> ParsePodTemplate(Reader& r, const nlohmann::json& variant,
                                               const std::string& path);

}  // namespace pipescale::api

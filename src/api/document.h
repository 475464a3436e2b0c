// Reading a YAML or JSON document into nlohmann::json, for the parsers of this module.
// Internal to api/: nlohmann types never appear in the module's public headers.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "common/result.h"

namespace pipescale::api {

// Parses JSON when the text starts with '{' or '[', YAML otherwise. Plain YAML scalars take
// the YAML 1.2 core schema types (null, bool, int, float); quoted ones stay strings.
// kInvalid with the line and column on a syntax error.
Result<nlohmann::json> ParseDocument(std::string_view text);

}  // namespace pipescale::api

// Reading a YAML or JSON document into nlohmann::json, for the parsers of this module.
// Internal to api/: nlohmann types never appear in the module's public headers.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "common/result.h"

namespace pipescale::api {

// Parses JSON when the text starts with '{' or '[', YAML otherwise. Plain YAML scalars take
// the YAML 1.2 core schema types (null, bool, int, float); quoted ones stay strings. Integers
// keep their full width (int64, else uint64, else a float, as JSON parsers do); floats beyond
// the double range become infinities for the reader to reject.
// kInvalid with the line and column on a syntax error, and for a document beyond the limits of
// model/limits.h: more than limits::kMaxDocumentBytes, nested deeper than limits::kMaxDepth,
// or more than limits::kMaxValues values once YAML aliases are expanded. Nothing here recurses
// deeper than limits::kMaxDepth, whatever the input.
Result<nlohmann::json> ParseDocument(std::string_view text);

}  // namespace pipescale::api

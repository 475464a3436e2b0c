// Parsing and validating an InferencePipeline (pipescale.io/v1alpha1) from YAML or JSON. Every
// problem is reported at once, each naming its field path, e.g.
// `spec.tasks[1].next[0].task: unknown task "clasify"`.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/pipeline.h"

namespace pipescale::api {

struct FieldError {
  std::string path;  // e.g. spec.paths[0].sloMs; empty for the document itself
  std::string message;

  std::string ToString() const { return path.empty() ? message : path + ": " + message; }
  bool operator==(const FieldError&) const = default;
};

struct ParsedPipeline {
  std::optional<model::Pipeline> pipeline;  // set exactly when errors is empty
  std::vector<FieldError> errors;
};

// Parses an InferencePipeline custom resource. Latency profiles given as points are fitted
// here (quadratic by robust regression, or kept as a table), so the model holds d(b) ready.
ParsedPipeline ParsePipeline(std::string_view text);

// Reads and parses a file; a file that cannot be read is one error with an empty path.
ParsedPipeline ParsePipelineFile(const std::string& file);

}  // namespace pipescale::api

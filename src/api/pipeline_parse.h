// Parsing and validating an InferencePipeline (pipescale.io/v1alpha1) from YAML or JSON. Every
// problem is reported at once, each naming its field path, e.g.
// `spec.tasks[1].next[0].task: unknown task "clasify"`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/limits.h"
#include "model/pipeline.h"

namespace pipescale::api {

// What an InferencePipeline may hold is model/limits.h's table, below every module that checks a
// bound. router/main.cc still names it api::limits: this alias goes once it names
// pipescale::limits.
namespace limits = ::pipescale::limits;

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

// Reads and parses a file; a file that cannot be read is one error with an empty path. At most
// limits::kMaxDocumentBytes + 1 bytes are read (the parser refuses more).
ParsedPipeline ParsePipelineFile(const std::string& file);

// spec.slo.latencyModel's names and values, for the parser and for `pipescale plan
// --latency-model`.
const std::vector<std::pair<const char*, model::LatencyModel>>& LatencyModelNames();

// What a valid pipeline lacks for `optimizer` when it is planned with another optimizer than
// its spec.optimizer (`pipescale plan --optimizer`): validation checked the pipeline for its
// own. Empty when `optimizer` can plan it. The paths rule is the caller's (Descriptor).
std::vector<FieldError> CheckPlannableBy(const model::Pipeline& pipeline,
                                         std::string_view optimizer);

}  // namespace pipescale::api

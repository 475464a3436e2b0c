// A pipeline a test writes down, parsed: the test fails, rather than crashes, when it is not valid.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "api/pipeline_parse.h"
#include "support/pipelines.h"

namespace pipescale::testing {

inline model::Pipeline ParsedPipeline(std::string_view text) {
  auto parsed = api::ParsePipeline(std::string(text));
  EXPECT_TRUE(parsed.pipeline) << (parsed.errors.empty() ? "" : parsed.errors[0].ToString());
  return parsed.pipeline.value_or(model::Pipeline{});
}

// The request path's tests' pipeline (kTrafficPipeline, with its indices in traffic::).
inline model::Pipeline TrafficPipeline() { return ParsedPipeline(kTrafficPipeline); }

}  // namespace pipescale::testing

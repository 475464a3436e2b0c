// Writing a measured profile into an InferencePipeline document in place: the text of exactly
// one profile's latencyMs value is replaced (or one profile is appended to the variant's
// profiles), found through yaml-cpp's node marks, so comments, order and layout of everything
// else stay as they were. Pure.
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"
#include "profile/job.h"
#include "profile/points.h"

namespace pipescale::profile {

// `document` (YAML or JSON, a valid InferencePipeline) with the profile of target.variant of
// target.task on target.hardware_class set to `latency`, in the style of its surroundings
// (flow or block, JSON's quoted keys). The result is parsed back with api::ParsePipeline and
// must differ from `document`'s pipeline in that profile only. kInvalid saying why otherwise:
// the value is shared through a YAML anchor or alias, or the result does not validate.
Result<std::string> SetProfileLatency(std::string_view document, const Target& target,
                                      const Latency& latency);

}  // namespace pipescale::profile

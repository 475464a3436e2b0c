// JSON merge patches (RFC 7386) computed from what an object holds and what it should hold, so
// a field left out of the new value is removed rather than kept by the server.
#pragma once

#include <nlohmann/json.hpp>

namespace pipescale::kube {

// The merge patch that turns `before` into `after`: null for every member `after` lacks, the
// difference inside members that are objects in both, `after`'s value elsewhere (arrays are
// replaced whole, as merge patches do). Empty object when they are equal. A null inside `after`
// cannot be written by a merge patch and reads as "remove".
nlohmann::json MergePatchFrom(const nlohmann::json& before, const nlohmann::json& after);

}  // namespace pipescale::kube

// Kubernetes resource quantities ("500m", "4Gi", "1e3", "2") as numbers in base units, for
// the capacity model's arithmetic on node allocatable and pod requests.
#pragma once

#include <optional>
#include <string_view>

namespace pipescale::api {

// The quantity's value (cores for "500m" = 0.5, bytes for "4Gi"); nullopt when malformed.
std::optional<double> ParseQuantity(std::string_view text);

}  // namespace pipescale::api

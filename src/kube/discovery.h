// Which version of an API group the apiserver serves, for the kinds whose only version moved
// between the releases a user may run (PodDisruptionBudget: policy/v1 from 1.21, policy/v1beta1
// until 1.25).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kube/client.h"

namespace pipescale::kube {

// The first of `api_versions` ("group/version", in preference order) the apiserver lists under
// /apis; nullopt when it answers that it serves none. An apiserver that cannot be asked (down,
// forbidden) gets the first: the newest is the likelier, and a write to it fails loudly. Needs
// at least one version.
std::optional<std::string> FirstServedVersion(const Client& client,
                                              const std::vector<std::string>& api_versions);

}  // namespace pipescale::kube

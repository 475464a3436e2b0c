// The cluster file of emulated nodes (hack/nodes.yaml): each entry as the Node objects a kubelet
// and its device plugins would register. The node agent registers them on the local cluster;
// `pipescale simulate` places its pods on them.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/result.h"

namespace pipescale::api {

// The file's text: {nodes: [{name, count, labels, capacity, taints}]}. `count` > 1 makes
// name-1 .. name-count. Allocatable is the capacity; each node is Ready. kInvalid names what is
// wrong, prefixed by `source` (the file's name).
Result<std::vector<nlohmann::json>> ParseNodesFile(const std::string& text,
                                                   const std::string& source);

// A Ready node's conditions as a kubelet posts them now (a heartbeat renews them).
nlohmann::json NodeReadyConditions();

// ParseNodesFile of the file at `path`; kNotFound when it cannot be read.
Result<std::vector<nlohmann::json>> ReadNodesFile(const std::string& path);

}  // namespace pipescale::api

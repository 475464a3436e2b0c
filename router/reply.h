// The router's own answers to a client: JSON with a status, an error in the protocol's shape,
// and a refusal that tells the client when to come back.
#pragma once

#include <string>

#include "asio.h"
#include "spliced_body.h"

namespace pipescale::router {

ClientResponse Reply(unsigned status, const std::string& body);
// {"error": message}.
ClientResponse ErrorReply(unsigned status, const std::string& message);
// A 503 with Retry-After: 1.
ClientResponse Refusal(const std::string& message);

}  // namespace pipescale::router

#include "reply.h"

#include "routing/request.h"

namespace pipescale::router {

ClientResponse Reply(unsigned status, const std::string& body) {
  ClientResponse r{static_cast<http::status>(status), 11};
  r.set(http::field::content_type, "application/json");
  r.body().text = body;
  return r;
}

ClientResponse ErrorReply(unsigned status, const std::string& message) {
  return Reply(status, routing::ErrorBody(message));
}

ClientResponse Refusal(const std::string& message) {
  ClientResponse refused = ErrorReply(503, message);
  refused.set(http::field::retry_after, "1");
  return refused;
}

}  // namespace pipescale::router

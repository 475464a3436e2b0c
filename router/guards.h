// Guards where the router's coroutines begin. A throw inside a request is a bug: the client
// still gets an answer, the walk it broke fails instead of answering 200 with an output
// missing, and the throw is counted and logged once (common/guard.h).
#pragma once

#include <exception>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "asio.h"
#include "spliced_body.h"

namespace pipescale::router {

// The completion handler of a coroutine nothing waits for: where asio::detached drops a
// throw, this reports it for `component`.
struct ReportThrow {
  std::string_view component;
  void operator()(const std::exception_ptr& thrown) const;
};

using Responder = std::function<asio::awaitable<ClientResponse>(const HttpRequest&)>;

// `respond`'s answer to `request`, or 500 when it threw.
asio::awaitable<ClientResponse> AnswerOrInternalError(const Responder& respond,
                                                      const HttpRequest& request);

// Runs every branch at once on `executor` (moved from `branches`) and resumes when the last
// has ended. What each branch that threw said, in the order they ended; each is reported for
// `component`.
asio::awaitable<std::vector<std::string>> FanOut(const asio::any_io_executor& executor,
                                                 std::vector<asio::awaitable<void>>& branches,
                                                 std::string_view component);

}  // namespace pipescale::router

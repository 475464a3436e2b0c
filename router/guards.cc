#include "guards.h"

#include <memory>

#include "common/guard.h"
#include "routing/request.h"

namespace pipescale::router {
namespace {

std::string MessageOf(const std::exception_ptr& thrown) {
  try {
    std::rethrow_exception(thrown);
  } catch (...) {
    return CurrentExceptionMessage();
  }
}

}  // namespace

void ReportThrow::operator()(const std::exception_ptr& thrown) const {
  if (thrown) ReportPanic(component, MessageOf(thrown));
}

asio::awaitable<ClientResponse> AnswerOrInternalError(const Responder& respond,
                                                      const HttpRequest& request) {
  std::string threw;
  try {
    co_return co_await respond(request);
  } catch (...) {
    threw = CurrentExceptionMessage();
  }
  ReportPanic("router-request", threw);
  // What threw stays in the log: it may hold what this client should not see.
  ClientResponse failed{http::status::internal_server_error, request.version()};
  failed.body().text = routing::ErrorBody("the router failed on this request; its log says why");
  co_return failed;
}

asio::awaitable<std::vector<std::string>> FanOut(const asio::any_io_executor& executor,
                                                 std::vector<asio::awaitable<void>>& branches,
                                                 std::string_view component) {
  // One thread runs them all: the count needs no lock.
  struct State {
    size_t pending;
    asio::steady_timer done;
    std::vector<std::string> threw;
  };
  auto state = std::make_shared<State>(State{
      branches.size(), asio::steady_timer(executor, asio::steady_timer::time_point::max()), {}});
  for (auto& branch : branches) {
    asio::co_spawn(executor, std::move(branch),
                   [state, component](const std::exception_ptr& thrown) {
                     if (thrown) {
                       state->threw.push_back(MessageOf(thrown));
                       ReportPanic(component, state->threw.back());
                     }
                     if (--state->pending == 0) state->done.cancel();
                   });
  }
  if (state->pending > 0) {
    beast::error_code ec;
    co_await state->done.async_wait(Redirect(ec));
  }
  co_return std::move(state->threw);
}

}  // namespace pipescale::router

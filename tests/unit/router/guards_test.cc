// The guards where the router's coroutines begin, and the batcher's answer to each follower
// when the call for their batch throws. No real part throws there, so each fault is a fake
// named as such: a responder, a branch or a batch call that throws, standing for any bug.
#include "router/guards.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "common/guard.h"
#include "router/batcher.h"

namespace pipescale::router {
namespace {

using namespace std::chrono_literals;
using routing::Body;

std::uint64_t Panics(const std::string& component) { return PanicCounts()[component]; }

// Runs `work` on a fresh loop until it ends (at most 5 s, so a hang fails instead of hanging).
template <typename T>
std::optional<T> RunToEnd(asio::awaitable<T> work) {
  asio::io_context context;
  std::optional<T> out;
  asio::co_spawn(context, std::move(work), [&](const std::exception_ptr& thrown, T value) {
    if (!thrown) out = std::move(value);
  });
  context.run_for(5s);
  return out;
}

HttpRequest Request() {
  HttpRequest request{http::verb::post, "/v2/models/p/infer", 11};
  request.body() = "{}";
  return request;
}

asio::awaitable<ClientResponse> Answer(const Responder& respond) {
  const HttpRequest request = Request();
  co_return co_await AnswerOrInternalError(respond, request);
}

TEST(AnswerOrInternalError, AThrowingRequestIsAnswered500CountedAndLoggedOnce) {
  const Responder fake_that_throws = [](const HttpRequest&) -> asio::awaitable<ClientResponse> {
    throw std::logic_error("an odd request broke the walk");
    co_return ClientResponse{};
  };
  const auto before = Panics("router-request");
  testing::internal::CaptureStderr();
  const auto first = RunToEnd(Answer(fake_that_throws));
  const auto second = RunToEnd(Answer(fake_that_throws));
  const std::string log = testing::internal::GetCapturedStderr();
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->result(), http::status::internal_server_error);
  EXPECT_EQ(second->result(), http::status::internal_server_error);
  EXPECT_EQ(first->body().text.find("odd request"), std::string::npos)
      << "the log keeps the details";
  EXPECT_EQ(Panics("router-request"), before + 2);
  EXPECT_EQ(log.find("odd request"), log.rfind("odd request")) << log;
  EXPECT_NE(log.find("odd request"), std::string::npos) << log;
}

TEST(AnswerOrInternalError, PassesAnAnswerThrough) {
  const Responder ok = [](const HttpRequest&) -> asio::awaitable<ClientResponse> {
    co_return ClientResponse{http::status::ok, 11};
  };
  const auto answer = RunToEnd(Answer(ok));
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->result(), http::status::ok);
}

asio::awaitable<void> After(std::chrono::milliseconds wait, int& done) {
  asio::steady_timer timer(co_await asio::this_coro::executor, wait);
  co_await timer.async_wait(asio::use_awaitable);
  ++done;
}

asio::awaitable<void> FakeBranchThatThrows() {
  co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable);
  throw std::runtime_error("a branch broke");
}

asio::awaitable<std::vector<std::string>> ThreeBranches(int& done) {
  std::vector<asio::awaitable<void>> branches;
  branches.push_back(After(20ms, done));
  branches.push_back(FakeBranchThatThrows());
  branches.push_back(After(40ms, done));
  co_return co_await FanOut(co_await asio::this_coro::executor, branches, "fan-out-test");
}

TEST(FanOut, WaitsForEveryBranchAndReturnsWhatEachThrowingOneSaid) {
  int done = 0;
  const auto threw = RunToEnd(ThreeBranches(done));
  ASSERT_TRUE(threw);
  EXPECT_EQ(*threw, std::vector<std::string>{"a branch broke"});
  EXPECT_EQ(done, 2);  // the others ran to their end before the fan-out resumed
  EXPECT_EQ(Panics("fan-out-test"), 1U);
}

// Two requests form a batch of 2; the one that sends it finds the call throwing. Both must be
// answered (an error), neither left waiting for an answer that never comes.
asio::awaitable<void> SubmitOne(Batcher& batcher, const Body& body, const Batcher::Send& send,
                                std::vector<bool>& answered_ok) {
  const auto reply = co_await batcher.Submit(body, Batcher::Clock::now() + 3s, send);
  answered_ok.push_back(reply.ok());
}

TEST(Batcher, EveryRequestOfABatchIsAnsweredWhenItsCallThrows) {
  Batcher batcher(2, 1000);
  const Batcher::Send fake_call_that_throws = [](const Body&,
                                                 int) -> asio::awaitable<Result<CallReply>> {
    throw std::runtime_error("the call broke");
    co_return CallReply{};
  };
  const Body first{.inputs = R"([{"name":"x","shape":[1,2],"datatype":"FP32","data":[1,2]}])"};
  const Body second{.inputs = R"([{"name":"x","shape":[1,2],"datatype":"FP32","data":[3,4]}])"};
  asio::io_context context;
  std::vector<bool> answered_ok;
  for (const Body* body : {&first, &second}) {
    asio::co_spawn(context, SubmitOne(batcher, *body, fake_call_that_throws, answered_ok),
                   [](const std::exception_ptr& thrown) { EXPECT_FALSE(thrown); });
  }
  const auto before = Panics("router-batcher");
  context.run_for(5s);
  EXPECT_EQ(answered_ok, (std::vector<bool>{false, false}));
  EXPECT_EQ(Panics("router-batcher"), before + 1);
}

}  // namespace
}  // namespace pipescale::router

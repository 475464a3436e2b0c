// Kairos's matcher in the router, with the other router replicas' calls as their reports set them
// (peers.h): a replica busy at another router takes nothing here until a report frees it, and a
// replica this router keeps busy never reads idle to the others between one query and the next.
#include "router/matcher.h"

#include <gtest/gtest.h>

#include <optional>

#include "router/routing_table.h"

namespace pipescale::router {
namespace {

using namespace std::chrono_literals;

// One replica, one class of 5 ms + 1 ms a row, the other routers' count at it in `peers`.
struct OneReplica {
  OneReplica() {
    endpoint->address = "10.0.0.9:8080";
    endpoint->peers = peers;
    matcher.Configure(100, /*fcfs=*/false,
                      {{.endpoint = endpoint, .class_key = "v/gpu", .latency_ms = [](int rows) {
                          return 5.0 + rows;
                        }}});
  }
  // Starts a query of one row; its replica once the matcher starts it, or its error.
  void Acquire(std::optional<Result<std::shared_ptr<Endpoint>>>& out) {
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          out = co_await matcher.Acquire(io.get_executor(), 1, Matcher::Clock::now() + 10s);
        },
        asio::detached);
  }
  int own() const { return endpoint->outstanding->load(); }

  asio::io_context io;
  std::shared_ptr<std::atomic<int>> peers = std::make_shared<std::atomic<int>>(0);
  std::shared_ptr<Endpoint> endpoint = std::make_shared<Endpoint>();
  Matcher matcher;
};

TEST(Matcher, AReplicaBusyAtAnotherRouterTakesNothingHereUntilItsReportFreesIt) {
  OneReplica r;
  *r.peers = 1;  // another router's call is there
  std::optional<Result<std::shared_ptr<Endpoint>>> first;
  r.Acquire(first);
  r.io.run_for(20ms);
  EXPECT_FALSE(first.has_value()) << "started on a replica busy elsewhere";
  EXPECT_EQ(r.matcher.waiting(), 1u);
  EXPECT_EQ(r.own(), 0);
  *r.peers = 0;  // its report says the call is done
  r.matcher.Rematch();
  r.io.run_for(20ms);
  ASSERT_TRUE(first.has_value() && first->ok());
  EXPECT_EQ(**first, r.endpoint);
  EXPECT_EQ(r.own(), 1) << "counted outstanding from the start the matcher made";
  r.matcher.Release(*r.endpoint);
  EXPECT_EQ(r.own(), 0);
}

TEST(Matcher, AReplicaThatStartsTheNextQueryOnItsAnswerNeverReadsIdle) {
  OneReplica r;
  std::optional<Result<std::shared_ptr<Endpoint>>> first, second;
  r.Acquire(first);
  r.Acquire(second);
  r.io.run_for(20ms);
  ASSERT_TRUE(first.has_value() && first->ok());
  EXPECT_FALSE(second.has_value()) << "one query in flight per replica";
  // Every value the count takes as the first query's answer starts the second, as the link's
  // thread could read it meanwhile: watched from another thread.
  std::atomic<bool> done{false}, read_idle{false};
  std::thread watcher([&] {
    while (!done) read_idle = read_idle || r.own() == 0;
  });
  r.matcher.Release(*r.endpoint);
  done = true;
  watcher.join();
  EXPECT_FALSE(read_idle) << "the replica read idle between its two queries";
  EXPECT_EQ(r.own(), 1);
  r.io.run_for(20ms);
  ASSERT_TRUE(second.has_value() && second->ok());
  r.matcher.Release(*r.endpoint);
  EXPECT_EQ(r.own(), 0);
}

}  // namespace
}  // namespace pipescale::router

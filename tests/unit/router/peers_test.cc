// Two router replicas' links on the loopback, real UDP sockets: what one has outstanding at a pod
// reaches the other within milliseconds, follows it down, and is forgotten when the replica goes.
#include "router/peers.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>

#include "integration/harness/wait.h"

namespace pipescale::router {
namespace {

using std::chrono::milliseconds;

// A free UDP port on 127.0.0.1 (both links bind it on their own address, as pods do theirs).
unsigned short FreePort() {
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in a{.sin_family = AF_INET, .sin_port = 0, .sin_addr = {htonl(INADDR_LOOPBACK)}};
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t n = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n);
  close(fd);
  return ntohs(a.sin_port);
}

std::unique_ptr<PeerLink> Link(const std::string& ip, unsigned short port) {
  auto link = PeerLink::Open(ip, port);
  EXPECT_TRUE(link.ok()) << link.error().message;
  return link ? std::move(*link) : nullptr;
}

TEST(PeerLink, EachReplicaReadsTheOthersCallsAtAPodAndForgetsAReplicaThatWent) {
  const unsigned short port = FreePort();
  auto a = Link("127.0.0.21", port);
  auto b = Link("127.0.0.22", port);
  ASSERT_TRUE(a && b);
  const auto a_own = std::make_shared<std::atomic<int>>(0);
  const auto b_own = std::make_shared<std::atomic<int>>(0);
  const auto a_reads = a->Track("10.0.0.5:8080", a_own);
  const auto b_reads = b->Track("10.0.0.5:8080", b_own);
  // Each is told every replica, itself among them, as discovery lists them.
  a->SetPeers({"127.0.0.21", "127.0.0.22"});
  b->SetPeers({"127.0.0.21", "127.0.0.22"});
  std::atomic<int> b_saw{-1};   // the last number of peers b reported
  std::atomic<int> b_moves{0};  // how often a count a reports moved at b
  a->Start(nullptr, nullptr);
  b->Start([&b_saw](int peers) { b_saw = peers; }, [&b_moves] { ++b_moves; });
  ASSERT_TRUE(testing::Eventually([&] { return a->fresh_peers() == 1 && b->fresh_peers() == 1; },
                                  milliseconds(2000), milliseconds(5)));
  EXPECT_TRUE(testing::Eventually([&] { return b_saw == 1; }, milliseconds(2000)));

  *a_own = 3;
  a->Nudge();
  *b_own = 1;
  b->Nudge();
  EXPECT_TRUE(testing::Eventually(
      [&] { return b_reads->load() == 3 && a_reads->load() == 1 && b_moves > 0; },
      milliseconds(2000), milliseconds(1)))
      << "b is told as a's count moves";
  const int moves = b_moves;
  *a_own = 0;
  a->Nudge();
  EXPECT_TRUE(testing::Eventually([&] { return b_reads->load() == 0 && b_moves > moves; },
                                  milliseconds(2000), milliseconds(1)));

  // A replica killed with calls out: its count stops arriving, and after kPeerFreshMs the other
  // no longer counts it (nor the replica itself).
  *a_own = 4;
  a->Nudge();
  ASSERT_TRUE(testing::Eventually([&] { return b_reads->load() == 4; }, milliseconds(2000),
                                  milliseconds(1)));
  a.reset();
  EXPECT_TRUE(testing::Eventually([&] { return b_reads->load() == 0 && b->fresh_peers() == 0; },
                                  milliseconds(2000), milliseconds(5)));
}

// A UDP socket on `ip` (any port), as another process there sends from.
int SocketOn(const std::string& ip) {
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in a{.sin_family = AF_INET, .sin_port = 0, .sin_addr = {}};
  inet_pton(AF_INET, ip.c_str(), &a.sin_addr);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  return fd;
}

// Anyone who reaches the port may send anything: the link reads on; a well-formed report from an
// address that is not a router replica's counts nothing, and one from a replica after the garbage
// counts.
TEST(PeerLink, GarbageOnThePortChangesNothing) {
  const unsigned short port = FreePort();
  auto b = Link("127.0.0.24", port);
  ASSERT_TRUE(b);
  const auto b_own = std::make_shared<std::atomic<int>>(0);  // tracked while it lives
  const auto b_reads = b->Track("10.0.0.5:8080", b_own);
  b->SetPeers({"127.0.0.24", "127.0.0.25"});
  b->Start(nullptr, nullptr);
  sockaddr_in to{.sin_family = AF_INET, .sin_port = htons(port), .sin_addr = {}};
  inet_pton(AF_INET, "127.0.0.24", &to.sin_addr);
  const auto send = [&](int fd, const std::string& datagram) {
    sendto(fd, datagram.data(), datagram.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof to);
  };
  const int peer = SocketOn("127.0.0.25"), stranger = SocketOn("127.0.0.26");
  for (const std::string& junk :
       {std::string(), std::string("pipescale-peers/1 zz\n"),
        std::string("pipescale-peers/1 1\nx -1\n"), std::string(60000, '\xff')}) {
    send(peer, junk);
  }
  send(stranger, routing::EncodePeerReport({.sender = 8, .outstanding = {{"10.0.0.5:8080", 5}}}));
  send(peer, routing::EncodePeerReport({.sender = 9, .outstanding = {{"10.0.0.5:8080", 2}}}));
  EXPECT_TRUE(testing::Eventually([&] { return b_reads->load() == 2 && b->fresh_peers() == 1; },
                                  milliseconds(2000), milliseconds(5)));
  // The stranger's report, sent first, was dropped rather than late.
  send(stranger, routing::EncodePeerReport({.sender = 8, .outstanding = {{"10.0.0.5:8080", 5}}}));
  send(peer, routing::EncodePeerReport({.sender = 9, .outstanding = {{"10.0.0.5:8080", 1}}}));
  EXPECT_TRUE(testing::Eventually([&] { return b_reads->load() == 1; }, milliseconds(2000),
                                  milliseconds(5)));
  EXPECT_EQ(b->fresh_peers(), 1);
  close(peer);
  close(stranger);
}

TEST(PeerLink, AnAddressThatIsNotOneIsAnErrorNotACrash) {
  const auto link = PeerLink::Open("not-an-ip", 8080);
  ASSERT_FALSE(link.ok());
  EXPECT_NE(link.error().message.find("not-an-ip"), std::string::npos);
}

}  // namespace
}  // namespace pipescale::router

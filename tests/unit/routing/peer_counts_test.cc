#include "routing/peer_counts.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace pipescale::routing {
namespace {

PeerReport RandomReport(std::mt19937_64& rng) {
  PeerReport report{.sender = rng()};
  const int pods = std::uniform_int_distribution<int>(0, 40)(rng);
  for (int i = 0; i < pods; ++i) {
    report.outstanding.emplace_back(
        "10." + std::to_string(rng() % 256) + "." + std::to_string(rng() % 256) + ".7:8080",
        std::uniform_int_distribution<int>(0, 5000)(rng));
  }
  return report;
}

TEST(PeerReport, EveryReportReadsBackAsItWasWritten) {
  std::mt19937_64 rng(42);
  for (int i = 0; i < 500; ++i) {
    const PeerReport report = RandomReport(rng);
    const auto read = DecodePeerReport(EncodePeerReport(report));
    ASSERT_TRUE(read.ok()) << read.error().message;
    EXPECT_EQ(*read, report);
  }
}

TEST(PeerReport, WhatIsNotAReportIsRefusedWithAReason) {
  for (const std::string& bad :
       {std::string(""), std::string("GET / HTTP/1.1\r\n"), std::string("pipescale-peers/1 \n"),
        std::string("pipescale-peers/1 xyz\n"), std::string("pipescale-peers/1 1f\n10.0.0.1:80\n"),
        std::string("pipescale-peers/1 1f\n10.0.0.1:80 -3\n"),
        std::string("pipescale-peers/1 1f\n10.0.0.1:80 99999999999\n"),
        std::string("pipescale-peers/1 1f\n 3\n"),
        std::string("pipescale-peers/1 1f\n10.0.0.1:80 3x\n"),
        std::string("pipescale-peers/1 1f\n") + std::string(300, 'a') + " 1\n"}) {
    const auto read = DecodePeerReport(bad);
    ASSERT_FALSE(read.ok()) << bad;
    EXPECT_FALSE(read.error().message.empty());
  }
}

// Datagrams come from anyone who can reach the port: damaged reports and random bytes are
// refused or read, never a crash, and a read one holds only what a report may hold.
TEST(PeerReport, DamagedDatagramsNeverCrashTheReader) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 20000; ++i) {
    std::string datagram = EncodePeerReport(RandomReport(rng));
    const int damage = std::uniform_int_distribution<int>(1, 8)(rng);
    for (int d = 0; d < damage && !datagram.empty(); ++d) {
      const size_t at = rng() % datagram.size();
      switch (rng() % 3) {
        case 0:
          datagram[at] = static_cast<char>(rng());
          break;
        case 1:
          datagram.erase(at, rng() % 16);
          break;
        default:
          datagram.insert(at, std::string(rng() % 8, static_cast<char>(rng())));
          break;
      }
    }
    const auto read = DecodePeerReport(datagram);
    if (!read.ok()) continue;
    EXPECT_LE(read->outstanding.size(), kMaxPeerPods);
    for (const auto& [address, calls] : read->outstanding) {
      EXPECT_FALSE(address.empty());
      EXPECT_GE(calls, 0);
    }
  }
}

TEST(PeerReport, AReportPastTheDatagramsLimitIsCutThere) {
  PeerReport report{.sender = 1};
  for (size_t i = 0; i < kMaxPeerPods + 10; ++i) {
    report.outstanding.emplace_back("pod-" + std::to_string(i) + ":8080", 1);
  }
  const std::string datagram = EncodePeerReport(report);
  EXPECT_LT(datagram.size(), 65507u);  // the largest UDP payload over IPv4
  const auto read = DecodePeerReport(datagram);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(read->outstanding.size(), kMaxPeerPods);
}

TEST(PeerBook, SumsTheFreshPeersLastReportsAndForgetsTheSilentOnes) {
  PeerBook book;
  book.Record({.sender = 1, .outstanding = {{"a", 2}, {"b", 1}}}, 0);
  book.Record({.sender = 2, .outstanding = {{"a", 3}}}, 100);
  book.Record({.sender = 1, .outstanding = {{"a", 1}}}, 200);  // replaces sender 1's first
  EXPECT_EQ(book.Outstanding(250), (std::map<std::string, int>{{"a", 4}}));
  EXPECT_EQ(book.FreshPeers(250), 2);
  // Sender 2 reported last at 100: past kPeerFreshMs it counts nothing.
  const double later = 100 + kPeerFreshMs + 1;
  EXPECT_EQ(book.Outstanding(later), (std::map<std::string, int>{{"a", 1}}));
  EXPECT_EQ(book.FreshPeers(later), 1);
  EXPECT_TRUE(book.Outstanding(200 + kPeerFreshMs + 1).empty());
}

// Past kMaxPeers fresh senders a new one is ignored (the port is open to anything that reaches
// it); the known ones still update, and once some go silent there is room again.
TEST(PeerBook, HoldsAtMostKMaxPeersAndAKnownPeerStillUpdates) {
  PeerBook book;
  for (std::uint64_t s = 0; s < kMaxPeers + 10; ++s) {
    book.Record({.sender = s, .outstanding = {{"a", 1}}}, 0);
  }
  EXPECT_EQ(book.FreshPeers(0), static_cast<int>(kMaxPeers));
  EXPECT_EQ(book.Outstanding(0).at("a"), static_cast<int>(kMaxPeers));
  book.Record({.sender = 0, .outstanding = {{"a", 5}}}, 1);
  EXPECT_EQ(book.Outstanding(1).at("a"), static_cast<int>(kMaxPeers) + 4);
  book.Record({.sender = 999, .outstanding = {{"b", 1}}}, 100);
  EXPECT_FALSE(book.Outstanding(100).contains("b")) << "a new sender while the book is full";
  // Past kPeerFreshMs the senders that reported at 0 are gone; sender 0 (at 1) stays.
  book.Record({.sender = 999, .outstanding = {{"b", 1}}}, kPeerFreshMs + 0.5);
  EXPECT_EQ(book.Outstanding(kPeerFreshMs + 0.5), (std::map<std::string, int>{{"a", 5}, {"b", 1}}));
}

// The whole queue of a pod, from any mix of reporting and silent replicas, is never read as
// less than this router's own share, and grows with every call anyone adds.
TEST(PodOutstanding, CountsReportedCallsOnceAndSilentReplicasAsThisOnesShare) {
  EXPECT_EQ(PodOutstanding(3, 0, 1, 0), 3);  // alone
  EXPECT_EQ(PodOutstanding(3, 4, 2, 1), 7);  // one peer reporting
  EXPECT_EQ(PodOutstanding(3, 0, 2, 0), 6);  // one peer silent: as many as this one's
  EXPECT_EQ(PodOutstanding(3, 4, 3, 1), 10);
  EXPECT_EQ(PodOutstanding(3, 4, 1, 1), 7);  // a peer reports before discovery lists it
  for (int own = 0; own < 5; ++own) {
    for (int reported = 0; reported < 5; ++reported) {
      for (int routers = 1; routers < 4; ++routers) {
        for (int fresh = 0; fresh < 4; ++fresh) {
          const int n = PodOutstanding(own, reported, routers, fresh);
          EXPECT_GE(n, own + reported);
          EXPECT_LT(n, PodOutstanding(own + 1, reported, routers, fresh));
          EXPECT_LT(n, PodOutstanding(own, reported + 1, routers, fresh));
        }
      }
    }
  }
}

}  // namespace
}  // namespace pipescale::routing

#include "peers.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <random>
#include <system_error>

#include "clock.h"
#include "common/guard.h"
#include "common/log.h"
#include "routing/peer_counts.h"

namespace pipescale::router {

namespace {

// How often the loop wakes, when neither a report nor a nudge wakes it, to forget silent peers and
// send the heartbeat.
constexpr int kTickMs = 5;

std::optional<sockaddr_in> Address(const std::string& ip, unsigned short port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  if (inet_pton(AF_INET, ip.c_str(), &a.sin_addr) != 1) return std::nullopt;
  return a;
}

}  // namespace

Result<std::unique_ptr<PeerLink>> PeerLink::Open(const std::string& host, unsigned short port) {
  const std::string ip = host.empty() ? "0.0.0.0" : host;
  const auto address = Address(ip, port);
  if (!address) return Error{ErrorKind::kInvalid, "peers: " + ip + " is not an IPv4 address"};
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    return Error{ErrorKind::kTransient,
                 std::string("peers: socket: ") + std::generic_category().message(errno)};
  if (bind(fd, reinterpret_cast<const sockaddr*>(&*address), sizeof *address) != 0) {
    const std::string why = std::generic_category().message(errno);
    close(fd);
    return Error{ErrorKind::kTransient,
                 "peers: cannot bind UDP " + ip + ":" + std::to_string(port) + ": " + why};
  }
  const int nudge = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (nudge < 0) {
    close(fd);
    return Error{ErrorKind::kTransient,
                 std::string("peers: eventfd: ") + std::generic_category().message(errno)};
  }
  return std::unique_ptr<PeerLink>(new PeerLink(fd, nudge, port));
}

PeerLink::PeerLink(int fd, int nudge_fd, unsigned short port)
    : fd_(fd), nudge_fd_(nudge_fd), port_(port), id_([] {
        std::random_device random;
        return (std::uint64_t{random()} << 32) | random();
      }()) {}

PeerLink::~PeerLink() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  close(fd_);
  close(nudge_fd_);
}

void PeerLink::Nudge() const {
  const std::uint64_t one = 1;
  // Non-blocking: a counter already past zero wakes the loop anyway.
  [[maybe_unused]] const ssize_t n = write(nudge_fd_, &one, sizeof one);
}

std::shared_ptr<const std::atomic<int>> PeerLink::Track(
    const std::string& address, const std::shared_ptr<std::atomic<int>>& own) {
  std::lock_guard lock(mu_);
  Tracked& t = tracked_[address];
  t.own = own;
  return t.peers;
}

void PeerLink::SetPeers(std::vector<std::string> ips) {
  std::lock_guard lock(mu_);
  peers_ = std::move(ips);
}

void PeerLink::Start(std::function<void(int)> peers_changed, std::function<void()> counts_changed) {
  peers_changed_ = std::move(peers_changed);
  counts_changed_ = std::move(counts_changed);
  thread_ = std::thread([this] {
    while (!stop_) Guard("router-peers", [this] { Loop(); });
  });
}

void PeerLink::Loop() {
  while (!stop_) {
    pollfd p[2] = {{.fd = fd_, .events = POLLIN, .revents = 0},
                   {.fd = nudge_fd_, .events = POLLIN, .revents = 0}};
    poll(p, 2, kTickMs);
    std::uint64_t nudges = 0;
    [[maybe_unused]] const ssize_t n = read(nudge_fd_, &nudges, sizeof nudges);
    const double now = SteadyNowMs();
    // The sums move only with a report or as one goes stale, not with this router's own nudges.
    if ((Receive(now) || now - last_published_ms_ >= kTickMs) && Publish(now) && counts_changed_) {
      counts_changed_();
    }
    Send(now);
  }
}

bool PeerLink::FromPeer(const sockaddr_in& from) {
  std::array<char, INET_ADDRSTRLEN> ip{};
  if (from.sin_family != AF_INET ||
      inet_ntop(AF_INET, &from.sin_addr, ip.data(), ip.size()) == nullptr) {
    return false;
  }
  std::lock_guard lock(mu_);
  return std::find(peers_.begin(), peers_.end(), std::string_view(ip.data())) != peers_.end();
}

bool PeerLink::Receive(double now_ms) {
  bool received = false;
  for (;;) {
    sockaddr_in from{};
    socklen_t from_size = sizeof from;
    const ssize_t n = recvfrom(fd_, buffer_.data(), buffer_.size(), MSG_DONTWAIT,
                               reinterpret_cast<sockaddr*>(&from), &from_size);
    if (n < 0) break;
    // Only the pipeline's router pods report; anything else that reaches the port is dropped
    // unread.
    if (!FromPeer(from)) continue;
    auto report = routing::DecodePeerReport(std::string_view(buffer_.data(), n));
    if (!report || report->sender == id_) continue;
    book_.Record(std::move(*report), now_ms);
    received = true;
  }
  const int fresh = book_.FreshPeers(now_ms);
  if (fresh != fresh_peers_.exchange(fresh, std::memory_order_relaxed)) {
    Log("info", "router peers reporting", {{"peers", std::to_string(fresh)}});
    if (peers_changed_) peers_changed_(fresh);
  }
  return received;
}

bool PeerLink::Publish(double now_ms) {
  last_published_ms_ = now_ms;
  const std::map<std::string, int> sums = book_.Outstanding(now_ms);
  bool moved = false;
  std::lock_guard lock(mu_);
  std::erase_if(tracked_, [](const auto& entry) { return entry.second.own.expired(); });
  for (auto& [address, t] : tracked_) {
    const auto it = sums.find(address);
    const int sum = it == sums.end() ? 0 : it->second;
    moved = t.peers->exchange(sum, std::memory_order_relaxed) != sum || moved;
  }
  return moved;
}

void PeerLink::Send(double now_ms) {
  routing::PeerReport report{.sender = id_};
  std::vector<std::string> peers;
  {
    std::lock_guard lock(mu_);
    for (const auto& [address, t] : tracked_) {
      const auto own = t.own.lock();
      const int calls = own ? own->load(std::memory_order_relaxed) : 0;
      if (calls > 0) report.outstanding.emplace_back(address, calls);
    }
    peers = peers_;
  }
  std::string datagram = routing::EncodePeerReport(report);
  if (datagram == last_sent_ && now_ms - last_sent_ms_ < routing::kPeerHeartbeatMs) return;
  for (const std::string& ip : peers) {
    const auto to = Address(ip, port_);
    if (!to) continue;
    // Best effort: a full buffer or an unreachable peer loses one report, and the next follows.
    sendto(fd_, datagram.data(), datagram.size(), MSG_DONTWAIT,
           reinterpret_cast<const sockaddr*>(&*to), sizeof *to);
  }
  last_sent_ = std::move(datagram);
  last_sent_ms_ = now_ms;
}

}  // namespace pipescale::router

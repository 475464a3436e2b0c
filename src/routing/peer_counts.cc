#include "routing/peer_counts.h"

#include <algorithm>
#include <charconv>
#include <cstdio>

namespace pipescale::routing {

namespace {

constexpr std::string_view kMagic = "pipescale-peers/1 ";
constexpr size_t kMaxAddress = 253 + 6;  // a DNS name and ":port"
constexpr int kMaxCalls = 1000000;       // the router's --max-in-flight at most

Error Invalid(std::string message) { return Error{ErrorKind::kInvalid, std::move(message)}; }

// The next '\n'-ended line of `text` from `pos` (a last line may lack it).
std::string_view NextLine(std::string_view text, size_t& pos) {
  const size_t end = std::min(text.find('\n', pos), text.size());
  const std::string_view line = text.substr(pos, end - pos);
  pos = end + 1;
  return line;
}

}  // namespace

std::string EncodePeerReport(const PeerReport& report) {
  char sender[17];
  std::snprintf(sender, sizeof sender, "%016llx", static_cast<unsigned long long>(report.sender));
  std::string out(kMagic);
  out += sender;
  out += '\n';
  const size_t n = std::min(report.outstanding.size(), kMaxPeerPods);
  for (size_t i = 0; i < n; ++i) {
    out += report.outstanding[i].first;
    out += ' ';
    out += std::to_string(report.outstanding[i].second);
    out += '\n';
  }
  return out;
}

Result<PeerReport> DecodePeerReport(std::string_view datagram) {
  if (!datagram.starts_with(kMagic)) return Invalid("not a pipescale-peers/1 report");
  size_t pos = kMagic.size();
  const std::string_view sender = NextLine(datagram, pos);
  PeerReport report;
  auto [end, ec] = std::from_chars(sender.data(), sender.data() + sender.size(), report.sender, 16);
  if (ec != std::errc() || end != sender.data() + sender.size() || sender.empty()) {
    return Invalid("the sender is not a hexadecimal id");
  }
  while (pos < datagram.size()) {
    const std::string_view line = NextLine(datagram, pos);
    const size_t space = line.rfind(' ');
    if (space == std::string_view::npos || space == 0 || space > kMaxAddress) {
      return Invalid("a line is not ADDRESS COUNT");
    }
    int calls = 0;
    const std::string_view digits = line.substr(space + 1);
    auto [last, err] = std::from_chars(digits.data(), digits.data() + digits.size(), calls);
    if (err != std::errc() || last != digits.data() + digits.size() || calls < 0 ||
        calls > kMaxCalls) {
      return Invalid("a count is not a number of calls");
    }
    if (report.outstanding.size() == kMaxPeerPods) return Invalid("too many pods");
    report.outstanding.emplace_back(std::string(line.substr(0, space)), calls);
  }
  return report;
}

void PeerBook::Record(PeerReport report, double now_ms) {
  std::erase_if(last_,
                [now_ms](const auto& entry) { return now_ms - entry.second.first > kPeerFreshMs; });
  const std::uint64_t sender = report.sender;
  if (!last_.contains(sender) && last_.size() >= kMaxPeers) return;
  last_[sender] = {now_ms, std::move(report)};
}

std::map<std::string, int> PeerBook::Outstanding(double now_ms) const {
  std::map<std::string, int> out;
  for (const auto& [sender, last] : last_) {
    if (now_ms - last.first > kPeerFreshMs) continue;
    for (const auto& [address, calls] : last.second.outstanding) out[address] += calls;
  }
  return out;
}

int PeerBook::FreshPeers(double now_ms) const {
  return static_cast<int>(std::count_if(last_.begin(), last_.end(), [now_ms](const auto& entry) {
    return now_ms - entry.second.first <= kPeerFreshMs;
  }));
}

int PodOutstanding(int own, int reported_by_peers, int routers, int fresh_peers) {
  const int silent = std::max(0, routers - 1 - fresh_peers);
  return own * (1 + silent) + reported_by_peers;
}

}  // namespace pipescale::routing

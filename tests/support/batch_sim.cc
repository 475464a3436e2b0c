#include "support/batch_sim.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <queue>
#include <random>
#include <vector>

namespace pipescale::testing {
namespace {

using MinHeap = std::priority_queue<double, std::vector<double>, std::greater<>>;

std::vector<double> Arrivals(const BatchSim& sim, std::mt19937_64& rng) {
  std::vector<double> out;
  out.reserve(sim.requests);
  const double cv2 = sim.rate_cv * sim.rate_cv;
  // Second by second: a gap that crosses the second's end is drawn again from there
  // (memoryless), at the next second's rate.
  for (double second = 0; static_cast<int>(out.size()) < sim.requests; second += 1000) {
    const double rate =
        cv2 > 0 ? std::gamma_distribution<double>(1 / cv2, sim.rate_rps * cv2)(rng) : sim.rate_rps;
    if (!(rate > 0)) continue;
    std::exponential_distribution<double> gap(rate / 1000);  // per ms
    for (double t = second + gap(rng);
         t < second + 1000 && static_cast<int>(out.size()) < sim.requests; t += gap(rng)) {
      out.push_back(t);
    }
  }
  return out;
}

// The replica with the fewest batches to run once it takes one more request, and among those
// the one whose batch is fullest; a tie drawn at random (the router's picker on pods of equal
// capacity).
int Shortest(const std::vector<int>& outstanding, int batch, std::mt19937_64& rng) {
  const auto key = [&](int r) {
    return std::pair((outstanding[r] + batch) / batch, -outstanding[r]);
  };
  std::vector<int> tied = {0};
  for (int r = 1; r < static_cast<int>(outstanding.size()); ++r) {
    if (key(r) < key(tied[0])) {
      tied = {r};
    } else if (key(r) == key(tied[0])) {
      tied.push_back(r);
    }
  }
  return tied[std::uniform_int_distribution<size_t>(0, tied.size() - 1)(rng)];
}

// The router forms the batches, then sends each to a replica; a replica serves in order.
std::vector<double> RouterForms(const BatchSim& sim, const std::vector<double>& arrivals,
                                std::mt19937_64& rng) {
  std::vector<double> latency;
  std::vector<double> free_at(sim.replicas, 0);
  std::vector<MinHeap> running(sim.replicas);  // completion times of batches sent, per replica
  std::vector<int> outstanding(sim.replicas, 0);
  for (size_t i = 0; i < arrivals.size();) {
    size_t j = i;
    while (j < arrivals.size() && static_cast<int>(j - i) < sim.batch &&
           arrivals[j] <= arrivals[i] + sim.wait_ms) {
      ++j;
    }
    const int rows = static_cast<int>(j - i);
    const double go = rows == sim.batch ? arrivals[j - 1] : arrivals[i] + sim.wait_ms;
    for (int r = 0; r < sim.replicas; ++r) {
      while (!running[r].empty() && running[r].top() <= go) running[r].pop();
      outstanding[r] = static_cast<int>(running[r].size());
    }
    const int r = Shortest(outstanding, 1, rng);
    const double end = std::max(go, free_at[r]) + sim.exec_ms(rows);
    free_at[r] = end;
    running[r].push(end);
    for (size_t k = i; k < j; ++k) latency.push_back(end - arrivals[k]);
    i = j;
  }
  return latency;
}

// Each server forms its own batches from the requests the router spreads over the replicas.
class ServersForm {
 public:
  ServersForm(const BatchSim& sim, std::mt19937_64& rng)
      : sim_(sim), rng_(rng), replicas_(sim.replicas) {}

  std::vector<double> Run(const std::vector<double>& arrivals) {
    size_t next = 0;
    while (next < arrivals.size() || !events_.empty()) {
      if (next < arrivals.size() && (events_.empty() || arrivals[next] <= events_.top().at)) {
        const double now = arrivals[next++];
        std::vector<int> outstanding;
        for (const Replica& r : replicas_) outstanding.push_back(r.outstanding);
        const int r = Shortest(outstanding, sim_.batch, rng_);
        replicas_[r].queue.push_back(now);
        ++replicas_[r].outstanding;
        TryStart(r, now);
      } else {
        const Event e = events_.top();
        events_.pop();
        if (e.done > 0) replicas_[e.replica].outstanding -= e.done;
        if (e.done > 0) replicas_[e.replica].busy = false;
        TryStart(e.replica, e.at);
      }
    }
    return latency_;
  }

 private:
  struct Replica {
    std::deque<double> queue;
    bool busy = false;
    int outstanding = 0;
  };
  struct Event {
    double at;
    int replica;
    int done;  // rows completed, or 0 for a wait that ends
    bool operator>(const Event& o) const { return at > o.at; }
  };

  void TryStart(int r, double now) {
    Replica& replica = replicas_[r];
    if (replica.busy || replica.queue.empty()) return;
    const bool full = static_cast<int>(replica.queue.size()) >= sim_.batch;
    if (!full && now < replica.queue.front() + sim_.wait_ms) {
      events_.push({replica.queue.front() + sim_.wait_ms, r, 0});
      return;
    }
    const int rows = std::min<int>(sim_.batch, static_cast<int>(replica.queue.size()));
    const double end = now + sim_.exec_ms(rows);
    for (int k = 0; k < rows; ++k) {
      latency_.push_back(end - replica.queue.front());
      replica.queue.pop_front();
    }
    replica.busy = true;
    events_.push({end, r, rows});
  }

  const BatchSim& sim_;
  std::mt19937_64& rng_;
  std::vector<Replica> replicas_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  std::vector<double> latency_;
};

}  // namespace

double SimulatedQuantileMs(const BatchSim& sim, double p) {
  std::mt19937_64 rng(sim.seed);
  const std::vector<double> arrivals = Arrivals(sim, rng);
  std::vector<double> latency;
  if (sim.router_forms) {
    latency = RouterForms(sim, arrivals, rng);
  } else {
    ServersForm servers(sim, rng);
    latency = servers.Run(arrivals);
  }
  latency.erase(latency.begin(), latency.begin() + static_cast<long>(latency.size() / 10));
  std::sort(latency.begin(), latency.end());
  return latency[static_cast<size_t>(p * static_cast<double>(latency.size() - 1))];
}

}  // namespace pipescale::testing

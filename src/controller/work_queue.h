// A work queue of object keys in the shape of client-go's: a key is queued at most once, is
// never handed to two workers at a time (added again while in flight, it is queued when done),
// and may be added after a delay.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>

namespace pipescale::controller {

class WorkQueue {
 public:
  using Clock = std::chrono::steady_clock;

  // A key also waiting for a delay keeps waiting, as in client-go's delaying queue: a look a
  // reconcile asked for (soon, while the load rises) is not cancelled by an event in between.
  void Add(const std::string& key);
  // Earlier deadlines win: a key waiting for 5 minutes and added for 1 s comes in 1 s.
  void AddAfter(const std::string& key, Clock::duration delay);
  // Blocks until a key is ready or the queue shuts down (then nullopt).
  std::optional<std::string> Get();
  // The worker finished `key`; if it was added meanwhile, it is queued again.
  void Done(const std::string& key);
  void ShutDown();

  size_t Depth() const;    // keys ready now
  size_t Waiting() const;  // keys waiting for their delay
  // Workers blocked in Get until a key is ready or the queue shuts down (a test waits for one
  // to be asleep before it shows what wakes it).
  size_t Sleeping() const;

 private:
  void PromoteDueLocked(Clock::time_point now);

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;
  std::set<std::string> queued_;  // in queue_
  std::set<std::string> processing_;
  std::set<std::string> dirty_;  // added while processing
  // Keys waiting for their delay, by key and by deadline: at 5000 pipelines a scan of the map at
  // every Get was 28% of the operator's CPU.
  std::map<std::string, Clock::time_point> delayed_;
  std::set<std::pair<Clock::time_point, std::string>> deadlines_;
  size_t sleeping_ = 0;
  bool shutting_down_ = false;
};

}  // namespace pipescale::controller

#include "controller/work_queue.h"

namespace pipescale::controller {

void WorkQueue::Add(const std::string& key) {
  std::lock_guard lock(mu_);
  if (shutting_down_) return;
  if (processing_.contains(key)) {
    dirty_.insert(key);
    return;
  }
  if (queued_.insert(key).second) {
    queue_.push_back(key);
    cv_.notify_one();
  }
}

void WorkQueue::AddAfter(const std::string& key, Clock::duration delay) {
  if (delay <= Clock::duration::zero()) {
    Add(key);
    return;
  }
  std::lock_guard lock(mu_);
  if (shutting_down_ || queued_.contains(key)) return;
  const auto at = Clock::now() + delay;
  auto [it, inserted] = delayed_.emplace(key, at);
  if (!inserted) {
    if (at >= it->second) return;
    deadlines_.erase({it->second, key});
    it->second = at;
  }
  deadlines_.emplace(at, key);
  // A worker sleeps until the first deadline: wake it only when this one comes first.
  if (deadlines_.begin()->first == at) cv_.notify_all();
}

void WorkQueue::PromoteDueLocked(Clock::time_point now) {
  while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
    std::string key = std::move(deadlines_.extract(deadlines_.begin()).value().second);
    delayed_.erase(key);
    if (processing_.contains(key)) {
      dirty_.insert(std::move(key));
    } else if (queued_.insert(key).second) {
      queue_.push_back(std::move(key));
    }
  }
}

std::optional<std::string> WorkQueue::Get() {
  std::unique_lock lock(mu_);
  while (true) {
    if (shutting_down_) return std::nullopt;
    PromoteDueLocked(Clock::now());
    if (!queue_.empty()) break;
    ++sleeping_;
    if (deadlines_.empty()) {
      cv_.wait(lock);
    } else {
      cv_.wait_until(lock, deadlines_.begin()->first);
    }
    --sleeping_;
  }
  std::string key = std::move(queue_.front());
  queue_.pop_front();
  queued_.erase(key);
  processing_.insert(key);
  return key;
}

void WorkQueue::Done(const std::string& key) {
  std::lock_guard lock(mu_);
  processing_.erase(key);
  if (dirty_.erase(key) > 0 && !shutting_down_ && queued_.insert(key).second) {
    queue_.push_back(key);
    cv_.notify_one();
  }
}

void WorkQueue::ShutDown() {
  std::lock_guard lock(mu_);
  shutting_down_ = true;
  cv_.notify_all();
}

size_t WorkQueue::Depth() const {
  std::lock_guard lock(mu_);
  return queue_.size();
}

size_t WorkQueue::Waiting() const {
  std::lock_guard lock(mu_);
  return delayed_.size();
}

size_t WorkQueue::Sleeping() const {
  std::lock_guard lock(mu_);
  return sleeping_;
}

}  // namespace pipescale::controller

// Objects that live for a while in a run (requests, their visits, calls), stored in a vector whose
// slots are reused: an id names a slot and its generation, so an event that outlived its object
// (a deadline of a request already answered) finds nothing rather than its slot's next tenant.
#pragma once

#include <cassert>
#include <cstdint>
#include <deque>
#include <vector>

namespace pipescale::gym::engine {

template <typename T>
class Slab {
 public:
  std::int64_t Add(T value) {
    std::uint32_t index = 0;
    if (!free_.empty()) {
      index = free_.back();
      free_.pop_back();
    } else {
      index = static_cast<std::uint32_t>(slots_.size());
      slots_.emplace_back();
    }
    Slot& slot = slots_[index];
    slot.value = std::move(value);
    slot.live = true;
    ++live_;
    return static_cast<std::int64_t>((static_cast<std::uint64_t>(slot.generation) << 32) | index);
  }

  // The object of `id`, or nullptr when it is gone.
  T* Find(std::int64_t id) {
    const auto index = static_cast<std::uint32_t>(id & 0xffffffff);
    if (index >= slots_.size()) return nullptr;
    Slot& slot = slots_[index];
    if (!slot.live || slot.generation != static_cast<std::uint32_t>(id >> 32)) return nullptr;
    return &slot.value;
  }

  // The object of `id`, which must live.
  T& at(std::int64_t id) {
    T* found = Find(id);
    assert(found != nullptr);
    return *found;
  }

  void Erase(std::int64_t id) {
    const auto index = static_cast<std::uint32_t>(id & 0xffffffff);
    Slot& slot = slots_[index];
    slot.live = false;
    ++slot.generation;
    slot.value = T();
    free_.push_back(index);
    --live_;
  }

  size_t size() const { return live_; }

 private:
  struct Slot {
    T value{};
    std::uint32_t generation = 0;
    bool live = false;
  };
  std::deque<Slot> slots_;  // a deque: references stay valid as it grows
  std::vector<std::uint32_t> free_;
  size_t live_ = 0;
};

}  // namespace pipescale::gym::engine

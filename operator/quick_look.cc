#include "quick_look.h"

#include <chrono>

#include "common/guard.h"

namespace pipescale::operator_main {

QuickLook::QuickLook(std::string name, double every_seconds,
                     std::vector<const reconciler::PipelineInformer*> informers, Due due,
                     Enqueue enqueue)
    : name_(std::move(name)),
      every_seconds_(every_seconds),
      informers_(std::move(informers)),
      due_(std::move(due)),
      enqueue_(std::move(enqueue)) {}

void QuickLook::Start() {
  thread_ = std::thread([this] {
    const auto every = std::chrono::duration<double>(every_seconds_);
    std::unique_lock lock(mu_);
    while (!wake_.wait_for(lock, every, [this] { return stop_; })) {
      lock.unlock();
      Guard(name_, [this] { Look(); });
      lock.lock();
    }
  });
}

void QuickLook::Stop() {
  {
    const std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void QuickLook::Look() const {
  for (const reconciler::PipelineInformer* informer : informers_) {
    for (const auto& object : informer->List()) {
      const auto& pipeline = object->parsed.pipeline;
      if (pipeline && due_(*pipeline, object->status)) {
        enqueue_(object->meta.namespace_name + "/" + object->meta.name);
      }
    }
  }
}

}  // namespace pipescale::operator_main

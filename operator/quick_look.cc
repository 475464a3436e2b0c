#include "surge_watch.h"

#include <chrono>

#include "common/guard.h"
#include "reconciler/surge.h"

namespace pipescale::operator_main {

SurgeWatch::SurgeWatch(std::vector<const reconciler::PipelineInformer*> informers, Read read,
                       Enqueue enqueue)
    : informers_(std::move(informers)), read_(std::move(read)), enqueue_(std::move(enqueue)) {}

void SurgeWatch::Start() {
  thread_ = std::thread([this] {
    const auto every = std::chrono::duration<double>(reconciler::kSurgeLookSeconds);
    std::unique_lock lock(mu_);
    while (!wake_.wait_for(lock, every, [this] { return stop_; })) {
      lock.unlock();
      Guard("surge watch", [this] { Look(); });
      lock.lock();
    }
  });
}

void SurgeWatch::Stop() {
  {
    const std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

// A pipeline whose rates cannot be read now is looked at in 2 s again, and its own reconciles
// report why: the watch only hastens them.
void SurgeWatch::Look() const {
  for (const reconciler::PipelineInformer* informer : informers_) {
    for (const auto& object : informer->List()) {
      const auto& pipeline = object->parsed.pipeline;
      if (!pipeline || !reconciler::SurgeWatched(*pipeline, object->status)) continue;
      const auto recent = read_(*pipeline);
      if (recent && reconciler::Surging(*pipeline, object->status, *recent)) {
        enqueue_(object->meta.namespace_name + "/" + object->meta.name);
      }
    }
  }
}

}  // namespace pipescale::operator_main

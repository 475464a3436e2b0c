// A look between a pipeline's reconciles: every `every` seconds, for each pipeline the informers
// hold, asks `due` whether it needs a reconcile now and queues one for each that does. The
// operator runs two: the surge watch (the routers' recent rates, reconciler/surge.h) and the door
// watch (requests held to wake a sleeping path, reconciler/idle.h).
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "model/pipeline.h"
#include "model/status.h"
#include "reconciler/reconciler.h"

namespace pipescale::operator_main {

class QuickLook {
 public:
  // Whether `pipeline`, whose last written status is `status`, needs a reconcile now. It may
  // read (Prometheus, the routers); one it cannot read is not due: its own reconciles say why.
  using Due = std::function<bool(const model::Pipeline&, const model::PipelineStatus&)>;
  using Enqueue = std::function<void(const std::string& key)>;

  // The informers must outlive the look. `name` labels its errors in the log.
  QuickLook(std::string name, double every_seconds,
            std::vector<const reconciler::PipelineInformer*> informers, Due due, Enqueue enqueue);
  QuickLook(const QuickLook&) = delete;
  QuickLook& operator=(const QuickLook&) = delete;
  ~QuickLook() { Stop(); }

  void Start();
  void Stop();  // joins; idempotent

 private:
  void Look() const;

  const std::string name_;
  const double every_seconds_;
  const std::vector<const reconciler::PipelineInformer*> informers_;
  const Due due_;
  const Enqueue enqueue_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace pipescale::operator_main

// Every reconciler::kSurgeLookSeconds, the routers' recent rates of every pipeline the informers
// hold (one shared query per Prometheus), and a reconcile queued at once for each that surges
// (reconciler/surge.h): a burst is planned for within seconds, not at the pipeline's next look.
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/result.h"
#include "model/pipeline.h"
#include "reconciler/reconciler.h"

namespace pipescale::operator_main {

class SurgeWatch {
 public:
  using Read = std::function<Result<std::map<std::string, double>>(const model::Pipeline&)>;
  using Enqueue = std::function<void(const std::string& key)>;

  // The informers must outlive the watch.
  SurgeWatch(std::vector<const reconciler::PipelineInformer*> informers, Read read,
             Enqueue enqueue);
  SurgeWatch(const SurgeWatch&) = delete;
  SurgeWatch& operator=(const SurgeWatch&) = delete;
  ~SurgeWatch() { Stop(); }

  void Start();
  void Stop();  // joins; idempotent

 private:
  void Look() const;

  const std::vector<const reconciler::PipelineInformer*> informers_;
  const Read read_;
  const Enqueue enqueue_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace pipescale::operator_main

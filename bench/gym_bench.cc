// How fast pipescale simulate replays load: the FA2 10-DNN example (deploy/examples/fa2-gpu.yaml)
// with the operator in the loop every 10 s, as simulated seconds per wall second, against the
// issue's goal (24 hours at 100 requests/s in under 60 s), and how the wall time grows with the
// duration, the rate and the number of tasks (a chain of 2..10 of the example's GPU profile).
// Prints Markdown.
#include <cstdio>
#include <string>

#include "api/document.h"
#include "common/file.h"
#include "gym/simulation.h"

namespace {

using namespace pipescale;
using nlohmann::json;

json Example(const std::string& file) {
  auto text = ReadFileText(std::string(PIPESCALE_SOURCE_DIR) + "/deploy/examples/" + file);
  return *api::ParseDocument(text ? *text : "");
}

// A chain of `n` tasks with the example's first task's variant, one path through all, an SLO of
// 400 ms a task.
json Chain(int n) {
  json p = Example("fa2-gpu.yaml");
  json task = p["spec"]["tasks"][0];
  task.erase("next");
  p["spec"]["tasks"] = json::array();
  json tasks = json::array();
  for (int i = 0; i < n; ++i) {
    task["name"] = "t" + std::to_string(i);
    if (i + 1 < n) task["next"] = {{{"task", "t" + std::to_string(i + 1)}}};
    p["spec"]["tasks"].push_back(task);
    task.erase("next");
    tasks.push_back("t" + std::to_string(i));
  }
  p["spec"]["paths"] = {{{"name", "chain"}, {"tasks", tasks}, {"sloMs", 400 * n}}};
  return p;
}

void Row(const std::string& what, const json& pipeline, double rps, double seconds) {
  gym::Options o;
  o.trace = *trace::ParseTrace(std::to_string(rps) + ":" + std::to_string(seconds), 1);
  auto r = gym::Simulate(pipeline, o);
  if (!r) {
    std::printf("| %s | failed: %s |\n", what.c_str(), r.error().message.c_str());
    return;
  }
  long sent = 0;
  for (const auto& [path, p] : r->paths) sent += p.sent;
  std::printf("| %s | %.0f | %.0f | %ld | %.2f | %.0f | %.2f |\n", what.c_str(), rps, seconds, sent,
              r->wall_seconds, seconds / r->wall_seconds,
              1e6 * r->wall_seconds / static_cast<double>(sent));
  std::fflush(stdout);
}

}  // namespace

int main() {
  std::printf("| run | req/s | simulated s | requests | wall s | speed-up | wall us/request |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|\n");
  const json fa2 = Example("fa2-gpu.yaml");
  for (double hours : {1.0, 6.0, 24.0}) Row("fa2-gpu, duration", fa2, 100, 3600 * hours);
  for (double rps : {25.0, 50.0, 200.0}) Row("fa2-gpu, rate", fa2, rps, 3600);
  for (int n : {2, 5, 10}) Row("chain of " + std::to_string(n) + " tasks", Chain(n), 50, 3600);
  return 0;
}

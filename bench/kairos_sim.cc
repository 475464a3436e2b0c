// Kairos's headline on the measured data of its artifact (../shared/reference-data/
// hpdc23-kairos, Copyright (c) 2023 Baolin Li, MIT): the allowable throughput (p99 within QoS)
// of the similarity pick under $2.5/h, with Kairos's matcher, against the best homogeneous pool
// under the same budget served first come first served. Simulated; prints markdown.
#include "sim/kairos_sim.h"

#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "optimizer/kairos.h"

namespace {

using namespace pipescale::optimizer::kairos;

const std::string kData =
    std::string(PIPESCALE_SOURCE_DIR) + "/../shared/reference-data/hpdc23-kairos/";
const std::vector<std::string> kTypes = {"g4dn.xlarge", "c5n.2xlarge", "r5n.large", "t3.xlarge"};

std::vector<std::vector<std::string>> Csv(const std::string& file) {
  std::ifstream in(kData + file);
  std::vector<std::vector<std::string>> rows;
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::vector<std::string> cells;
    std::stringstream s(line);
    for (std::string cell; std::getline(s, cell, ',');) cells.push_back(cell);
    rows.push_back(std::move(cells));
  }
  return rows;
}

}  // namespace

int main() {
  std::ifstream instance_file(kData + "instance.json");
  std::ifstream profile_file(kData + "allocator_profile.json");
  if (!instance_file || !profile_file) {
    std::fprintf(stderr, "needs %s (the shared reference data beside the repo)\n", kData.c_str());
    return 1;
  }
  const auto instance = nlohmann::json::parse(instance_file);
  const auto profiles = nlohmann::json::parse(profile_file);
  const std::vector<double> prices = instance["price"].get<std::vector<double>>();
  const std::vector<int> caps = instance["max_num"].get<std::vector<int>>();
  const double budget = instance["cost"].get<double>();
  std::map<std::string, std::map<std::string, std::map<int, double>>> tables;
  for (const auto& r : Csv("latency_summary.csv"))
    tables[r[0]][r[1]][std::stoi(r[2])] = std::stod(r[12]);
  BatchMix mix;
  for (const auto& r : Csv("batch_size_pmf.csv"))
    mix.emplace_back(std::stoi(r[0]), std::stod(r[1]));
  const std::map<std::string, double> qos = {
      {"ncf", 5}, {"rm2", 350}, {"wnd", 25}, {"mtwnd", 25}, {"dien", 35}};

  // The best homogeneous pool within the budget: as many base instances as it buys.
  const int homogeneous = static_cast<int>(budget / prices[0]);
  std::printf(
      "| model | pick | bound (qps) | Kairos (qps) | %d x %s, FCFS (qps) | scaled to $%.1f | pick "
      "/ scaled |\n",
      homogeneous, kTypes[0].c_str(), budget);
  std::printf("|---|---|---:|---:|---:|---:|---:|\n");
  for (const std::string model : {"ncf", "rm2", "wnd", "mtwnd", "dien"}) {
    const auto& p = profiles[model];
    Profile profile{.base_qps = p[kTypes[0]]["qps"].get<double>(), .auxiliary = {}};
    for (size_t i = 1; i < kTypes.size(); ++i) {
      const auto& a = p[kTypes[i]];
      AuxiliaryProfile aux{.name = kTypes[i],
                           .violating_batch = a["vio_batch"].get<int>(),
                           .small_ratio = a["small_ratio"].get<double>(),
                           .time_ratio = a["time_ratio"].get<double>(),
                           .qps = a["qps"].get<double>(),
                           .qps_below = {}};
      for (const auto& [s, q] : a["all_batch"].items())
        aux.qps_below[std::stoi(s)] = q.get<double>();
      profile.auxiliary.push_back(aux);
    }
    std::vector<std::function<double(int)>> latency;
    for (const auto& type : kTypes) {
      const std::map<int, double> table = tables[model][type];
      latency.push_back([table](int batch) { return table.lower_bound(batch)->second; });
    }
    const Pick pick = PickConfiguration(RankConfigurations(profile, prices, caps, budget));
    const double kairos =
        pipescale::sim::AllowableQps(latency, pick.config.counts, mix, qos.at(model),
                                     pipescale::sim::Policy::kKairos, 1.2 * pick.config.bound.qps);
    std::vector<int> homog(kTypes.size(), 0);
    homog[0] = homogeneous;
    const double fcfs = pipescale::sim::AllowableQps(latency, homog, mix, qos.at(model),
                                                     pipescale::sim::Policy::kFcfs,
                                                     1.2 * homogeneous * profile.base_qps);
    const double scaled = fcfs * budget / (homogeneous * prices[0]);
    const auto& c = pick.config.counts;
    std::printf("| %s | (%d,%d,%d,%d) | %.1f | %.1f | %.1f | %.1f | %.2fx |\n", model.c_str(), c[0],
                c[1], c[2], c[3], pick.config.bound.qps, kairos, fcfs, scaled, kairos / scaled);
  }
  return 0;
}

// Kairos's headline on the measured data of its artifact (tests/data/hpdc23-kairos,
// Copyright (c) 2023 Baolin Li, MIT): the allowable throughput (p99 within QoS)
// of the similarity pick under $2.5/h, with Kairos's matcher, against the best homogeneous pool
// under the same budget served first come first served. Simulated; prints markdown.
#include "sim/kairos_sim.h"

#include <cstdio>
#include <string>
#include <vector>

#include "optimizer/kairos.h"
#include "support/kairos_data.h"

using namespace pipescale::optimizer::kairos;
namespace data = pipescale::testing::kairos_data;

int main() {
  if (!data::Available()) {
    std::fprintf(stderr, "needs tests/data/hpdc23-kairos in the source tree\n");
    return 1;
  }
  const std::vector<double> prices = data::Prices();
  const std::vector<int> caps = data::MaxCounts();
  const double budget = data::Budget();
  const BatchMix mix = data::Mix();

  // The best homogeneous pool within the budget: as many base instances as it buys.
  const int homogeneous = static_cast<int>(budget / prices[0]);
  std::printf(
      "| model | pick | bound (qps) | Kairos (qps) | %d x %s, FCFS (qps) | scaled to $%.1f | pick "
      "/ scaled |\n",
      homogeneous, data::Types()[0].c_str(), budget);
  std::printf("|---|---|---:|---:|---:|---:|---:|\n");
  for (const std::string model : {"ncf", "rm2", "wnd", "mtwnd", "dien"}) {
    const Profile profile = data::ShippedProfile(model);
    const auto latency = data::Latency(model);
    const Pick pick = PickConfiguration(RankConfigurations(profile, prices, caps, budget));
    const double kairos =
        pipescale::sim::AllowableQps(latency, pick.config.counts, mix, data::QosMs(model),
                                     pipescale::sim::Policy::kKairos, 1.2 * pick.config.bound.qps);
    std::vector<int> homog(data::Types().size(), 0);
    homog[0] = homogeneous;
    const double fcfs = pipescale::sim::AllowableQps(latency, homog, mix, data::QosMs(model),
                                                     pipescale::sim::Policy::kFcfs,
                                                     1.2 * homogeneous * profile.base_qps);
    const double scaled = fcfs * budget / (homogeneous * prices[0]);
    const auto& c = pick.config.counts;
    std::printf("| %s | (%d,%d,%d,%d) | %.1f | %.1f | %.1f | %.1f | %.2fx |\n", model.c_str(), c[0],
                c[1], c[2], c[3], pick.config.bound.qps, kairos, fcfs, scaled, kairos / scaled);
  }
  return 0;
}

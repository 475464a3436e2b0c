#include "node_agent/pod_status.h"

#include <gtest/gtest.h>

namespace pipescale::emulator {
namespace {

using State = ContainerView::State;

ContainerView Container(State state, bool ready = false, int exit_code = 0) {
  ContainerView c{
      .name = "m", .image = "img", .state = state, .exit_code = exit_code, .ready = ready};
  if (state != State::kWaiting) c.started_at = "2026-01-01T00:00:00Z";
  return c;
}

TEST(PodPhase, FollowsTheKubeletsRules) {
  EXPECT_EQ(PodPhase({.containers = {Container(State::kWaiting)}}), "Pending");
  EXPECT_EQ(PodPhase({.containers = {Container(State::kRunning)}}), "Running");
  // Restarted under Always: still Running, as it will run again.
  EXPECT_EQ(PodPhase({.containers = {Container(State::kTerminated, false, 1)}}), "Running");
  EXPECT_EQ(PodPhase({.restart_policy = "Never", .containers = {Container(State::kTerminated)}}),
            "Succeeded");
  EXPECT_EQ(PodPhase({.restart_policy = "Never",
                      .containers = {Container(State::kTerminated, false, 2)}}),
            "Failed");
  EXPECT_EQ(PodPhase({.restart_policy = "OnFailure",
                      .containers = {Container(State::kTerminated, false, 2)}}),
            "Running");
}

TEST(PodStatus, IsReadyOnlyWhenEveryContainerIs) {
  const PodView pod{
      .pod_ip = "127.1.0.2",
      .containers = {Container(State::kRunning, true), Container(State::kRunning, false)}};
  const nlohmann::json status = PodStatus(pod, nlohmann::json::object());
  EXPECT_EQ(status["podIP"], "127.1.0.2");
  for (const auto& c : status["conditions"]) {
    if (c["type"] == "Ready") {
      EXPECT_EQ(c["status"], "False");
      EXPECT_EQ(c["reason"], "ContainersNotReady");
    }
  }
  EXPECT_EQ(status["containerStatuses"][0]["ready"], true);
  EXPECT_TRUE(status["containerStatuses"][0]["state"].contains("running"));
}

TEST(PodStatus, KeepsTransitionTimesWhileNothingChanges) {
  const PodView pod{.pod_ip = "127.1.0.2", .containers = {Container(State::kRunning, true)}};
  nlohmann::json old = PodStatus(pod, nlohmann::json::object());
  for (auto& c : old["conditions"]) c["lastTransitionTime"] = "2020-01-01T00:00:00Z";
  const nlohmann::json again = PodStatus(pod, old);
  for (const auto& c : again["conditions"]) {
    EXPECT_EQ(c["lastTransitionTime"], "2020-01-01T00:00:00Z") << c["type"];
  }
}

}  // namespace
}  // namespace pipescale::emulator

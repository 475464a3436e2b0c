// The router's work on a request's body, without the network: the parse that checks the request
// (400 naming a field), the first task's body with the router's parameters, reading the answer
// and the next task's body, as a two-task chain does them, at the sizes of bench/payloads.h.
// What router_bench's CPU per request spends on the body, per byte.
#include <benchmark/benchmark.h>

#include "payloads.h"
#include "routing/request.h"

namespace {

using namespace pipescale::routing;

const std::vector<std::pair<std::string_view, std::string>> kParameters = {
    {kDeadlineParameter, "500"}, {kPathParameter, "\"p\""}};

const std::string& Payload(int64_t size) {
  static const std::string kSizes[] = {pipescale::bench::RequestOf("1KB"),
                                       pipescale::bench::RequestOf("100KB"),
                                       pipescale::bench::RequestOf("1MB")};
  return kSizes[size];
}

void SetLabel(benchmark::State& state) {
  static const char* kNames[] = {"1KB", "100KB", "1MB"};
  state.SetLabel(kNames[state.range(0)]);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(Payload(state.range(0)).size()));
}

// The request's check alone: its syntax, the tensors' names, datatypes, shapes and counts.
void BM_Parse(benchmark::State& state) {
  const std::string& body = Payload(state.range(0));
  for (auto _ : state) {
    auto parsed = ParseInferRequest(body);
    if (!parsed) state.SkipWithError(parsed.error().message.c_str());
    benchmark::DoNotOptimize(parsed);
  }
  SetLabel(state);
}
BENCHMARK(BM_Parse)->DenseRange(0, 2);

// All a two-task chain does with bodies: the check, the first call's body, its answer read, the
// second call's body, its answer read and the client's outputs named.
void BM_TwoTaskChain(benchmark::State& state) {
  const std::string& body = Payload(state.range(0));
  const std::string reply = pipescale::bench::kReply;
  for (auto _ : state) {
    auto parsed = ParseInferRequest(body);
    const Wire first = parsed->body.Render(kParameters);
    benchmark::DoNotOptimize(first);
    auto answer = ReadAnswer(reply);
    const Wire second = NextBody(*answer, parsed->body).Render(kParameters);
    benchmark::DoNotOptimize(second);
    auto last = ReadAnswer(reply);
    auto named = NamedOutputs("b", last->outputs);
    benchmark::DoNotOptimize(named);
  }
  SetLabel(state);
}
BENCHMARK(BM_TwoTaskChain)->DenseRange(0, 2);

}  // namespace

BENCHMARK_MAIN();

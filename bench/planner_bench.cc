// Planner speed. The bar: a full strategy search for a 405B dense
// model on 16,384 H100s in at most 1 s on one core (BM_Search405bOn16kH100).
#include <benchmark/benchmark.h>

#include "planner/search.h"

namespace {

using namespace tidal::planner;

void BM_Search405bOn16kH100(benchmark::State& state) {
  const ModelSpec m = *FindModelPreset("llama3-405b");
  const GpuSpec g = *FindGpu("h100");
  const Placement pl = DefaultPlacement(g, 16384);
  const Calibration cal = DefaultCalibration();
  long evaluated = 0;
  for (auto _ : state) {
    auto r = SearchPlans(m, g, pl, SearchOptions{}, cal);
    if (!r) {
      state.SkipWithError(r.error().message.c_str());
      return;
    }
    evaluated = r->evaluated;
    benchmark::DoNotOptimize(r->plans.front().prediction.step_time_s);
  }
  state.counters["strategies"] = static_cast<double>(evaluated);
}
BENCHMARK(BM_Search405bOn16kH100)->Unit(benchmark::kMillisecond);

void BM_Search70bOn512H100(benchmark::State& state) {
  const ModelSpec m = *FindModelPreset("llama3-70b");
  const GpuSpec g = *FindGpu("h100");
  const Placement pl = DefaultPlacement(g, 512);
  for (auto _ : state) benchmark::DoNotOptimize(SearchPlans(m, g, pl, SearchOptions{}, DefaultCalibration()));
}
BENCHMARK(BM_Search70bOn512H100)->Unit(benchmark::kMillisecond);

void BM_SearchDeepSeekV3On2048H100(benchmark::State& state) {
  const ModelSpec m = *FindModelPreset("deepseek-v3");
  const GpuSpec g = *FindGpu("h100");
  const Placement pl = DefaultPlacement(g, 2048);
  for (auto _ : state) benchmark::DoNotOptimize(SearchPlans(m, g, pl, SearchOptions{}, DefaultCalibration()));
}
BENCHMARK(BM_SearchDeepSeekV3On2048H100)->Unit(benchmark::kMillisecond);

// One prediction: what the scheduler pays per placement it scores.
void BM_PredictOnePlacement(benchmark::State& state) {
  const ModelSpec m = *FindModelPreset("llama3-70b");
  const GpuSpec g = *FindGpu("h100");
  const Placement pl = DefaultPlacement(g, 512);
  Strategy s;
  s.tp = 8;
  s.pp = 4;
  s.dp = 16;
  s.grad_accum = 64;
  s.zero_stage = 1;
  s.sequence_parallel = true;
  for (auto _ : state) benchmark::DoNotOptimize(PredictUnchecked(m, g, pl, s, DefaultCalibration()));
}
BENCHMARK(BM_PredictOnePlacement);

}  // namespace

BENCHMARK_MAIN();

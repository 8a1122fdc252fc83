// Planner speed. The issues' bars: a full strategy search for a 405B dense
// model on 16,384 H100s (BM_Search405bOn16kH100) and for a 671B MoE on
// 16,384 GB200 NVL72 GPUs (BM_SearchDeepSeekV3On16kGb200) in at most 1 s on
// one core.
#include <benchmark/benchmark.h>

#include "planner/search.h"

namespace {

using namespace tidal::planner;

// A full search per iteration; the counter says how many strategies it tried.
void TimeSearch(benchmark::State& state, const char* model, const char* gpu, int gpus, SearchOptions opt) {
  const ModelSpec m = *FindModelPreset(model);
  const GpuSpec g = *FindGpu(gpu);
  const Placement pl = DefaultPlacement(g, gpus);
  const Calibration cal = DefaultCalibration();
  long evaluated = 0;
  for (auto _ : state) {
    auto r = SearchPlans(m, g, pl, opt, cal);
    if (!r) {
      state.SkipWithError(r.error().message.c_str());
      return;
    }
    evaluated = r->evaluated;
    benchmark::DoNotOptimize(r->plans.front().prediction.step_time_s);
  }
  state.counters["strategies"] = static_cast<double>(evaluated);
}

void BM_Search405bOn16kH100(benchmark::State& state) { TimeSearch(state, "llama3-405b", "h100", 16384, {}); }
BENCHMARK(BM_Search405bOn16kH100)->Unit(benchmark::kMillisecond);

void BM_Search70bOn512H100(benchmark::State& state) {
  const ModelSpec m = *FindModelPreset("llama3-70b");
  const GpuSpec g = *FindGpu("h100");
  const Placement pl = DefaultPlacement(g, 512);
  const Calibration cal = DefaultCalibration();
  for (auto _ : state) benchmark::DoNotOptimize(SearchPlans(m, g, pl, SearchOptions{}, cal));
}
BENCHMARK(BM_Search70bOn512H100)->Unit(benchmark::kMillisecond);

void BM_SearchDeepSeekV3On2048H100(benchmark::State& state) {
  const ModelSpec m = *FindModelPreset("deepseek-v3");
  const GpuSpec g = *FindGpu("h100");
  const Placement pl = DefaultPlacement(g, 2048);
  const Calibration cal = DefaultCalibration();
  for (auto _ : state) benchmark::DoNotOptimize(SearchPlans(m, g, pl, SearchOptions{}, cal));
}
BENCHMARK(BM_SearchDeepSeekV3On2048H100)->Unit(benchmark::kMillisecond);

void BM_SearchDeepSeekV3On16kGb200(benchmark::State& state) {
  SearchOptions opt;
  opt.precision = Precision::kMxfp8;
  TimeSearch(state, "deepseek-v3", "gb200", 16384, opt);
}
BENCHMARK(BM_SearchDeepSeekV3On16kGb200)->Unit(benchmark::kMillisecond);

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
  const Calibration cal = DefaultCalibration();  // the scheduler holds one
  for (auto _ : state) benchmark::DoNotOptimize(PredictUnchecked(m, g, pl, s, cal));
}
BENCHMARK(BM_PredictOnePlacement);

}  // namespace

BENCHMARK_MAIN();

#include "telemetry/mfu.h"

#include <algorithm>
#include <filesystem>

#include <gtest/gtest.h>

namespace tidal::telemetry {
namespace {

const std::string kFix = std::string(TIDAL_SHARED_DIR) + "/fixtures/";

#define SKIP_WITHOUT_FIXTURES() \
  if (!std::filesystem::exists(kFix)) GTEST_SKIP() << "no " << kFix << " (shared fixtures not mounted)"

bool Starts(const std::optional<Figure>& f, std::string_view prefix) { return f && f->method.starts_with(prefix); }

planner::Strategy Layout(int tp, int pp, int dp, int ga) {
  planner::Strategy s;
  s.tp = tp;
  s.pp = pp;
  s.dp = dp;
  s.grad_accum = ga;
  s.sequence_parallel = tp > 1;
  return s;
}

TEST(MfuTest, ModelFlopsFromLogArgumentsMatchWhatMegatronPrinted) {
  SKIP_WITHOUT_FIXTURES();
  auto log = ReadMegatronLog(kFix + "megatron-logs/megatron-lm-rocm-mi300x-tp4pp2-28b-2025-11.log");
  ASSERT_TRUE(log);
  MfuInputs in;
  in.log = &*log;
  auto r = EstimateMfu(in);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_TRUE(Starts(r->tflops_per_gpu, "model FLOPs"));
  ASSERT_TRUE(r->logged_tflops_per_gpu);
  // Our Megatron formula, the log's own arguments and its median step time
  // reproduce the throughput Megatron printed.
  EXPECT_NEAR(r->tflops_per_gpu->value / r->logged_tflops_per_gpu->value, 1.0, 0.02);
  EXPECT_FALSE(r->mfu);  // MI300X is not a preset: no peak, so no MFU, and a note says why
  ASSERT_FALSE(r->notes.empty());
  EXPECT_NE(r->notes[0].find("--gpu"), std::string::npos);
}

TEST(MfuTest, MixtralH100LogGivesMfuAndModelledCommShare) {
  SKIP_WITHOUT_FIXTURES();
  auto log = ReadMegatronLog(kFix + "megatron-logs/issue-megatron-lm-756-mixtral-h100-2024-04-iterations.part4.log");
  ASSERT_TRUE(log);
  MfuInputs in;
  in.log = &*log;
  in.model = *planner::FindModelPreset("mixtral-8x7b");
  in.model->seq_len = 2048;
  in.gpu = *planner::FindGpu("h100");
  in.gpus = 16;
  // Issue #756 layout: TP 4, EP 8 inside DP 4, GBS 128.
  planner::Strategy s = Layout(4, 1, 4, 32);
  in.strategy = s;
  auto r = EstimateMfu(in);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_TRUE(r->mfu);
  EXPECT_GT(r->mfu->value, 0.15);
  EXPECT_LT(r->mfu->value, 0.35);
  EXPECT_TRUE(Starts(r->comm_share, "fallback step 1")) << (r->comm_share ? r->comm_share->method : "none");
  EXPECT_GE(r->comm_share->value, 0);
  EXPECT_LT(r->comm_share->value, 1);
}

TEST(MfuTest, FallbackChainOrder) {
  SKIP_WITHOUT_FIXTURES();
  // Measured communication timers win.
  auto jz = ReadMegatronLog(kFix + "megatron-logs/megatron-lm-2021-jeanzay-v100-tp4pp16-30b.log");
  ASSERT_TRUE(jz);
  MfuInputs a;
  a.log = &*jz;
  auto ra = EstimateMfu(a);
  ASSERT_TRUE(ra);
  EXPECT_TRUE(Starts(ra->comm_share, "log timers"));
  EXPECT_GT(ra->comm_share->value, 0.5);  // 811 ms embedding all-reduce of a 1439 ms step
  // Only compute timers: step 1 from the log.
  auto bert = ReadMegatronLog(kFix + "megatron-logs/issue-megatron-lm-5-bert-2019.log");
  ASSERT_TRUE(bert);
  MfuInputs b;
  b.log = &*bert;
  auto rb = EstimateMfu(b);
  ASSERT_TRUE(rb);
  EXPECT_TRUE(Starts(rb->comm_share, "fallback step 1"));
  // DCGM only, model and layout known: step 2 (the collective model).
  auto dcgm = ReadDcgmFile(kFix + "dcgm-exporter/cloud-native-docs-a100-mig-sample.prom");
  ASSERT_TRUE(dcgm);
  MfuInputs c;
  c.dcgm = *dcgm;
  c.model = *planner::FindModelPreset("llama3-8b");
  c.gpu = *planner::FindGpu("a100");
  c.gpus = 64;
  c.strategy = Layout(2, 1, 32, 32);
  auto rc = EstimateMfu(c);
  ASSERT_TRUE(rc) << rc.error().message;
  EXPECT_TRUE(Starts(rc->comm_share, "fallback step 2"));
  EXPECT_TRUE(Starts(rc->tflops_per_gpu, "DCGM PIPE_TENSOR_ACTIVE"));
  EXPECT_NEAR(rc->tflops_per_gpu->value, 0.9298465 * 312, 0.01);
  // Nothing but a GPU count: step 3, the decay coefficient.
  MfuInputs d;
  d.dcgm = *dcgm;
  d.gpus = 512;
  auto rd = EstimateMfu(d);
  ASSERT_TRUE(rd);
  EXPECT_TRUE(Starts(rd->comm_share, "fallback step 3"));
  EXPECT_NEAR(rd->comm_share->value, 1 - 0.9 * 0.9 * 0.9, 1e-12);
  d.decay = 0.8;
  EXPECT_FALSE(EstimateMfu(d));
  MfuInputs none;
  EXPECT_FALSE(EstimateMfu(none));
}

TEST(MfuTest, BloomLogThroughputIsNarayananEq3) {
  SKIP_WITHOUT_FIXTURES();
  // BLOOM-176B on 384 A100s printed ~147 TFLOPs per GPU; BigScience counted
  // FLOPs as Narayanan eq. 3 (activation checkpointing on). Our formula, the
  // published architecture and the logged step time must give the same.
  auto log = ReadMegatronLog(kFix + "megatron-logs/deepspeed-megatron-deepspeed-bloom-176b-2022-04.log");
  ASSERT_TRUE(log);
  const auto m = *planner::FindModelPreset("bloom-176b");
  for (const auto& it : log->iterations) {
    ASSERT_TRUE(it.elapsed_s && it.tflops_per_gpu && it.global_batch);
    const double ours = planner::FlopsPerToken(m, m.seq_len, planner::FlopsConvention::kNarayananEq3) *
                        static_cast<double>(*it.global_batch) * m.seq_len / *it.elapsed_s / 384 / 1e12;
    EXPECT_NEAR(ours / *it.tflops_per_gpu, 1.0, 0.02) << "iteration " << it.iteration;
  }
}

TEST(MfuTest, GpuFromDcgmModelName) {
  SKIP_WITHOUT_FIXTURES();
  auto dcgm = ReadDcgmFile(kFix + "dcgm-exporter/issue-dcgm-149-dgx-a100-nvlink-tx.prom");
  ASSERT_TRUE(dcgm);
  MfuInputs in;
  in.dcgm = *dcgm;
  in.gpus = 4;
  auto r = EstimateMfu(in);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->gpu_name, "a100");
  ASSERT_TRUE(r->nvlink_bytes_per_s);
  EXPECT_EQ(r->nvlink_bytes_per_s->value, 0);
  // 4 GPUs of one DGX A100: the counters are complete (and idle here).
  EXPECT_TRUE(Starts(r->comm_share, "DCGM counters")) << (r->comm_share ? r->comm_share->method : "none");
  EXPECT_EQ(r->comm_share->value, 0);
  in.gpus = 64;  // across nodes: NVLink counters miss the network, so the chain is used
  auto wide = EstimateMfu(in);
  ASSERT_TRUE(wide);
  EXPECT_TRUE(Starts(wide->comm_share, "fallback step 3"));
}

// A hand-made log: the step time is the median of the elapsed times after
// iteration 1 (warm-up); with an even count the mean of the two middle ones.
// The data are chosen so that mean, lower and upper middle all differ.
MegatronLog Iterations(const std::vector<double>& elapsed, const std::vector<double>& tflops) {
  MegatronLog log;
  log.source = "hand-made";
  for (size_t i = 0; i < std::max(elapsed.size(), tflops.size()); ++i) {
    IterationRecord it;
    it.iteration = static_cast<long>(i) + 1;
    if (i < elapsed.size()) it.elapsed_s = elapsed[i];
    if (i < tflops.size()) it.tflops_per_gpu = tflops[i];
    log.iterations.push_back(it);
  }
  return log;
}

TEST(MfuTest, StepTimeIsTheMedianOfTheIterationsAfterTheFirst) {
  // After dropping iteration 1 (100 s): {10, 1, 4, 2} -> sorted 1 2 4 10,
  // median (2 + 4) / 2 = 3 (upper middle 4, lower 2, mean 4.25).
  MegatronLog even = Iterations({100, 10, 1, 4, 2}, {});
  MfuInputs in;
  in.log = &even;
  auto r = EstimateMfu(in);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_TRUE(r->step_time_s);
  EXPECT_DOUBLE_EQ(r->step_time_s->value, 3.0);
  EXPECT_NE(r->step_time_s->method.find("over 4 iterations"), std::string::npos) << r->step_time_s->method;
  // Odd count: {9, 1, 2} -> 2 (mean 4).
  MegatronLog odd = Iterations({100, 9, 1, 2}, {});
  in.log = &odd;
  r = EstimateMfu(in);
  ASSERT_TRUE(r && r->step_time_s);
  EXPECT_DOUBLE_EQ(r->step_time_s->value, 2.0);
  // Two iterations after the first: the mean of both.
  MegatronLog two = Iterations({100, 5, 1}, {});
  in.log = &two;
  r = EstimateMfu(in);
  ASSERT_TRUE(r && r->step_time_s);
  EXPECT_DOUBLE_EQ(r->step_time_s->value, 3.0);
  // A log that starts later keeps its first iteration: {7, 1, 3, 5} -> 4.
  MegatronLog later = Iterations({7, 1, 3, 5}, {});
  for (auto& it : later.iterations) it.iteration += 10;
  in.log = &later;
  r = EstimateMfu(in);
  ASSERT_TRUE(r && r->step_time_s);
  EXPECT_DOUBLE_EQ(r->step_time_s->value, 4.0);
  // The printed throughput is a median over every iteration (none dropped):
  // {100, 10, 1, 4} -> (4 + 10) / 2 = 7; and it is what TFLOP/s falls back to.
  MegatronLog tf = Iterations({}, {100, 10, 1, 4});
  in.log = &tf;
  r = EstimateMfu(in);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_TRUE(r->logged_tflops_per_gpu);
  EXPECT_DOUBLE_EQ(r->logged_tflops_per_gpu->value, 7.0);
  ASSERT_TRUE(r->tflops_per_gpu);
  EXPECT_DOUBLE_EQ(r->tflops_per_gpu->value, 7.0);
  EXPECT_FALSE(r->step_time_s);
}

}  // namespace
}  // namespace tidal::telemetry

#include "telemetry/megatron_log.h"

#include <filesystem>

#include <gtest/gtest.h>

namespace tidal::telemetry {
namespace {

const std::string kLogs = std::string(TIDAL_SHARED_DIR) + "/fixtures/megatron-logs/";

#define SKIP_WITHOUT_FIXTURES() \
  if (!std::filesystem::exists(kLogs)) GTEST_SKIP() << "no " << kLogs << " (shared fixtures not mounted)"

MegatronLog Read(const std::string& name) {
  auto l = ReadMegatronLog(kLogs + name);
  EXPECT_TRUE(l) << l.error().message;
  return l ? *l : MegatronLog{};
}

TEST(MegatronLogTest, EveryFixtureParses) {
  SKIP_WITHOUT_FIXTURES();
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(kLogs)) {
    if (e.path().extension() != ".log") continue;
    auto l = ReadMegatronLog(e.path().string());
    EXPECT_TRUE(l) << e.path() << ": " << l.error().message;
    ++files;
  }
  EXPECT_GE(files, 18);
}

TEST(MegatronLogTest, MegatronCore2024WithTimestampAndThroughput) {
  SKIP_WITHOUT_FIXTURES();
  const auto log = Read("issue-megatron-lm-756-mixtral-h100-2024-04-iterations.part4.log");
  ASSERT_EQ(log.iterations.size(), 3u);
  const auto& it = log.iterations[0];
  EXPECT_EQ(it.iteration, 29);
  EXPECT_NEAR(*it.elapsed_s, 5.9121, 1e-9);
  EXPECT_NEAR(*it.tflops_per_gpu, 220.9, 1e-9);
  EXPECT_EQ(*it.global_batch, 128);
}

TEST(MegatronLogTest, RocmLogArgumentsWorldSizeAndIterations) {
  SKIP_WITHOUT_FIXTURES();
  const auto log = Read("megatron-lm-rocm-mi300x-tp4pp2-28b-2025-11.log");
  EXPECT_EQ(log.world_size, 8);
  EXPECT_EQ(log.tensor_parallel, 4);
  EXPECT_EQ(log.pipeline_parallel, 2);
  EXPECT_EQ(log.data_parallel, 1);
  EXPECT_EQ(log.context_parallel, 1);
  EXPECT_EQ(log.ArgInt("num_layers"), 56);
  EXPECT_EQ(log.ArgInt("num_query_groups"), 24);
  EXPECT_EQ(log.ArgBool("use_distributed_optimizer"), true);
  EXPECT_EQ(log.arguments.at("recompute_granularity"), "selective");
  ASSERT_EQ(log.iterations.size(), 17u);
  for (const auto& it : log.iterations) {
    EXPECT_GE(*it.tflops_per_gpu, 233);
    EXPECT_LE(*it.tflops_per_gpu, 252);
  }
}

TEST(MegatronLogTest, SecondsForksAndTorchrunPrefix) {
  SKIP_WITHOUT_FIXTURES();
  const auto ju = Read("megatron-jubench-juwels-booster-a100-2024.log");
  ASSERT_EQ(ju.iterations.size(), 4u);
  EXPECT_NEAR(*ju.iterations[0].elapsed_s, 35.8651, 1e-9);
  EXPECT_NEAR(*ju.iterations[0].tflops_per_gpu, 199.03, 1e-9);
  EXPECT_NEAR(*ju.iterations[0].samples_per_s, 28.551, 1e-9);
  const auto bloom = Read("deepspeed-megatron-deepspeed-bloom-176b-2022-04.log");
  ASSERT_GE(bloom.iterations.size(), 10u);
  EXPECT_NEAR(*bloom.iterations[0].elapsed_s, 106.46, 1e-9);
  EXPECT_EQ(*bloom.iterations[0].global_batch, 2048);
}

TEST(MegatronLogTest, OldFormatsAndNemo) {
  SKIP_WITHOUT_FIXTURES();
  const auto bert = Read("issue-megatron-lm-5-bert-2019.log");
  ASSERT_GE(bert.iterations.size(), 4u);
  EXPECT_NEAR(*bert.iterations[0].elapsed_s, 0.3349, 1e-9);
  ASSERT_FALSE(bert.timers.empty());
  EXPECT_NEAR(bert.timers[0].ms.at("forward"), 132.49, 1e-9);
  EXPECT_NEAR(bert.timers[0].ms.at("batch generator"), 45.29, 1e-9);
  const auto nemo2 = Read("nemo2-bionemo-recipes-pr740-iterations.log");
  ASSERT_FALSE(nemo2.iterations.empty());
  EXPECT_EQ(nemo2.iterations[0].iteration, 120);
  EXPECT_NEAR(*nemo2.iterations[0].elapsed_s, 0.03146, 1e-12);
  EXPECT_EQ(*nemo2.iterations[0].global_batch, 1);
  const auto nemo1 = Read("nemo1-launcher-issue-55-progressbar-2023-05.log");
  ASSERT_EQ(nemo1.iterations.size(), 1u);
  EXPECT_EQ(nemo1.iterations[0].iteration, 795);
  EXPECT_NEAR(*nemo1.iterations[0].elapsed_s, 41.36, 1e-9);
  const auto jz = Read("megatron-lm-2021-jeanzay-v100-tp4pp16-30b.log");
  ASSERT_EQ(jz.timers.size(), 1u);
  EXPECT_NEAR(jz.timers[0].ms.at("backward-embedding-all-reduce"), 811.34, 1e-9);
  const auto alcf = Read("deepspeed-megatron-deepspeed-alcf-polaris-a100-2024-04.log");
  ASSERT_FALSE(alcf.iterations.empty());
  EXPECT_NEAR(*alcf.iterations[0].tflops_per_gpu, 47.23, 1e-9);
  EXPECT_NEAR(*alcf.iterations[0].tokens_per_gpu_per_s, 775.25, 1e-9);
  const auto ds = Read("deepspeed-issue-1825-samplespersec-2022-03.log");
  ASSERT_FALSE(ds.iterations.empty());
  EXPECT_NEAR(*ds.iterations[0].samples_per_s, 83.48609168106144, 1e-9);
}

TEST(MegatronLogTest, BadValueNamesFileLineAndField) {
  auto r = ParseMegatronLog(
      " iteration 1/ 10 | elapsed time per iteration (ms): 12.5 |\n"
      " iteration 2/ 10 | elapsed time per iteration (ms): fast | global batch size: 8 |\n",
      "run.log");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("run.log:2"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("elapsed time per iteration (ms)"), std::string::npos);
  auto t = ParseMegatronLog("time (ms) | forward-compute: 1.0 | backward-compute: x\n", "t.log");
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message.find("t.log:1: field 'backward-compute'"), std::string::npos) << t.error().message;
  EXPECT_TRUE(ParseMegatronLog("", "empty.log"));
  EXPECT_FALSE(ReadMegatronLog("/nonexistent.log"));
}

}  // namespace
}  // namespace tidal::telemetry

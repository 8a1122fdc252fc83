#include "framework/fragmentation.h"

#include <gtest/gtest.h>

namespace tidal {
namespace {

Job Pod(int64_t cpu, int32_t ngpu, int32_t milli, std::vector<std::string> spec = {}) {
  Job j;
  j.cpu_milli = cpu;
  j.num_gpu = ngpu;
  j.gpu_milli = milli;
  j.gpu_spec = std::move(spec);
  return j;
}

TEST(TypicalPodsTest, TakesMostPopularShapesUpToThresholdAndRenormalises) {
  GpuModelRegistry models;
  models.Intern("T4");
  std::vector<Job> jobs;
  for (int i = 0; i < 6; ++i) jobs.push_back(Pod(1000, 1, 500));
  for (int i = 0; i < 3; ++i) jobs.push_back(Pod(2000, 1, 1000));
  jobs.push_back(Pod(4000, 0, 0));
  auto t = BuildTypicalPods(jobs, models, {.popularity_threshold = 0.85});
  ASSERT_TRUE(t.has_value());
  ASSERT_EQ(t->size(), 2u);  // 6+3 = 90% >= 85%
  EXPECT_EQ((*t)[0].gpu_milli, 500);
  EXPECT_DOUBLE_EQ((*t)[0].popularity, 6.0 / 9.0);
  EXPECT_DOUBLE_EQ((*t)[1].popularity, 3.0 / 9.0);
  EXPECT_FALSE(BuildTypicalPods({}, models).has_value());
}

TEST(FragmentationTest, MatchesHandComputedCases) {
  GpuModelRegistry models;
  const GpuModelId t4 = models.Intern("T4");
  models.Intern("V100");
  // Typical pods: half want 600 milli of any GPU, half want a whole V100.
  std::vector<TypicalPod> typical(2);
  typical[0].cpu_milli = 1000;
  typical[0].gpu_milli = 600;
  typical[0].num_gpu = 1;
  typical[0].popularity = 0.5;
  typical[1].cpu_milli = 1000;
  typical[1].gpu_milli = 1000;
  typical[1].num_gpu = 1;
  typical[1].gpu_spec = "V100";
  typical[1].resolved.allowed = {models.Find("V100")};
  typical[1].popularity = 0.5;
  FragmentationModel m(typical);

  NodeFreeState s;
  s.cpu_left = 8000;
  s.model = t4;
  s.gpu_count = 2;
  s.gpu_left = {1000, 500};
  // Pod 0 fits; the 500 device is too small -> 0.5*500. Pod 1 has no access -> 0.5*1500.
  EXPECT_DOUBLE_EQ(m.NodeFragMilli(s), 0.5 * 500 + 0.5 * 1500);
  // Without CPU nothing fits: everything idle is fragmented.
  s.cpu_left = 500;
  EXPECT_DOUBLE_EQ(m.NodeFragMilli(s), 1500);
  // Memoised by sorted state: device order does not matter.
  s.cpu_left = 8000;
  s.gpu_left = {500, 1000};
  EXPECT_DOUBLE_EQ(m.NodeFragMilli(s), 1000);
  EXPECT_EQ(m.memo_size(), 2u);
}

// The boundaries of FGD's measure, hand-computed. One typical pod wants
// 1 x 600 milli and 2000 milli-CPU (popularity 1).
TEST(FragmentationTest, FreeMilliEqualToThePodsRequestIsNotFragmented) {
  GpuModelRegistry models;
  const GpuModelId t4 = models.Intern("T4");
  TypicalPod t;
  t.cpu_milli = 2000;
  t.gpu_milli = 600;
  t.num_gpu = 1;
  t.popularity = 1.0;
  FragmentationModel m({t});
  NodeFreeState s;
  s.cpu_left = 2000;  // exactly the pod's CPU
  s.model = t4;
  s.gpu_count = 3;
  s.gpu_left = {600, 599, 0};
  // 600 fits the pod exactly: only the 599 device is fragmented.
  EXPECT_DOUBLE_EQ(m.NodeFragMilli(s), 599);
  // One CPU milli short: the pod fits nowhere, all 1199 idle milli count.
  s.cpu_left = 1999;
  EXPECT_DOUBLE_EQ(m.NodeFragMilli(s), 1199);
  // No device reaches 600: all idle milli count.
  s.cpu_left = 2000;
  s.gpu_left = {599, 599, 0};
  EXPECT_DOUBLE_EQ(m.NodeFragMilli(s), 1198);
}

TEST(FragmentationTest, AMultiGpuPodNeedsAsManyFittingDevices) {
  GpuModelRegistry models;
  const GpuModelId t4 = models.Intern("T4");
  TypicalPod t;
  t.cpu_milli = 0;
  t.gpu_milli = 1000;
  t.num_gpu = 2;
  t.popularity = 0.5;
  TypicalPod cpu;  // a CPU pod: every idle milli is fragmented for it
  cpu.cpu_milli = 1000;
  cpu.popularity = 0.5;
  FragmentationModel m({t, cpu});
  NodeFreeState s;
  s.cpu_left = 1000;
  s.model = t4;
  s.gpu_count = 3;
  s.gpu_left = {1000, 1000, 300};
  // Two whole devices: exactly the two the pod needs; only the 300 counts
  // for it. The CPU pod counts all 2300.
  EXPECT_DOUBLE_EQ(m.NodeFragMilli(s), 0.5 * 300 + 0.5 * 2300);
  s.gpu_left = {1000, 999, 300};  // one fitting device of the two needed
  EXPECT_DOUBLE_EQ(m.NodeFragMilli(s), 0.5 * 2299 + 0.5 * 2299);
  // The total counts only the node's devices, not the unused array slots.
  s.gpu_count = 2;
  s.gpu_left = {1000, 1000, 300};
  EXPECT_EQ(s.TotalGpuLeft(), 2000);
  EXPECT_DOUBLE_EQ(m.NodeFragMilli(s), 0.5 * 0 + 0.5 * 2000);
}

// The typical pods are the most popular shapes until their count reaches
// the threshold: reaching it exactly stops there.
TEST(TypicalPodsTest, ThresholdReachedExactlyStopsThere) {
  GpuModelRegistry models;
  models.Intern("T4");
  std::vector<Job> jobs;
  for (int i = 0; i < 5; ++i) jobs.push_back(Pod(1000, 1, 500));
  for (int i = 0; i < 3; ++i) jobs.push_back(Pod(2000, 1, 1000));
  for (int i = 0; i < 2; ++i) jobs.push_back(Pod(4000, 0, 0));
  auto half = BuildTypicalPods(jobs, models, {.popularity_threshold = 0.5});
  ASSERT_TRUE(half.has_value());
  ASSERT_EQ(half->size(), 1u);  // 5 of 10 = 50%: enough
  EXPECT_DOUBLE_EQ((*half)[0].popularity, 1.0);
  auto more = BuildTypicalPods(jobs, models, {.popularity_threshold = 0.51});
  ASSERT_TRUE(more.has_value());
  ASSERT_EQ(more->size(), 2u);
  EXPECT_DOUBLE_EQ((*more)[0].popularity, 5.0 / 8);
  EXPECT_EQ((*more)[1].gpu_milli, 1000);
  auto all = BuildTypicalPods(jobs, models, {.popularity_threshold = 1.0});
  ASSERT_TRUE(all.has_value());
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[2].num_gpu, 0);  // CPU pods are counted by default
  auto gpu_only = BuildTypicalPods(jobs, models, {.popularity_threshold = 1.0, .include_cpu_pods = false});
  ASSERT_TRUE(gpu_only.has_value());
  EXPECT_EQ(gpu_only->size(), 2u);
  // Equal counts: the larger shape first (FGD's reverse sort).
  std::vector<Job> tie = {Pod(1000, 1, 500), Pod(2000, 1, 500)};
  auto t = BuildTypicalPods(tie, models, {.popularity_threshold = 0.5});
  ASSERT_TRUE(t.has_value());
  ASSERT_EQ(t->size(), 1u);
  EXPECT_EQ((*t)[0].cpu_milli, 2000);
}

}  // namespace
}  // namespace tidal

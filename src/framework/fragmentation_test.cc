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

}  // namespace
}  // namespace tidal

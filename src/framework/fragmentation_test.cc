#include "framework/fragmentation.h"

#include <array>
#include <optional>
#include <span>

#include <gtest/gtest.h>

#include "framework/devices.h"
#include "framework/framework.h"
#include "framework/gang.h"

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

// A pod asking 1 milli-GPU is a GPU pod (only a request of 0 is a CPU pod):
// every device with any free milli fits it, so nothing is fragmented for
// it; a device with 0 left adds 0.
TEST(FragmentationTest, AOneMilliPodIsAGpuPod) {
  GpuModelRegistry models;
  const GpuModelId t4 = models.Intern("T4");
  TypicalPod t;
  t.cpu_milli = 0;
  t.gpu_milli = 1;
  t.num_gpu = 1;
  t.popularity = 1.0;
  FragmentationModel m({t});
  NodeFreeState s;
  s.model = t4;
  s.gpu_count = 2;
  s.gpu_left = {700, 0};
  EXPECT_DOUBLE_EQ(m.NodeFragMilli(s), 0);
}

// Subtract takes a pod's CPU and its per-device milli off a node's state.
TEST(FragmentationTest, SubtractTakesCpuAndDeviceMilli) {
  NodeFreeState s;
  s.cpu_left = 8000;
  s.gpu_count = 3;
  s.gpu_left = {1000, 600, 1000};
  // Two devices' worth out of a longer buffer: only those two are read.
  const std::array<int32_t, 3> buf = {300, 600, 77};
  const NodeFreeState out = Subtract(s, 2000, std::span<const int32_t>(buf).first(2));
  EXPECT_EQ(out.cpu_left, 6000);
  EXPECT_EQ(out.gpu_left[0], 700);
  EXPECT_EQ(out.gpu_left[1], 0);
  EXPECT_EQ(out.gpu_left[2], 1000);
  EXPECT_EQ(out.TotalGpuLeft(), 1700);
  EXPECT_EQ(s.cpu_left, 8000);  // the input is unchanged
}

// --- The framework's cycle, NoFit and the gang helpers (found by mutation
// testing, issue 11), with local plugins so no policy is involved. ---

class AllowAll final : public FilterPlugin {
 public:
  std::string_view name() const override { return "B-AllowAll"; }
  bool Filter(const CycleContext&, const PodRequest&, NodeId) const override { return true; }
};
class FirstFree final : public DeviceSelectPlugin {
 public:
  std::string_view name() const override { return "A-FirstFree"; }
  std::optional<NodeAssignment> SelectDevices(const CycleContext& ctx, const PodRequest& pod, NodeId n) override {
    return devices::SelectBestFit(ctx.cluster, pod, n);
  }
};
class NoGang final : public GangPlacePlugin {
 public:
  std::string_view name() const override { return "C-NoGang"; }
  std::optional<Placement> PlaceGang(const CycleContext&, const PodRequest&) override { return std::nullopt; }
};

class NoMig final : public MigPlacePlugin {
 public:
  std::string_view name() const override { return "D-NoMig"; }
  std::optional<Placement> PlaceMig(const CycleContext&, const PodRequest&) override { return std::nullopt; }
};
class ByNode final : public ScorePlugin {
 public:
  std::string_view name() const override { return "E-ByNode"; }
  int64_t Score(const CycleContext&, const PodRequest&, NodeId n) override { return n; }
};

// Profile::Disable takes a plugin out of every extension point by name and
// says whether it found it; the others stay, and it stays owned (found by
// mutation testing, issue 11, seed 2: `mig && name == x` -> `||` dropped the
// MIG placer whatever the name, and read a null one).
TEST(FrameworkCycle, DisableRemovesOnlyTheNamedPlugin) {
  Profile p;
  p.filters.push_back(p.Own<AllowAll>());
  p.scores.push_back({p.Own<ByNode>(), 2});
  p.device_select = p.Own<FirstFree>();
  p.gang = p.Own<NoGang>();
  p.mig = p.Own<NoMig>();
  EXPECT_FALSE(p.Disable("no-such-plugin"));
  EXPECT_EQ(p.filters.size(), 1u);
  EXPECT_EQ(p.scores.size(), 1u);
  EXPECT_NE(p.device_select, nullptr);
  EXPECT_NE(p.gang, nullptr);
  EXPECT_NE(p.mig, nullptr);
  EXPECT_TRUE(p.Disable("C-NoGang"));
  EXPECT_EQ(p.gang, nullptr);
  EXPECT_NE(p.mig, nullptr);
  EXPECT_NE(p.device_select, nullptr);
  EXPECT_TRUE(p.Disable("D-NoMig"));
  EXPECT_EQ(p.mig, nullptr);
  EXPECT_FALSE(p.Disable("D-NoMig"));  // gone already (and no null plugin is read)
  EXPECT_TRUE(p.Disable("E-ByNode"));
  EXPECT_TRUE(p.scores.empty());
  EXPECT_EQ(p.filters.size(), 1u);
  EXPECT_TRUE(p.Disable("B-AllowAll"));
  EXPECT_TRUE(p.filters.empty());
  EXPECT_TRUE(p.Disable("A-FirstFree"));
  EXPECT_EQ(p.device_select, nullptr);
  EXPECT_EQ(p.owned.size(), 5u);
}

Job GpuJob(int32_t gpus, bool single_node, int64_t cpu = 1000) {
  Job j;
  j.name = "g";
  j.cpu_milli = cpu;
  j.memory_mib = 1024;
  j.num_gpu = gpus;
  j.gpu_milli = gpus > 0 ? kMilliPerGpu : 0;
  j.single_node = single_node;
  return j;
}

TEST(FrameworkCycle, TimingsCountEveryPluginsCyclesSortedByName) {
  auto c = ClusterState::Build({{"n0", 8000, 65536, 4, "T4"}});
  ASSERT_TRUE(c);
  Profile p;
  p.filters.push_back(p.Own<AllowAll>());
  p.device_select = p.Own<FirstFree>();
  Framework fw(std::move(p));
  Rng rng(1);
  CycleContext ctx{*c, rng};
  const Job j = GpuJob(1, true);
  const PodRequest pod = *ResolveRequest(j, c->models());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(fw.Schedule(ctx, pod));
  const auto t = fw.Timings();
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].name, "A-FirstFree");
  EXPECT_EQ(t[0].cycles, 3);
  EXPECT_EQ(t[1].name, "B-AllowAll");  // the filter phase is charged to the first filter
  EXPECT_EQ(t[1].cycles, 3);
}

// No node could ever host a gang asking more GPUs than the cluster's
// allowed models have: unresolvable. Exactly as many: only not now.
TEST(FrameworkCycle, AGangLargerThanTheClusterIsUnresolvable) {
  auto c = ClusterState::Build({{"n0", 8000, 65536, 4, "T4"}, {"n1", 8000, 65536, 4, "T4"}});
  ASSERT_TRUE(c);
  Profile p;
  p.filters.push_back(p.Own<AllowAll>());
  p.device_select = p.Own<FirstFree>();
  p.gang = p.Own<NoGang>();
  Framework fw(std::move(p));
  Rng rng(1);
  CycleContext ctx{*c, rng};
  const Job nine = GpuJob(9, false), eight = GpuJob(8, false);
  auto r9 = fw.Schedule(ctx, *ResolveRequest(nine, c->models()));
  ASSERT_FALSE(r9);
  EXPECT_EQ(r9.error().code, ErrorCode::kUnresolvable) << r9.error().message;
  auto r8 = fw.Schedule(ctx, *ResolveRequest(eight, c->models()));
  ASSERT_FALSE(r8);
  EXPECT_EQ(r8.error().code, ErrorCode::kUnschedulable) << r8.error().message;
}

// A gang's CPU is shared in proportion to its GPUs: 2 of 4 GPUs take half
// of 8000 milli-CPU, exactly what the node has; 8001 needs 4001 there.
TEST(GangHelpers, ShareFitsIsTheProportionalShareRoundedUp) {
  auto c = ClusterState::Build({{"n0", 4000, 65536, 4, "T4"}});
  ASSERT_TRUE(c);
  const Job even = GpuJob(4, false, 8000), odd = GpuJob(4, false, 8001);
  EXPECT_TRUE(gang::ShareFits(*c, *ResolveRequest(even, c->models()), 0, 2));
  EXPECT_FALSE(gang::ShareFits(*c, *ResolveRequest(odd, c->models()), 0, 2));
  EXPECT_FALSE(gang::ShareFits(*c, *ResolveRequest(even, c->models()), 0, 3));  // 6000
  EXPECT_TRUE(gang::NodeCanTake(*c, *ResolveRequest(even, c->models()), 0, 2));
}

// Assemble: 1001 milli-CPU over 4 GPUs as 2 + 1 + 1 is 500 + 250 + 250 with
// a remainder of 1, which goes to the first node whose share is fractional
// (2 x 1001 / 4 = 500.5): 501, 250, 250. Memory likewise.
TEST(GangHelpers, AssembleGivesTheRemainderToTheFirstFractionalShare) {
  auto c = ClusterState::Build(
      {{"n0", 8000, 65536, 4, "T4"}, {"n1", 8000, 65536, 4, "T4"}, {"n2", 8000, 65536, 4, "T4"}});
  ASSERT_TRUE(c);
  Job j = GpuJob(4, false, 1001);
  j.memory_mib = 1001;
  const PodRequest pod = *ResolveRequest(j, c->models());
  const std::vector<gang::Piece> pieces = {{0, {0, 1}}, {1, {0}}, {2, {3}}};
  auto p = gang::Assemble(*c, pod, pieces);
  ASSERT_TRUE(p);
  ASSERT_EQ(p->assignments.size(), 3u);
  EXPECT_EQ(p->assignments[0].cpu_milli, 501);
  EXPECT_EQ(p->assignments[1].cpu_milli, 250);
  EXPECT_EQ(p->assignments[2].cpu_milli, 250);
  EXPECT_EQ(p->assignments[0].memory_mib, 501);
  EXPECT_EQ(p->assignments[1].memory_mib, 250);
  EXPECT_EQ(p->assignments[2].memory_mib, 250);
  EXPECT_EQ(p->assignments[2].gpus, (std::vector<int32_t>{3}));
}

// A pod constrained to a model sees its own model's nodes like any pod:
// only the devices too small for it are fragmented.
TEST(FragmentationTest, AConstrainedPodOnItsOwnModel) {
  GpuModelRegistry models;
  const GpuModelId t4 = models.Intern("T4");
  TypicalPod t;
  t.gpu_milli = 600;
  t.num_gpu = 1;
  t.gpu_spec = "T4";
  t.resolved.allowed = {t4};
  t.popularity = 1.0;
  FragmentationModel m({t});
  NodeFreeState s;
  s.model = t4;
  s.gpu_count = 2;
  s.gpu_left = {1000, 500};
  EXPECT_DOUBLE_EQ(m.NodeFragMilli(s), 500);
  NodeFreeState none;  // no GPUs, no model: nothing idle
  EXPECT_DOUBLE_EQ(m.NodeFragMilli(none), 0);
}

// A typical pod's model list is read from the trace's spec: "V100" and
// "T4|V100" resolve to those models.
TEST(TypicalPodsTest, ModelSpecsResolveEveryName) {
  GpuModelRegistry models;
  const GpuModelId t4 = models.Intern("T4");
  const GpuModelId v100 = models.Intern("V100");
  std::vector<Job> jobs = {Pod(1000, 1, 500, {"V100"}), Pod(1000, 1, 500, {"V100"}), Pod(2000, 1, 500, {"T4", "V100"})};
  auto t = BuildTypicalPods(jobs, models, {.popularity_threshold = 1.0});
  ASSERT_TRUE(t.has_value());
  ASSERT_EQ(t->size(), 2u);
  EXPECT_EQ((*t)[0].gpu_spec, "V100");
  EXPECT_EQ((*t)[0].resolved.allowed, (std::vector<GpuModelId>{v100}));
  EXPECT_EQ((*t)[1].gpu_spec, "T4|V100");
  EXPECT_EQ((*t)[1].resolved.allowed, (std::vector<GpuModelId>{t4, v100}));
}

}  // namespace
}  // namespace tidal

// Each policy's score against values worked out by hand from the FGD
// simulator's formulas, plus the framework's tie-breaking and gang placement.
#include <gtest/gtest.h>

#include <cmath>

#include "framework/framework.h"
#include "plugins/best_fit/best_fit_score.h"
#include "plugins/device_select/device_select.h"
#include "plugins/resource_fit/resource_fit.h"
#include "plugins/dot_product/dot_product_score.h"
#include "plugins/fgd/fgd_score.h"
#include "plugins/gang_pack/gang_pack.h"
#include "plugins/gpu_clustering/gpu_clustering_score.h"
#include "plugins/gpu_packing/gpu_packing_score.h"
#include "plugins/registry.h"
#include "scheduler/scheduler.h"

namespace tidal::plugins {
namespace {

struct Fixture {
  ClusterState cluster;
  Rng rng{1};
  std::vector<Job> jobs;

  Fixture() {
    auto c = ClusterState::Build({{"a", 64000, 262144, 2, "T4"}, {"b", 96000, 393216, 8, "G2"}, {"c", 8000, 1024, 0, ""}});
    cluster = std::move(*c);
    jobs.reserve(64);
  }
  const Job& MakeJob(int64_t cpu, int32_t n, int32_t milli, bool single = true) {
    Job j;
    j.id = static_cast<JobId>(jobs.size());
    j.name = "j" + std::to_string(j.id);
    j.cpu_milli = cpu;
    j.memory_mib = 1024;
    j.num_gpu = n;
    j.gpu_milli = milli;
    j.single_node = single;
    jobs.push_back(j);
    return jobs.back();
  }
  PodRequest Req(const Job& j) { return *ResolveRequest(j, cluster.models()); }
  CycleContext Ctx() { return {cluster, rng}; }
};

TEST(RegistryTest, KnowsTheSixPaperPolicies) {
  EXPECT_EQ(PolicyNames().size(), 6u);
  EXPECT_EQ(*PolicyLabel("fgd"), "06-FGD");
  EXPECT_FALSE(PolicyLabel("nope").has_value());
  EXPECT_FALSE(MakePolicyProfile("fgd", nullptr).has_value());
}

TEST(DotProductTest, MatchesTheTetrisFormula) {
  Fixture f;
  DotProductScore s;
  // Node a: free (64000/128000, 2000/8000) = (0.5, 0.25); pod (8000, 500) -> (0.0625, 0.0625).
  // dot = 0.046875, /2 -> 0.0234375, score = int(100 * 0.9765625) = 97.
  EXPECT_EQ(s.Score(f.Ctx(), f.Req(f.MakeJob(8000, 1, 500)), 0), 97);
}

TEST(BestFitTest, ScoresLeftoverAndNormalisesMinMax) {
  Fixture f;
  BestFitScore s;
  const auto pod = f.Req(f.MakeJob(8000, 1, 500));
  // a: leftover 56000/128000*.5 + 1500/8000*.5 = 0.3125 -> 68.
  EXPECT_EQ(s.Score(f.Ctx(), pod, 0), 68);
  // b: 88000/128000*.5 + 7500/8000*.5 = 0.8125 -> 18.
  EXPECT_EQ(s.Score(f.Ctx(), pod, 1), 18);
  std::vector<int64_t> v = {68, 18, 43};
  s.Normalize(v);
  EXPECT_EQ(v, (std::vector<int64_t>{100, 0, 50}));
  std::vector<int64_t> same = {7, 7};
  s.Normalize(same);
  EXPECT_EQ(same, (std::vector<int64_t>{0, 0}));
}

TEST(GpuPackingTest, PrefersSharedThenUsedNodeThenFreshNode) {
  Fixture f;
  GpuPackingScore s;
  const auto share = f.Req(f.MakeJob(1000, 1, 300));
  // Both nodes untouched: case 3, 100/3 - free GPUs (capped below by free GPUs).
  EXPECT_EQ(s.Score(f.Ctx(), share, 0), 31);
  EXPECT_EQ(s.Score(f.Ctx(), share, 1), 25);
  ASSERT_TRUE(f.cluster.Bind(100, {{{0, 1000, 1, {0}, {600}}}}).has_value());
  // Node a now has a shared GPU with 400 free: case 1, 100 - 40/10 = 96.
  EXPECT_EQ(s.Score(f.Ctx(), share, 0), 96);
  // A whole-GPU pod on node a must take the fully free GPU: case 2, 50 - 1.
  EXPECT_EQ(s.Score(f.Ctx(), f.Req(f.MakeJob(1000, 1, 1000)), 0), 49);
  // CPU-only pods score 0 everywhere.
  EXPECT_EQ(s.Score(f.Ctx(), f.Req(f.MakeJob(1000, 0, 0)), 0), 0);
}

TEST(GpuClusteringTest, PrefersNodesRunningTheSameShape) {
  Fixture f;
  GpuClusteringScore s;
  const Job& share = f.MakeJob(1000, 1, 300);
  // Idle machine: 25 * (8000 - free)/8000 + 25.
  EXPECT_EQ(s.Score(f.Ctx(), f.Req(share), 0), 25 * 6000 / 8000 + 25);
  Placement p{{{0, 1000, 1, {0}, {300}}}};
  ASSERT_TRUE(f.cluster.Bind(share.id, p).has_value());
  s.Reserve(f.cluster, share, p);
  // Only sharing pods on node a: band (75, 100].
  EXPECT_EQ(s.Score(f.Ctx(), f.Req(share), 0), 25 * 6300 / 8000 + 75);
  // A 1-GPU pod sees a node with other shapes only: band (0, 25].
  EXPECT_EQ(s.Score(f.Ctx(), f.Req(f.MakeJob(1000, 1, 1000)), 0), 25 * 6300 / 8000);
  s.Unreserve(f.cluster, share, p);
  ASSERT_TRUE(f.cluster.Unbind(share.id).has_value());
  EXPECT_EQ(s.Score(f.Ctx(), f.Req(share), 0), 25 * 6000 / 8000 + 25);
}

TEST(FgdTest, ScoreIsSigmoidOfFragmentationDecrease) {
  Fixture f;
  // One typical pod: 1 CPU core, 600 milli of any GPU.
  TypicalPod t;
  t.cpu_milli = 1000;
  t.gpu_milli = 600;
  t.num_gpu = 1;
  t.popularity = 1.0;
  auto model = std::make_shared<FragmentationModel>(std::vector<TypicalPod>{t});
  FgdScore s(model);
  const auto pod = f.Req(f.MakeJob(1000, 1, 500));
  // Node a before: both GPUs fit the typical pod -> frag 0. After taking 500
  // from one GPU, its 500 left is too small -> frag 500. Score = 100*sigmoid(-0.5).
  const int64_t expected = static_cast<int64_t>(100.0 / (1.0 + std::exp(0.5)));
  EXPECT_EQ(s.Score(f.Ctx(), pod, 0), expected);
  // With a GPU at 900 free, taking 500 there leaves 400 (frag 400 after, 0
  // before on that device)... but a GPU at 500 free is already fragmented;
  // taking 500 from it removes 500 of fragmentation: the best choice.
  ASSERT_TRUE(f.cluster.Bind(100, {{{0, 0, 0, {1}, {500}}}}).has_value());
  EXPECT_EQ(s.Score(f.Ctx(), pod, 0), static_cast<int64_t>(100.0 / (1.0 + std::exp(-0.5))));
  auto a = s.SelectDevices(f.Ctx(), pod, 0);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->gpus, std::vector<int32_t>{1});
}

// A sharing pod's device is judged on the node's state after taking it
// from that device alone (found by mutation testing). Node a at {1000, 600}
// free, typical pod 600: 400 from GPU 0 leaves {600, 600} (frag 0, score
// 100 x sigmoid(0) = 50); from GPU 1 {1000, 200} (frag 200). GPU 0 wins.
TEST(FgdTest, ASharingPodIsScoredOnTheDeviceItTakes) {
  Fixture f;
  TypicalPod t;
  t.cpu_milli = 1000;
  t.gpu_milli = 600;
  t.num_gpu = 1;
  t.popularity = 1.0;
  FgdScore s(std::make_shared<FragmentationModel>(std::vector<TypicalPod>{t}));
  ASSERT_TRUE(f.cluster.Bind(100, {{{0, 0, 0, {1}, {400}}}}).has_value());
  const auto pod = f.Req(f.MakeJob(1000, 1, 400));
  EXPECT_EQ(s.Score(f.Ctx(), pod, 0), 50);
  auto a = s.SelectDevices(f.Ctx(), pod, 0);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->gpus, std::vector<int32_t>{0});
}

TEST(FgdTest, CachesNeverLeakBetweenClusterCopies) {
  Fixture f;
  TypicalPod t;
  t.cpu_milli = 1000;
  t.gpu_milli = 600;
  t.num_gpu = 1;
  t.popularity = 1.0;
  FgdScore s(std::make_shared<FragmentationModel>(std::vector<TypicalPod>{t}));
  const auto pod = f.Req(f.MakeJob(1000, 1, 500));
  const int64_t fresh = s.Score(f.Ctx(), pod, 0);
  // A what-if copy where node a already has a half-used GPU: same node
  // version history, different state — its score must be recomputed.
  ClusterState copy = f.cluster;
  ASSERT_TRUE(copy.Bind(100, {{{0, 0, 0, {1}, {500}}}}).has_value());
  ASSERT_TRUE(f.cluster.Bind(101, {{{0, 0, 0, {0}, {100}}}}).has_value());
  ASSERT_EQ(copy.version(0), f.cluster.version(0));
  CycleContext copy_ctx{copy, f.rng};
  const int64_t original = s.Score(f.Ctx(), pod, 0);  // cached at the version both now share
  EXPECT_EQ(s.Score(copy_ctx, pod, 0), static_cast<int64_t>(100.0 / (1.0 + std::exp(-0.5))));
  EXPECT_NE(original, s.Score(copy_ctx, pod, 0));
  EXPECT_EQ(original, s.Score(f.Ctx(), pod, 0));
  EXPECT_NE(fresh, s.Score(copy_ctx, pod, 0));
}

// The filters' boundaries: free CPU, memory, device milli or device count
// exactly equal to the request fits; one unit more does not.
TEST(ResourceFitTest, ExactFitPassesAndOneUnitMoreFails) {
  Fixture f;  // a: 64000 milli-CPU, 262144 MiB, 2 T4
  ResourceFitFilter rf;
  GpuFitFilter gf;
  auto req = [&](int64_t cpu, int64_t mem, int32_t n, int32_t milli) {
    f.MakeJob(cpu, n, milli);
    f.jobs.back().memory_mib = mem;
    return f.Req(f.jobs.back());
  };
  EXPECT_TRUE(rf.Filter(f.Ctx(), req(64000, 262144, 0, 0), 0));
  EXPECT_FALSE(rf.Filter(f.Ctx(), req(64001, 262144, 0, 0), 0));
  EXPECT_FALSE(rf.Filter(f.Ctx(), req(64000, 262145, 0, 0), 0));
  // Two whole GPUs on a 2-GPU node; three never.
  EXPECT_TRUE(gf.Filter(f.Ctx(), req(0, 0, 2, 1000), 0));
  EXPECT_FALSE(gf.Filter(f.Ctx(), req(0, 0, 3, 1000), 0));
  // 300 taken from each device: 700 left on both.
  ASSERT_TRUE(f.cluster.Bind(100, {{{0, 1000, 1024, {0, 1}, {300, 300}}}}).has_value());
  EXPECT_TRUE(rf.Filter(f.Ctx(), req(63000, 261120, 0, 0), 0));
  EXPECT_FALSE(rf.Filter(f.Ctx(), req(63001, 261120, 0, 0), 0));
  EXPECT_FALSE(rf.Filter(f.Ctx(), req(63000, 261121, 0, 0), 0));
  EXPECT_TRUE(gf.Filter(f.Ctx(), req(0, 0, 1, 700), 0));
  EXPECT_FALSE(gf.Filter(f.Ctx(), req(0, 0, 1, 701), 0));
  EXPECT_FALSE(gf.Filter(f.Ctx(), req(0, 0, 1, 1000), 0));  // no whole GPU left
  // And device selection takes the exactly fitting device (best fit: the
  // least sufficient free milli; here both have 700, so the lower index).
  BestFitDeviceSelect sel;
  auto a = sel.SelectDevices(f.Ctx(), req(0, 0, 1, 700), 0);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->gpus, (std::vector<int32_t>{0}));
  EXPECT_FALSE(sel.SelectDevices(f.Ctx(), req(0, 0, 1, 701), 0));
  // 300 more from GPU 0 (400 and 700 left): 400 takes GPU 0, the tighter
  // exact fit; 401 fits only GPU 1.
  ASSERT_TRUE(f.cluster.Bind(101, {{{0, 0, 0, {0}, {300}}}}).has_value());
  auto b = sel.SelectDevices(f.Ctx(), req(0, 0, 1, 400), 0);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->gpus, (std::vector<int32_t>{0}));
  auto c = sel.SelectDevices(f.Ctx(), req(0, 0, 1, 401), 0);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->gpus, (std::vector<int32_t>{1}));
}

TEST(FrameworkTest, TiesGoToTheLowestRankOrAtRandom) {
  Fixture f;
  Profile p;
  p.filters.push_back(p.Own<ResourceFitFilter>());
  p.filters.push_back(p.Own<GpuFitFilter>());
  p.device_select = p.Own<BestFitDeviceSelect>();
  Framework fw(std::move(p));
  const auto pod = f.Req(f.MakeJob(1000, 0, 0));  // fits everywhere, no scores: all tie
  fw.SetNodePriority({2, 0, 1});
  for (int i = 0; i < 5; ++i) EXPECT_EQ(fw.Schedule(f.Ctx(), pod)->assignments[0].node, 1);
  fw.SetNodePriority({});
  std::set<NodeId> seen;
  for (int i = 0; i < 50; ++i) seen.insert(fw.Schedule(f.Ctx(), pod)->assignments[0].node);
  EXPECT_EQ(seen.size(), 3u);
}

TEST(FrameworkTest, SaysUnresolvableWhenNoNodeCouldEverFit) {
  Fixture f;
  auto profile = MakePolicyProfile("bestfit", nullptr);
  ASSERT_TRUE(profile.has_value());
  Framework fw(std::move(*profile));
  auto too_big = fw.Schedule(f.Ctx(), f.Req(f.MakeJob(1000, 9, 1000)));
  ASSERT_FALSE(too_big.has_value());
  EXPECT_EQ(too_big.error().code, ErrorCode::kUnresolvable);
  ASSERT_TRUE(f.cluster.Bind(100, {{{1, 0, 0, {0, 1, 2, 3, 4, 5, 6}, {1000, 1000, 1000, 1000, 1000, 1000, 1000}}}}).has_value());
  auto later = fw.Schedule(f.Ctx(), f.Req(f.MakeJob(1000, 4, 1000)));
  ASSERT_FALSE(later.has_value());
  EXPECT_EQ(later.error().code, ErrorCode::kUnschedulable);
}

// A cordoned (drained) node: every one of the six policies places around
// it, and the NodeResourcesFit filter keeps off even a request for nothing
// (a cordoned node's free CPU and memory read 0, which 0 would pass).
TEST(CordonTest, EveryPolicySkipsACordonedNode) {
  TypicalPod t;
  t.cpu_milli = 1000;
  t.gpu_milli = 600;
  t.num_gpu = 1;
  t.popularity = 1.0;
  auto model = std::make_shared<FragmentationModel>(std::vector<TypicalPod>{t});
  for (const std::string& policy : PolicyNames()) {
    SCOPED_TRACE(policy);
    Fixture f;
    auto profile = MakePolicyProfile(policy, model);
    ASSERT_TRUE(profile.has_value()) << profile.error().message;
    Scheduler sched(f.cluster, std::move(*profile), 3);
    ASSERT_TRUE(sched.Cordon(1).has_value());  // b: 8 of the 10 GPUs
    for (int i = 0; i < 4; ++i) {  // a's 2 T4 hold 4 x 500
      auto p = sched.ScheduleAndBind(f.MakeJob(1000, 1, 500));
      ASSERT_TRUE(p.has_value()) << p.error().message;
      EXPECT_EQ((*p)->assignments[0].node, 0);
    }
    auto full = sched.ScheduleAndBind(f.MakeJob(1000, 1, 500));
    ASSERT_FALSE(full.has_value());
    EXPECT_EQ(full.error().code, ErrorCode::kUnschedulable);
    f.MakeJob(0, 0, 0);
    Job& nothing = f.jobs.back();
    nothing.memory_mib = 0;
    ASSERT_TRUE(sched.Cordon(0).has_value());
    auto on_c = sched.ScheduleAndBind(nothing);
    ASSERT_TRUE(on_c.has_value()) << on_c.error().message;
    EXPECT_EQ((*on_c)->assignments[0].node, 2);
    ASSERT_TRUE(sched.Release(nothing).has_value());
    ASSERT_TRUE(sched.Cordon(2).has_value());
    auto none = sched.ScheduleAndBind(nothing);
    ASSERT_FALSE(none.has_value());
    EXPECT_EQ(none.error().code, ErrorCode::kUnschedulable);
    ASSERT_TRUE(sched.Uncordon(1).has_value());
    auto on_b = sched.ScheduleAndBind(f.MakeJob(1000, 1, 500));
    ASSERT_TRUE(on_b.has_value()) << on_b.error().message;
    EXPECT_EQ((*on_b)->assignments[0].node, 1);
    EXPECT_TRUE(sched.cluster().CheckInvariants().has_value());
  }
}

TEST(GangPackTest, SpansNodesWithFewestNodesAllOrNothing) {
  Fixture f;
  auto profile = MakePolicyProfile("bestfit", nullptr);
  Scheduler sched(std::move(f.cluster), std::move(*profile), 3);
  const Job& gang = f.MakeJob(10000, 9, 1000, /*single=*/false);
  auto placed = sched.ScheduleAndBind(gang);
  ASSERT_TRUE(placed.has_value()) << placed.error().ToString();
  ASSERT_EQ((*placed)->assignments.size(), 2u);
  EXPECT_EQ((*placed)->assignments[0].node, 1);  // the 8-GPU node first
  EXPECT_EQ((*placed)->assignments[0].gpus.size(), 8u);
  EXPECT_EQ((*placed)->TotalGpuMilli(), 9000);
  int64_t cpu = 0;
  for (const auto& a : (*placed)->assignments) cpu += a.cpu_milli;
  EXPECT_EQ(cpu, 10000);
  // Only one GPU is left: a 2-GPU gang must not be half-placed.
  auto second = sched.ScheduleAndBind(f.MakeJob(0, 2, 1000, false));
  ASSERT_FALSE(second.has_value());
  EXPECT_EQ(sched.cluster().total_gpu_milli_allocated(), 9000);
  ASSERT_TRUE(sched.Release(gang).has_value());
  EXPECT_EQ(sched.cluster().total_gpu_milli_allocated(), 0);
  ASSERT_TRUE(sched.cluster().CheckInvariants().has_value());
}

}  // namespace
}  // namespace tidal::plugins

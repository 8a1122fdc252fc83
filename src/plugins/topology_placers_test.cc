// The topology placers against placements worked out by hand from each one's
// header (topo_place.h, first_fit.h, slurm_tree.h, kueue_tas.h, hived.h,
// random_gang.h) on small topologies: every expectation is the exact nodes
// and devices, so a changed ordering or tie-break shows up.
#include <gtest/gtest.h>

#include <set>

#include "framework/gang.h"
#include "plugins/first_fit/first_fit.h"
#include "plugins/hived/hived.h"
#include "plugins/kueue_tas/kueue_tas.h"
#include "plugins/placer_test_util.h"
#include "plugins/random_gang/random_gang.h"
#include "plugins/slurm_tree/slurm_tree.h"
#include "plugins/topo/topo_place.h"
#include "scheduler/queue.h"
#include "scheduler/scheduler.h"

namespace tidal::plugins {
namespace {

using testing::FakeCost;
using testing::Host;
using testing::World;

using testing::kTwoLeaves;
using testing::kTwoLeavesHosts;

// spine -> leaf1 {a1, a2}, leaf2 {b1, b2, b3}.
constexpr std::string_view kTwoThree = R"(version: 1
root:
  level: spine
  name: spine
  children:
    - {level: leaf, name: leaf1, hosts: [a1, a2]}
    - {level: leaf, name: leaf2, hosts: [b1, b2, b3]}
)";
const std::vector<Host> kTwoThreeHosts = {{"a1"}, {"a2"}, {"b1"}, {"b2"}, {"b3"}};

// One leaf of hosts h1..h4 whose GPUs sit in two NUMA groups {0-3} {4-7}.
constexpr std::string_view kNumaLeaf = R"(version: 1
host_types:
  numa8:
    gpus: 8
    groups:
      - {level: pcie, name: numa0, gpus: [0, 1, 2, 3]}
      - {level: pcie, name: numa1, gpus: [4, 5, 6, 7]}
root: {level: leaf, name: leaf1, hosts: "h[1-4]", host_type: numa8}
)";

// One leaf of PCIe hosts with NVLink-bridged pairs {0,1} {2,3} {4,5} {6,7}.
constexpr std::string_view kBridgeLeaf = R"(version: 1
host_types:
  bridge8:
    gpus: 8
    groups:
      - {level: nvlink, name: nv0, gpus: [0, 1]}
      - {level: nvlink, name: nv1, gpus: [2, 3]}
      - {level: nvlink, name: nv2, gpus: [4, 5]}
      - {level: nvlink, name: nv3, gpus: [6, 7]}
root: {level: leaf, name: leaf1, hosts: "h[1-2]", host_type: bridge8}
)";

std::vector<Host> Hosts(std::initializer_list<std::string> names, int32_t gpus = 8) {
  std::vector<Host> v;
  for (const auto& n : names) v.push_back({n, gpus});
  return v;
}

// --- topo ---------------------------------------------------------------

TEST(TopoPlaceTest, OneHostJobTakesTheTightestHostInTheWholeCluster) {
  World w(kTwoLeaves, kTwoLeavesHosts);
  w.HoldFirst("a1", 3);  // free 5
  w.HoldFirst("a2", 6);  // free 2: leaf1 has 7 free, leaf2 11
  w.HoldFirst("b2", 5);  // free 3
  TopoPlace topo;
  // The most allocated leaf is leaf1, but the tightest host for 3 is b2.
  EXPECT_EQ(w.Place(topo, w.NewJob(3)), "b2:5-7");
  EXPECT_EQ(w.Place(topo, w.NewJob(2)), "a2:6-7");
  EXPECT_EQ(w.Place(topo, w.NewJob(5)), "a1:3-7");
  EXPECT_EQ(w.Place(topo, w.NewJob(6, true)), "b1:0-5");
  EXPECT_EQ(w.Place(topo, w.NewJob(1)), "a2:6");
}

TEST(TopoPlaceTest, EquallyTightHostsGoUnderTheMoreAllocatedDomain) {
  {
    World w(kTwoLeaves, kTwoLeavesHosts);
    w.HoldFirst("a1", 4);
    w.HoldFirst("b1", 4);
    w.HoldFirst("b2", 6);  // leaf2: 6 free, leaf1: 12
    TopoPlace topo;
    EXPECT_EQ(w.Place(topo, w.NewJob(4)), "b1:4-7");
  }
  {
    World w(kTwoLeaves, kTwoLeavesHosts);
    w.HoldFirst("a1", 4);
    w.HoldFirst("a2", 6);  // now leaf1 is the more allocated one
    w.HoldFirst("b1", 4);
    TopoPlace topo;
    EXPECT_EQ(w.Place(topo, w.NewJob(4)), "a1:4-7");
  }
}

TEST(TopoPlaceTest, OnTheHostTheTightestNumaGroupThatHoldsTheJob) {
  auto only_h1 = [](std::vector<int32_t> held) {  // h2-h4 full
    World w(kNumaLeaf, Hosts({"h1", "h2", "h3", "h4"}));
    for (const char* h : {"h2", "h3", "h4"}) w.HoldFirst(h, 8);
    w.Hold("h1", std::move(held));
    return w;
  };
  TopoPlace topo;
  World x = only_h1({0, 1, 2});  // numa0 has 1 free, numa1 4
  EXPECT_EQ(x.Place(topo, x.NewJob(2)), "h1:4-5");
  World w = only_h1({0, 4, 5});  // numa0: 1-3 free; numa1: 6, 7
  EXPECT_EQ(w.Place(topo, w.NewJob(2)), "h1:6-7");
  EXPECT_EQ(w.Place(topo, w.NewJob(1)), "h1:6");
  EXPECT_EQ(w.Place(topo, w.NewJob(3)), "h1:1-3");
  // No group holds 4: the larger group first, then the rest.
  EXPECT_EQ(w.Place(topo, w.NewJob(4)), "h1:1-3,6");
}

TEST(TopoPlaceTest, GangGoesToTheLowestLevelThatHoldsIt) {
  // leaf1 has two blocks of 4-GPU hosts; leaf2 four hosts directly.
  World w(R"(version: 1
root:
  level: spine
  name: spine
  children:
    - level: leaf
      name: leaf1
      children:
        - {level: block, name: blk1, hosts: [a1, a2]}
        - {level: block, name: blk2, hosts: [a3, a4]}
    - {level: leaf, name: leaf2, hosts: "b[1-4]"}
)",
          Hosts({"b1", "b2", "b3", "b4", "a1", "a2", "a3", "a4"}, 4));
  w.HoldFirst("a2", 2);  // blk1 has 6 free, blk2 8
  TopoPlace topo;
  EXPECT_EQ(w.Place(topo, w.NewJob(8)), "a3:0-3 a4:0-3");
  // 12 fits no block: the leaf with the fewest free GPUs (leaf1, 14), its
  // whole block first, then the tightest host that finishes it.
  EXPECT_EQ(w.Place(topo, w.NewJob(12)), "a3:0-3 a4:0-3 a1:0-3");
  w.HoldFirst("a1", 4);  // leaf1: 10 free
  EXPECT_EQ(w.Place(topo, w.NewJob(12)), "b1:0-3 b2:0-3 b3:0-3");
}

TEST(TopoPlaceTest, GangStaysInOneLeafAndSharesRails) {
  World w(kTwoLeaves, kTwoLeavesHosts);
  w.Hold("a1", {0, 1});  // free 2-7
  w.Hold("a2", {6, 7});  // free 0-5
  w.HoldFirst("b2", 6);  // leaf2: 10 free
  TopoPlace topo;
  // a2's 6 GPUs on the rails a1 uses (2-5 first), then 0-1.
  EXPECT_EQ(w.Place(topo, w.NewJob(12)), "a1:2-7 a2:0-5");
  World r(R"(version: 1
root: {level: leaf, name: leaf1, hosts: "h[1-3]"}
)",
          Hosts({"h1", "h2", "h3"}));
  r.HoldFirst("h1", 4);  // free 4-7
  r.Hold("h2", {4, 5});  // free 0-3, 6, 7
  r.HoldFirst("h3", 8);
  // h2 first (more free); h1's two on h2's rails 6 and 7, not 4 and 5.
  EXPECT_EQ(r.Place(topo, r.NewJob(8)), "h2:0-3,6-7 h1:6-7");
}

TEST(TopoPlaceTest, InsideALeafWholeFreeHostsFirstThenTheTightestFinish) {
  World w(R"(version: 1
root: {level: leaf, name: leaf1, hosts: "h[1-4]"}
)",
          Hosts({"h1", "h2", "h3", "h4"}));
  w.HoldFirst("h1", 2);  // free 6
  w.HoldFirst("h4", 3);  // free 5
  TopoPlace topo;
  EXPECT_EQ(w.Place(topo, w.NewJob(12)), "h2:0-7 h4:3-6");
  EXPECT_EQ(w.Place(topo, w.NewJob(16)), "h2:0-7 h3:0-7");
  EXPECT_EQ(w.Place(topo, w.NewJob(14)), "h2:0-7 h1:2-7");
  EXPECT_EQ(w.Place(topo, w.NewJob(20)), "h2:0-7 h3:0-7 h4:3-6");
}

TEST(TopoPlaceTest, HeterogeneousHostsGangTakesTheFewestHosts) {
  World w(R"(version: 1
root:
  level: spine
  name: spine
  children:
    - {level: leaf, name: small, hosts: "p[1-8]"}
    - {level: leaf, name: big, hosts: "g[1-3]"}
)",
          [] {
            auto v = Hosts({"p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8"}, 2);
            for (const char* g : {"g1", "g2", "g3"}) v.push_back({g, 8});
            return v;
          }());
  w.HoldFirst("g3", 4);  // big: 20 free, small: 16 (the tighter leaf)
  TopoPlace topo;
  EXPECT_EQ(w.Place(topo, w.NewJob(16)), "g1:0-7 g2:0-7");
  // One host: the largest hosts first, tightest there (g3 has 4 free), so
  // the 2-GPU hosts stay free for the small jobs only they can take.
  EXPECT_EQ(w.Place(topo, w.NewJob(2)), "g3:4-5");
}

TEST(TopoPlaceTest, TensorParallelGroupsStayInsideNvlinkPairs) {
  World w(kBridgeLeaf, Hosts({"h1", "h2"}));
  w.Hold("h1", {0, 2, 4});  // free 1, 3, 5, 6, 7: one whole pair (6, 7)
  TopoPlace topo;
  Job& plain = w.NewJob(4);
  Job& tp = w.NewJob(4);
  tp.tp_group = 2;
  EXPECT_EQ(w.Place(topo, plain), "h1:1,3,6-7");  // the tightest host, any GPUs
  EXPECT_EQ(w.Place(topo, tp), "h2:0-3");          // h1 has one pair only
  Job& two = w.NewJob(2);
  two.tp_group = 2;
  EXPECT_EQ(w.Place(topo, two), "h1:6-7");
  w.Hold("h2", {0, 2});  // free 1, 3-7: pairs (4, 5) and (6, 7)
  Job& six = w.NewJob(6);
  EXPECT_EQ(w.Place(topo, six), "h2:1,3-7");
  six.tp_group = 2;
  // h2 can give 4 in whole pairs, h1 2: the gang spans, pairs whole, and
  // h1's pair is on the rails h2 uses.
  EXPECT_EQ(w.Place(topo, six), "h2:4-7 h1:6-7");
}

// BUG (gang::PickDevices / Take): on hosts whose NUMA (pcie) groups hold
// NVLink pairs (data/topologies/roce-2tier-oversubscribed.yaml), the spread
// over the NUMA groups asks each for min(need, free) GPUs, not for what it can
// give in whole TP groups. With 3 and 7 taken, a 4-GPU job with tp_group 2
// asks numa0 for 3, gets one whole pair, fails, and falls back to the first
// free GPUs 0,1,2,4, splitting the pairs; UsableGpus counted 4 (0-1, 4-5).
TEST(TopoPlaceTest, TensorParallelPairsStayWholeInsideNumaGroups) {
  World w(R"(version: 1
host_types:
  roce8:
    gpus: 8
    groups:
      - {level: pcie, name: numa0, gpus: [0, 1, 2, 3]}
      - {level: pcie, name: numa1, gpus: [4, 5, 6, 7]}
      - {level: nvlink, name: nv0, gpus: [0, 1]}
      - {level: nvlink, name: nv1, gpus: [2, 3]}
      - {level: nvlink, name: nv2, gpus: [4, 5]}
      - {level: nvlink, name: nv3, gpus: [6, 7]}
root: {level: leaf, name: leaf1, hosts: [h1], host_type: roce8}
)",
          Hosts({"h1"}));
  w.Hold("h1", {3, 7});
  Job& j = w.NewJob(4);
  j.tp_group = 2;
  EXPECT_EQ(w.Place("topo", j), "h1:0-1,4-5");
  EXPECT_EQ(testing::Devices(gang::PickDevices(w.cluster, 0, 4, 2)), "0-1,4-5");
}

// BUG (gang::UsableGpus): a host whose NVLink domains are smaller than the
// job's TP group counts 0 usable GPUs ("whole groups inside NVLink domains"),
// while a PCIe-only host counts all its free GPUs. So on bridged-pair hosts
// (roce-2tier-oversubscribed.yaml) topo never places a job with tp_group > 2,
// e.g. a 16-GPU job, which sim's default workload model gives tp 8: it stays
// unschedulable on an empty cluster and the queue drops it as never fitting.
TEST(TopoPlaceTest, TensorParallelGroupsLargerThanTheNvlinkPairsStillPlace) {
  World w(kBridgeLeaf, Hosts({"h1", "h2"}));
  Job& eight = w.NewJob(8);
  eight.tp_group = 4;
  EXPECT_EQ(w.Place("topo", eight), "h1:0-7");
  Job& sixteen = w.NewJob(16);
  sixteen.tp_group = 8;
  EXPECT_EQ(w.Place("topo", sixteen), "h1:0-7 h2:0-7");
}

TEST(TopoPlaceTest, RequiredLevelIsHardPreferredFallsBackUpwards) {
  World w(kTwoLeaves, kTwoLeavesHosts);
  w.HoldFirst("a1", 4);
  w.HoldFirst("a2", 8);
  w.HoldFirst("b1", 4);
  w.HoldFirst("b2", 8);  // each leaf has 4 free
  TopoPlace topo;
  Job& free = w.NewJob(8);
  EXPECT_EQ(w.Place(topo, free), "a1:4-7 b1:4-7");
  Job& leaf = w.NewJob(8);
  leaf.topo_required = topo::Level::kLeaf;
  EXPECT_EQ(w.Place(topo, leaf), "");
  Job& host = w.NewJob(4);
  host.topo_required = topo::Level::kNode;
  EXPECT_EQ(w.Place(topo, host), "a1:4-7");
  Job& spine = w.NewJob(8);
  spine.topo_required = topo::Level::kSpine;
  EXPECT_EQ(w.Place(topo, spine), "a1:4-7 b1:4-7");
  Job& pref = w.NewJob(8);
  pref.topo_preferred = topo::Level::kLeaf;
  EXPECT_EQ(w.Place(topo, pref), "a1:4-7 b1:4-7");
  // Once one leaf holds it, the requirement is met there.
  World x(kTwoLeaves, kTwoLeavesHosts);
  x.HoldFirst("a1", 4);
  x.HoldFirst("a2", 8);
  x.HoldFirst("b1", 4);
  Job& twelve = x.NewJob(12);
  twelve.topo_required = topo::Level::kLeaf;
  EXPECT_EQ(x.Place(topo, twelve), "b2:0-7 b1:4-7");
}

TEST(TopoPlaceTest, SingleNodeJobsNeverSpanHosts) {
  World w(kTwoLeaves, kTwoLeavesHosts);
  for (const char* h : {"a1", "a2", "b1", "b2"}) w.HoldFirst(h, 4);
  for (const auto& name : testing::TopologyPlacers()) {
    EXPECT_EQ(w.Place(name, w.NewJob(8, /*single_node=*/true)), "") << name;
    EXPECT_EQ(w.Place(name, w.NewJob(4, true)), "a1:4-7") << name;
    // A gang of 8 may span; slurm-tree, hived and kueue-tas ask for it as one
    // node (-N1 --gres=gpu:8, one pod, required hostname) because it would fit on one.
    const bool one_node = name == "slurm-tree" || name == "hived" || name == "kueue-tas";
    EXPECT_EQ(w.Place(name, w.NewJob(8, /*single_node=*/false)), one_node ? "" : "a1:4-7 a2:4-7") << name;
  }
}

// leaf1: a1 free, a2 half free (tight, 12); leaf2: three free hosts (roomy, 24).
World CostWorld() {
  World w(kTwoThree, kTwoThreeHosts);
  w.HoldFirst("a2", 4);
  return w;
}
std::optional<double> ASlow(const std::string& p) { return p.find('a') != std::string::npos ? 1.4 : 1.1; }

TEST(TopoPlaceTest, CostModelPicksTheCandidateWithTheLowestSlowdown) {
  World w = CostWorld();
  TopoPlace topo;
  Job& j = w.NewJob(12);
  EXPECT_EQ(w.Place(topo, j), "a1:0-7 a2:4-7");  // no cost: the tighter leaf
  FakeCost cost(ASlow);
  EXPECT_EQ(w.Place(topo, j, &cost), "b1:0-7 b2:0-3");
  EXPECT_GE(cost.calls, 2);
  // Equal slowdowns: the lower level, then the tighter domain.
  FakeCost flat([](const std::string&) { return 1.0; });
  EXPECT_EQ(w.Place(topo, j, &flat), "a1:0-7 a2:4-7");
  FakeCost bslow([](const std::string& p) { return p.find('b') != std::string::npos ? 1.4 : 1.1; });
  EXPECT_EQ(w.Place(topo, j, &bslow), "a1:0-7 a2:4-7");
  // No model for the job: topology alone.
  FakeCost none([](const std::string&) { return std::nullopt; });
  EXPECT_EQ(w.Place(topo, j, &none), "a1:0-7 a2:4-7");
}

TEST(TopoPlaceTest, CostModelScoresOnlyTheDocumentedCandidates) {
  // leaf1: tight (12 free); leaf2: roomy (3 free hosts); leaf3: four hosts
  // with 4 free each, neither tight, roomy nor dense. Above the leaves, the
  // spine's candidate uses the child needing the fewest hosts, then the
  // tightest: leaf1 again, never leaf3.
  World w(R"(version: 1
root:
  level: spine
  name: spine
  children:
    - {level: leaf, name: leaf1, hosts: [a1, a2]}
    - {level: leaf, name: leaf2, hosts: "b[1-3]"}
    - {level: leaf, name: leaf3, hosts: "c[1-4]"}
)",
          Hosts({"a1", "a2", "b1", "b2", "b3", "c1", "c2", "c3", "c4"}));
  w.HoldFirst("a2", 4);
  for (const char* h : {"c1", "c2", "c3", "c4"}) w.HoldFirst(h, 4);
  TopoPlace topo;
  std::set<std::string> asked;
  FakeCost cost([&](const std::string& p) -> std::optional<double> {
    asked.insert(p);
    return p[0] == 'c' ? 1.0 : 1.3;
  });
  EXPECT_EQ(w.Place(topo, w.NewJob(12), &cost), "a1:0-7 a2:4-7");  // equal slowdowns: the tighter leaf
  EXPECT_EQ(asked, (std::set<std::string>{"a1:0-7 a2:4-7", "b1:0-7 b2:0-3"}));
}

// The roomy candidate is the domain with the most free hosts of all, not
// merely more than the tight one (found by mutation testing, seed 2: a
// comparison against the tight pick made leaf3 the roomy one). leaf1 (3
// free hosts) comes first, leaf2 is tight (12 free, 1 free host), leaf3 has
// 2 free hosts: the candidates scored are leaf2's and leaf1's, and the cost
// model, preferring b, takes leaf1.
TEST(TopoPlaceTest, TheRoomyCandidateHasTheMostFreeHosts) {
  World w(R"(version: 1
root:
  level: spine
  name: spine
  children:
    - {level: leaf, name: leaf1, hosts: "b[1-3]"}
    - {level: leaf, name: leaf2, hosts: [a1, a2]}
    - {level: leaf, name: leaf3, hosts: [c1, c2]}
)",
          Hosts({"b1", "b2", "b3", "a1", "a2", "c1", "c2"}));
  w.HoldFirst("a2", 4);
  TopoPlace topo;
  std::set<std::string> asked;
  FakeCost cost([&](const std::string& p) -> std::optional<double> {
    asked.insert(p);
    return p[0] == 'b' ? 1.0 : 1.3;
  });
  EXPECT_EQ(w.Place(topo, w.NewJob(12), &cost), "b1:0-7 b2:0-3");
  EXPECT_EQ(asked, (std::set<std::string>{"a1:0-7 a2:4-7", "b1:0-7 b2:0-3"}));
}

TEST(TopoPlaceTest, DefersWhileTheBestSlowdownExceedsTheTolerance) {
  World w = CostWorld();
  TopoPlace topo;
  FakeCost cost([](const std::string& p) { return p.find('a') != std::string::npos ? 1.6 : 1.5; });
  Job& j = w.NewJob(12);
  j.topo_slowdown_ok = 1.2;
  j.submit_time_s = 1000;
  std::string why;
  j.topo_max_wait_s = -1;  // as long as it takes
  EXPECT_EQ(w.Place(topo, j, &cost, 1'000'000, &why), "");
  EXPECT_NE(why.find("1.500x"), std::string::npos) << why;
  EXPECT_EQ(w.Place(topo, j, &cost, 1'000'000, nullptr), "");  // no one to tell: still waits
  j.topo_max_wait_s = 100;
  why.clear();
  EXPECT_EQ(w.Place(topo, j, &cost, 1050, &why), "");
  EXPECT_NE(why.find("50 s"), std::string::npos) << why;
  why.clear();
  EXPECT_EQ(w.Place(topo, j, &cost, 1099, &why), "");
  why.clear();
  EXPECT_EQ(w.Place(topo, j, &cost, 1100, &why), "b1:0-7 b2:0-3");  // waited long enough: the best now
  EXPECT_EQ(why, "");
  j.topo_max_wait_s = 0;  // never waits
  EXPECT_EQ(w.Place(topo, j, &cost, 1000, &why), "b1:0-7 b2:0-3");
  j.topo_max_wait_s = -1;
  j.topo_slowdown_ok = 1.5;  // within the tolerance
  EXPECT_EQ(w.Place(topo, j, &cost, 1000, &why), "b1:0-7 b2:0-3");
  EXPECT_EQ(why, "");
  j.topo_slowdown_ok = 1.2;
  EXPECT_EQ(w.Place(topo, j, nullptr, 1000, &why), "a1:0-7 a2:4-7");  // no model: never defers
  // A job that fits on one host is placed there whatever the model says.
  Job& small = w.NewJob(4);
  small.topo_max_wait_s = -1;
  EXPECT_EQ(w.Place(topo, small, &cost, 1000, &why), "a2:4-7");
  EXPECT_EQ(why, "");
}

TEST(TopoPlaceTest, FrameworkAndSchedulerReportADeferralAsKDeferred) {
  World w = CostWorld();
  FakeCost cost([](const std::string&) { return 1.5; });
  Job& j = w.NewJob(12);
  j.topo_slowdown_ok = 1.2;
  j.topo_max_wait_s = -1;
  Framework fw(testing::MakePlacer("topo").profile);
  CycleContext ctx{w.cluster, w.rng, 10, &cost};
  auto r = fw.Schedule(ctx, w.Req(j));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kDeferred);
  EXPECT_NE(r.error().message.find(j.name), std::string::npos);
  CycleContext no_cost{w.cluster, w.rng, 10};
  auto placed = fw.Schedule(no_cost, w.Req(j));
  ASSERT_TRUE(placed.has_value());
  EXPECT_EQ(testing::Show(w.cluster, *placed), "a1:0-7 a2:4-7");
  auto too_big = fw.Schedule(ctx, w.Req(w.NewJob(37)));
  ASSERT_FALSE(too_big.has_value());
  EXPECT_EQ(too_big.error().code, ErrorCode::kUnschedulable);

  Scheduler sched(w.cluster, testing::MakePlacer("topo").profile, 7);
  sched.set_placement_cost(&cost);
  sched.set_now(10);
  const size_t held = sched.cluster().num_allocations();
  auto bound = sched.ScheduleAndBind(j);
  ASSERT_FALSE(bound.has_value());
  EXPECT_EQ(bound.error().code, ErrorCode::kDeferred);
  EXPECT_EQ(sched.cluster().num_allocations(), held);
  j.topo_max_wait_s = 5;  // waited 10 s already
  ASSERT_TRUE(sched.ScheduleAndBind(j).has_value());
  EXPECT_EQ(testing::Show(sched.cluster(), *sched.cluster().FindAllocation(j.id)), "a1:0-7 a2:4-7");
}

// A queue that needs a placement now (a job reclaiming its floor) gets the
// best one there is, unless it is slower than the bound it sets: the best
// here is 1.5x compact.
TEST(TopoPlaceTest, NoDeferTakesTheBestPlacementUpToItsSlowdownBound) {
  World w = CostWorld();
  FakeCost cost([](const std::string&) { return 1.5; });
  Job& j = w.NewJob(12);
  j.topo_slowdown_ok = 1.2;
  j.topo_max_wait_s = -1;
  Scheduler sched(w.cluster, testing::MakePlacer("topo").profile, 7);
  sched.set_placement_cost(&cost);
  sched.set_now(10);
  sched.set_no_defer(true, 1.3);
  auto waits = sched.TrySchedule(j);
  ASSERT_FALSE(waits.has_value());
  EXPECT_EQ(waits.error().code, ErrorCode::kDeferred);
  EXPECT_NE(waits.error().message.find("reclaiming its floor"), std::string::npos) << waits.error().message;
  EXPECT_NE(waits.error().message.find("1.500x"), std::string::npos) << waits.error().message;
  EXPECT_NE(waits.error().message.find("1.30x"), std::string::npos) << waits.error().message;
  sched.set_no_defer(true, 1.5);  // at the bound: taken
  auto at = sched.TrySchedule(j);
  ASSERT_TRUE(at.has_value());
  EXPECT_EQ(testing::Show(sched.cluster(), *at), "a1:0-7 a2:4-7");
  sched.set_no_defer(true);  // no bound
  EXPECT_TRUE(sched.TrySchedule(j).has_value());
  sched.set_no_defer(false);  // and without no_defer it waits for 1.2x
  auto normal = sched.TrySchedule(j);
  ASSERT_FALSE(normal.has_value());
  EXPECT_EQ(normal.error().code, ErrorCode::kDeferred);
  EXPECT_EQ(normal.error().message.find("reclaiming"), std::string::npos) << normal.error().message;
}

TEST(TopoPlaceTest, AQueueKeepsADeferredHeadBlockedUntilItsWaitIsOver) {
  World w = CostWorld();
  FakeCost cost([](const std::string&) { return 1.5; });
  Scheduler sched(w.cluster, testing::MakePlacer("topo").profile, 1);
  sched.set_placement_cost(&cost);
  JobQueue q(sched, QueuePolicy::kFifo);
  Job& head = w.NewJob(12);
  head.topo_slowdown_ok = 1.2;
  head.topo_max_wait_s = 100;
  Job& next = w.NewJob(1);
  head.duration_s = next.duration_s = 10;
  std::vector<UnresolvableJob> bad;
  ASSERT_TRUE(q.Push(head, bad).has_value());
  ASSERT_TRUE(q.Push(next, bad).has_value());
  auto pass = q.Schedule(50);
  ASSERT_TRUE(pass.has_value());
  EXPECT_TRUE(pass->started.empty());
  EXPECT_TRUE(pass->unresolvable.empty());
  EXPECT_EQ(q.head(), &head);
  // Nothing was released since: a head marked unfit would not be tried again.
  pass = q.Schedule(100);
  ASSERT_TRUE(pass.has_value());
  ASSERT_EQ(pass->started.size(), 2u);
  EXPECT_EQ(pass->started[0], &head);
  EXPECT_EQ(testing::Show(sched.cluster(), *sched.cluster().FindAllocation(head.id)), "a1:0-7 a2:4-7");
}

// --- first-fit ------------------------------------------------------------

TEST(FirstFitPlaceTest, NodeListOrderForOneNodeAndGatheringForGangs) {
  // Node list order differs from the topology's: b2, a1, b1, a2.
  World w(kTwoLeaves, Hosts({"b2", "a1", "b1", "a2"}));
  FirstFitPlace ff;
  EXPECT_EQ(w.Place(ff, w.NewJob(4)), "b2:0-3");
  w.HoldFirst("b2", 6);
  EXPECT_EQ(w.Place(ff, w.NewJob(4)), "a1:0-3");
  EXPECT_EQ(w.Place(ff, w.NewJob(2)), "b2:6-7");
  EXPECT_EQ(w.Place(ff, w.NewJob(11)), "b2:6-7 a1:0-7 b1:0");
  EXPECT_EQ(w.Place(ff, w.NewJob(11, true)), "");
}

// --- slurm-tree -----------------------------------------------------------

TEST(SlurmTreePlaceTest, TheFittingLeafWithTheFewestCandidateNodes) {
  World w(R"(version: 1
root:
  level: spine
  name: spine
  children:
    - {level: leaf, name: leaf1, hosts: "a[1-3]"}
    - {level: leaf, name: leaf2, hosts: "b[1-2]"}
)",
          Hosts({"a1", "a2", "a3", "b1", "b2"}));
  SlurmTreePlace st;
  EXPECT_EQ(w.Place(st, w.NewJob(16)), "b1:0-7 b2:0-7");
  w.HoldFirst("a1", 4);  // the tightest host, but Slurm counts nodes, not GPUs
  EXPECT_EQ(w.Place(st, w.NewJob(4)), "b1:0-3");
  EXPECT_EQ(w.Place(st, w.NewJob(24)), "a2:0-7 a3:0-7 b1:0-7");
}

TEST(SlurmTreePlaceTest, LaterLeavesCloseToTheChosenOnesWin) {
  World w(R"(version: 1
root:
  level: core
  name: core
  children:
    - level: spine
      name: pod1
      children:
        - {level: leaf, name: leaf1, hosts: [a1, a2]}
        - {level: leaf, name: leaf2, hosts: [b1]}
    - level: spine
      name: pod2
      children:
        - {level: leaf, name: leaf3, hosts: [c1, c2]}
)",
          Hosts({"a1", "a2", "b1", "c1", "c2"}));
  SlurmTreePlace st;
  // leaf1 first (most nodes); then leaf2, two hops away, beats leaf3, four
  // hops away, although leaf3 alone would hold the rest.
  EXPECT_EQ(w.Place(st, w.NewJob(32)), "a1:0-7 a2:0-7 b1:0-7 c1:0-7");
}

TEST(SlurmTreePlaceTest, NodesTimesGpusPerNodeInNodeListOrder) {
  World w(R"(version: 1
root: {level: leaf, name: leaf1, hosts: "a[1-3]"}
)",
          Hosts({"a3", "a1", "a2"}));
  SlurmTreePlace st;
  EXPECT_EQ(w.Place(st, w.NewJob(12)), "a3:0-5 a1:0-5");  // -N2 --gres=gpu:6
  EXPECT_EQ(w.Place(st, w.NewJob(13)), "a3:0-6 a1:0-5");  // -N2 --gres=gpu:7, the last 6
  EXPECT_EQ(w.Place(st, w.NewJob(16)), "a3:0-7 a1:0-7");
  w.HoldFirst("a3", 3);  // 5 free: not a candidate for 6 per node
  EXPECT_EQ(w.Place(st, w.NewJob(12)), "a1:0-5 a2:0-5");
  EXPECT_EQ(w.Place(st, w.NewJob(5)), "a3:3-7");
  EXPECT_EQ(w.Place(st, w.NewJob(22)), "");  // 3 nodes with 8 each: a3 has 5
}

// --- kueue-tas ------------------------------------------------------------

TEST(KueueTasPlaceTest, PreferredHostnameIsBestFitThenByName) {
  World w(kTwoLeaves, kTwoLeavesHosts);
  w.HoldFirst("a1", 4);
  w.HoldFirst("b1", 4);
  w.HoldFirst("b2", 6);
  KueueTasPlace kq;
  EXPECT_EQ(w.Place(kq, w.NewJob(4)), "a1:4-7");  // topo would take b1 (the fuller leaf)
  EXPECT_EQ(w.Place(kq, w.NewJob(2)), "b2:6-7");
  EXPECT_EQ(w.Place(kq, w.NewJob(5)), "a2:0-4");
  EXPECT_EQ(w.Place(kq, w.NewJob(9, true)), "");
}

TEST(KueueTasPlaceTest, PreferredLeafBestFitThenGreedyWithTightestFinish) {
  World w(R"(version: 1
root:
  level: spine
  name: spine
  children:
    - {level: leaf, name: leaf1, hosts: "a[1-3]"}
    - {level: leaf, name: leaf2, hosts: "b[1-3]"}
)",
          Hosts({"a1", "a2", "a3", "b1", "b2", "b3"}));
  w.HoldFirst("a3", 3);  // leaf1 21 free, leaf2 24
  KueueTasPlace kq;
  // Pods of 6 (12 GPUs on 8-GPU hosts): leaf1 holds 2 (a3 has 5 free), the tighter leaf.
  EXPECT_EQ(w.Place(kq, w.NewJob(12)), "a1:0-5 a2:0-5");
  EXPECT_EQ(w.Place(kq, w.NewJob(22)), "b1:0-7 b2:0-7 b3:0-5");
  Job& req = w.NewJob(25);
  req.topo_required = topo::Level::kLeaf;
  EXPECT_EQ(w.Place(kq, req), "");
}

TEST(KueueTasPlaceTest, FallsBackUpwardsAndPoolsTheChildrenOfAllDomains) {
  World w(R"(version: 1
root:
  level: spine
  name: spine
  children:
    - {level: leaf, name: leaf1, hosts: [a1, a2]}
    - {level: leaf, name: leaf2, hosts: [b1]}
)",
          Hosts({"a1", "a2", "b1"}));
  w.HoldFirst("a1", 2);
  w.HoldFirst("a2", 2);
  KueueTasPlace kq;
  // 18 GPUs are 3 pods of 6: no leaf holds 3 (leaf1 2, leaf2 1), so up to
  // the spine; the hosts of both leaves in one pool, by capacity then name.
  EXPECT_EQ(w.Place(kq, w.NewJob(18)), "a1:2-7 a2:2-7 b1:0-5");
  Job& req = w.NewJob(18);
  req.topo_required = topo::Level::kLeaf;
  EXPECT_EQ(w.Place(kq, req), "");
  // 14 GPUs are 2 pods of 7: only b1 has 7 free, so not even the spine holds them.
  Job& pref = w.NewJob(14);
  pref.topo_preferred = topo::Level::kLeaf;
  EXPECT_EQ(w.Place(kq, pref), "");
  Job& fits = w.NewJob(12);
  fits.topo_required = topo::Level::kLeaf;
  EXPECT_EQ(w.Place(kq, fits), "a1:2-7 a2:2-7");
}

// --- hived ----------------------------------------------------------------

TEST(HivedPlaceTest, MostUsedNodeFirstTiesInTopologyOrder) {
  World w(kTwoLeaves, Hosts({"b2", "b1", "a2", "a1"}));
  w.HoldFirst("a2", 2);
  w.HoldFirst("b1", 2);
  w.HoldFirst("b2", 4);
  HivedPlace hv;
  EXPECT_EQ(w.Place(hv, w.NewJob(4)), "b2:4-7");
  EXPECT_EQ(w.Place(hv, w.NewJob(5)), "a2:2-6");  // a2 before b1: topology order
  EXPECT_EQ(w.Place(hv, w.NewJob(7)), "a1:0-6");
  // Pods of 8 (the largest host) sorted ascending: [4, 8], greedily.
  EXPECT_EQ(w.Place(hv, w.NewJob(12)), "b2:4-7 a1:0-7");
  // [8, 8]: only a1 has 8 free; greedy, so no placement with 24 free.
  EXPECT_EQ(w.Place(hv, w.NewJob(16)), "");
}

TEST(HivedPlaceTest, PodsAscendingInTopologyOrderGpusUnderTheLowestAncestor) {
  World w(kNumaLeaf, Hosts({"h1", "h2", "h3", "h4"}));
  HivedPlace hv;
  EXPECT_EQ(w.Place(hv, w.NewJob(20)), "h1:0-3 h2:0-7 h3:0-7");
  w.Hold("h2", {0, 4, 5});
  EXPECT_EQ(w.Place(hv, w.NewJob(2)), "h2:6-7");
  EXPECT_EQ(w.Place(hv, w.NewJob(3)), "h2:1-3");
}

// --- random ---------------------------------------------------------------

TEST(RandomGangPlaceTest, DeterministicForASeedAndGathersFromRandomNodes) {
  World w(kTwoLeaves, kTwoLeavesHosts);
  w.HoldFirst("a1", 5);
  w.HoldFirst("a2", 3);
  w.HoldFirst("b1", 2);
  w.HoldFirst("b2", 4);  // 3 + 5 + 6 + 4 free
  RandomGangPlace rnd;
  std::set<std::string> seen, firsts;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    w.rng = Rng(seed);
    const std::string p = w.Place(rnd, w.NewJob(12));
    w.rng = Rng(seed);
    EXPECT_EQ(w.Place(rnd, w.NewJob(12)), p);
    seen.insert(p);
    firsts.insert(p.substr(0, 2));
  }
  EXPECT_GE(seen.size(), 4u);
  EXPECT_EQ(firsts.size(), 4u);
  // Through the "random" policy: gangs that fit on no node go to RandomGangPlace.
  auto run = [&](uint64_t seed) {
    Scheduler s(w.cluster, testing::MakePlacer("random").profile, seed);
    auto p = s.TrySchedule(w.NewJob(12));
    return p ? testing::Show(w.cluster, *p) : std::string();
  };
  EXPECT_EQ(run(3), run(3));
  std::set<std::string> by_seed;
  for (uint64_t seed = 1; seed <= 10; ++seed) by_seed.insert(run(seed));
  EXPECT_GE(by_seed.size(), 3u);
  EXPECT_EQ(by_seed.count(""), 0u);
}

// A cordoned (drained) host: its free capacity reads 0 in every aggregate,
// so every topology placer places around it. a1 cordoned in the two-leaf
// tree: an 8-GPU job goes to another host; a 24-GPU gang takes exactly a2,
// b1 and b2; a 32-GPU gang does not fit.
TEST(CordonTest, EveryTopologyPlacerSkipsACordonedHost) {
  for (const std::string& name : testing::TopologyPlacers()) {
    SCOPED_TRACE(name);
    World w(kTwoLeaves, kTwoLeavesHosts);
    ASSERT_TRUE(w.cluster.Cordon(w.Id("a1")).has_value());
    testing::Placer p = testing::MakePlacer(name);
    auto nodes = [&](int32_t gpus) {
      const Job& j = w.NewJob(gpus);
      CycleContext ctx{w.cluster, w.rng};
      auto placed = p.gang().PlaceGang(ctx, w.Req(j));
      std::set<std::string> out;
      if (!placed) return out;
      w.Check(j, *placed);
      for (const NodeAssignment& a : placed->assignments) out.insert(w.cluster.node_name(a.node));
      return out;
    };
    const std::set<std::string> eight = nodes(8);
    ASSERT_EQ(eight.size(), 1u);
    EXPECT_NE(*eight.begin(), "a1");
    EXPECT_EQ(nodes(24), (std::set<std::string>{"a2", "b1", "b2"}));
    EXPECT_TRUE(nodes(32).empty());
  }
}

// --- Found by mutation testing (issue 11) ----------------------------------

// RandomGangPlace gathers from every node with a free GPU, also those with
// exactly one.
TEST(RandomGangPlaceTest, NodesWithOneFreeGpuCount) {
  World w(kTwoLeaves, kTwoLeavesHosts);
  for (const char* h : {"a1", "a2", "b1", "b2"}) w.HoldFirst(h, 7);
  RandomGangPlace rnd;
  const std::string p = w.Place(rnd, w.NewJob(4));
  EXPECT_EQ(p.size(), std::string("a1:7 a2:7 b1:7 b2:7").size()) << p;
  for (const char* h : {"a1:7", "a2:7", "b1:7", "b2:7"}) EXPECT_NE(p.find(h), std::string::npos) << p;
}

// A domain with more than 256 children (topo keeps the first 256 on the
// stack, the rest in a vector): a host that cannot take the job is skipped
// there too, and when none can, nothing is placed. One leaf of 300 8-GPU
// hosts with 1 core each but the last, which has 4.
TEST(TopoPlaceTest, ALeafWithMoreThan256HostsSkipsHostsThatCannotTakeTheJob) {
  std::vector<Host> hosts;
  for (int i = 1; i <= 300; ++i) hosts.push_back({"h" + std::to_string(i), 8, "H100", i == 300 ? 4000 : 1000});
  World w("version: 1\nroot: {level: leaf, name: leaf1, hosts: \"h[1-300]\"}\n", hosts);
  TopoPlace topo;
  EXPECT_EQ(w.Place(topo, w.NewJob(8, true, 2000)), "h300:0-7");
  EXPECT_EQ(w.Place(topo, w.NewJob(8, true, 5000)), "");
}

// A required level above every level of the topology is the outermost one
// there is: one leaf of two hosts holds a 16-GPU job required "in a spine".
TEST(KueueTasPlaceTest, ARequiredLevelAboveTheTopologyIsItsOutermostLevel) {
  World w("version: 1\nroot: {level: leaf, name: leaf1, hosts: [a1, a2]}\n", Hosts({"a1", "a2"}));
  KueueTasPlace kq;
  Job& j = w.NewJob(16);
  j.topo_required = topo::Level::kSpine;
  EXPECT_EQ(w.Place(kq, j), "a1:0-7 a2:0-7");
}

// gang::UsableGpus: a TP group as large as a host-wide NVLink domain uses
// only whole groups (8 of 8, so 7 free GPUs give none); TP 1 uses every free
// GPU, also those outside the host's NVLink groups.
TEST(GangUsableGpus, WholeGroupsOnlyAndEveryGpuForTpOne) {
  World w(R"(version: 1
host_types:
  nv8:
    gpus: 8
    groups:
      - {level: nvlink, name: nv, gpus: [0, 1, 2, 3, 4, 5, 6, 7]}
  pair:
    gpus: 4
    groups:
      - {level: nvlink, name: nv0, gpus: [0, 1]}
root:
  level: spine
  name: spine
  children:
    - {level: leaf, name: leaf1, hosts: [h1], host_type: nv8}
    - {level: leaf, name: leaf2, hosts: [p1], host_type: pair}
)",
          {{"h1", 8}, {"p1", 4}});
  const NodeId h1 = w.Id("h1"), p1 = w.Id("p1");
  EXPECT_EQ(gang::UsableGpus(w.cluster, h1, 8), 8);
  EXPECT_EQ(gang::UsableGpus(w.cluster, p1, 1), 4);  // GPUs 2 and 3 are in no NVLink group
  EXPECT_EQ(gang::UsableGpus(w.cluster, p1, 2), 2);  // one whole pair
  w.HoldFirst("h1", 1);
  EXPECT_EQ(gang::UsableGpus(w.cluster, h1, 8), 0);
  EXPECT_EQ(gang::UsableGpus(w.cluster, h1, 4), 4);
  EXPECT_EQ(gang::UsableGpus(w.cluster, h1, 1), 7);
}

// A request for no GPUs goes to the node path even with a topology placer,
// whatever milli-GPU per device it names.
TEST(FrameworkTopology, ARequestForNoGpusTakesTheNodePath) {
  World w(kTwoLeaves, kTwoLeavesHosts);
  Framework fw(testing::MakePlacer("topo").profile);
  Job& j = w.NewJob(0, true, 1000, 1024);
  j.gpu_milli = kMilliPerGpu;
  CycleContext ctx{w.cluster, w.rng};
  auto p = fw.Schedule(ctx, w.Req(j));
  ASSERT_TRUE(p) << p.error().message;
  ASSERT_EQ(p->assignments.size(), 1u);
  EXPECT_TRUE(p->assignments[0].gpus.empty());
}

// A request for no whole GPUs is no gang: every topology placer declines it.
TEST(AllTopologyPlacers, DeclineARequestForNoGpus) {
  for (const std::string& name : testing::TopologyPlacers()) {
    SCOPED_TRACE(name);
    World w(kTwoLeaves, kTwoLeavesHosts);
    Job& j = w.NewJob(0, false, 1000, 1024);
    j.gpu_milli = kMilliPerGpu;
    EXPECT_EQ(w.Place(name, j), "");
  }
}

}  // namespace
}  // namespace tidal::plugins

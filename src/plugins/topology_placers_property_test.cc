// What every topology placer must do, on hand-made cases and as a rapidcheck
// property over random topologies: all-or-nothing placements that bind,
// exactly the GPUs asked for on allowed models, CPU and memory shared in
// proportion (the rounding remainder on the first node), single-node and
// required-level constraints kept, the same placement for the same state and
// seed; and sharing and CPU-only jobs left to the node path.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "framework/gang.h"
#include "plugins/placer_test_util.h"
#include "plugins/random_gang/random_gang.h"
#include "scheduler/scheduler.h"

namespace tidal::plugins {
namespace {

using testing::Host;
using testing::Show;
using testing::World;

using testing::kTwoLeaves;
using testing::kTwoLeavesHosts;

constexpr std::string_view kOneLeaf = R"(version: 1
root: {level: leaf, name: leaf1, hosts: "n[1-4]"}
)";

// Everything a placement could have changed, per node.
std::vector<std::string> Snapshot(const ClusterState& c) {
  std::vector<std::string> v;
  for (NodeId n = 0; n < c.num_nodes(); ++n)
    v.push_back(fmt::format("{} {} {} {} {}", c.free_whole_gpus(n), c.gpu_milli_free(n), c.cpu_free(n), c.memory_free(n), c.version(n)));
  v.push_back(std::to_string(c.num_allocations()));
  return v;
}

TEST(AllPlacersTest, NothingIsBoundWhenTheGangDoesNotFitWhole) {
  World w(kTwoLeaves, kTwoLeavesHosts);
  w.HoldFirst("a1", 3);
  w.HoldFirst("a2", 8);  // 5 + 0 + 8 + 8 free, CPU 64 cores a node
  for (const auto& name : testing::TopologyPlacers()) {
    Scheduler s(w.cluster, testing::MakePlacer(name).profile, 1);
    const auto before = Snapshot(s.cluster());
    for (const Job* j : {&w.NewJob(22), &w.NewJob(21, true), &w.NewJob(16, false, 200000), &w.NewJob(16, false, 0, 700000)}) {
      auto r = s.ScheduleAndBind(*j);
      ASSERT_FALSE(r.has_value()) << name << " " << Show(s.cluster(), **r);
      EXPECT_NE(r.error().code, ErrorCode::kDeferred) << name;
      EXPECT_EQ(Snapshot(s.cluster()), before) << name;
      EXPECT_EQ(w.Place(name, *j), "") << name;
    }
    // What does fit still binds.
    ASSERT_TRUE(s.ScheduleAndBind(w.NewJob(5, false, 1000, 1000)).has_value()) << name;
    EXPECT_TRUE(s.cluster().CheckInvariants().has_value());
  }
}

TEST(AllPlacersTest, CpuAndMemoryInProportionWithTheRemainderOnTheFirstNode) {
  World w(kTwoLeaves, kTwoLeavesHosts);
  w.HoldFirst("b2", 8);
  const Job& j = w.NewJob(12, false, 10003, 1001);
  // Per placer: the placement, then CPU and memory of each assignment.
  const std::map<std::string, std::tuple<std::string, std::vector<int64_t>, std::vector<int64_t>>> want = {
      {"topo", {"a1:0-7 a2:0-3", {6669, 3334}, {668, 333}}},
      {"first-fit", {"a1:0-7 a2:0-3", {6669, 3334}, {668, 333}}},
      {"slurm-tree", {"a1:0-5 a2:0-5", {5002, 5001}, {501, 500}}},
      {"kueue-tas", {"a1:0-5 a2:0-5", {5002, 5001}, {501, 500}}},  // 2 pods of 6
      {"hived", {"a1:0-3 a2:0-7", {3335, 6668}, {334, 667}}},
  };
  for (const auto& name : testing::TopologyPlacers()) {
    auto placer = testing::MakePlacer(name);
    CycleContext ctx{w.cluster, w.rng};
    auto p = placer.gang().PlaceGang(ctx, w.Req(j));
    ASSERT_TRUE(p.has_value()) << name;
    w.Check(j, *p);
    std::vector<int64_t> cpu, mem;
    for (const auto& a : p->assignments) cpu.push_back(a.cpu_milli), mem.push_back(a.memory_mib);
    ASSERT_TRUE(want.contains(name)) << name << ": add its expectation";
    EXPECT_EQ(std::make_tuple(Show(w.cluster, *p), cpu, mem), want.at(name)) << name;
  }
}

TEST(AllPlacersTest, ANodeMustHoldItsShareAndTheRemainder) {
  // 3 milli-CPU over 2 GPUs: 1 each, plus 1 on the first node; n1 has 1.
  World w(kOneLeaf, {{"n1", 1, "H100", 1, 100}, {"n2", 1, "H100", 2, 100}, {"n3", 1, "H100", 2, 100}, {"n4", 1, "H100", 0, 100}});
  const Job& j = w.NewJob(2, false, 3, 0);
  for (const auto& name : testing::TopologyPlacers()) {
    auto placer = testing::MakePlacer(name);
    CycleContext ctx{w.cluster, w.rng};
    auto p = placer.gang().PlaceGang(ctx, w.Req(j));
    ASSERT_TRUE(p.has_value()) << name;
    EXPECT_EQ(Show(w.cluster, *p), "n2:0 n3:0") << name;
    EXPECT_EQ(p->assignments[0].cpu_milli, 2) << name;
    EXPECT_EQ(p->assignments[1].cpu_milli, 1) << name;
  }
  // The same for memory.
  World m(kOneLeaf, {{"n1", 1, "H100", 100, 1}, {"n2", 1, "H100", 100, 2}, {"n3", 1, "H100", 100, 2}, {"n4", 1, "H100", 100, 0}});
  const Job& k = m.NewJob(2, false, 0, 3);
  for (const auto& name : testing::TopologyPlacers()) {
    EXPECT_EQ(m.Place(name, k), "n2:0 n3:0") << name;
  }
}

TEST(AllPlacersTest, SharingAndCpuOnlyJobsTakeTheNodePathWithBestFit) {
  World w(kTwoLeaves, kTwoLeavesHosts);
  w.HoldFirst("a2", 7);  // GPU 7 free: the least left over
  Job& share = w.NewJob(1, true, 1000, 1000);
  share.gpu_milli = 500;
  const Job& cpu_only = w.NewJob(0, true, 1000, 1000);
  for (const auto& name : testing::TopologyPlacers()) {
    Framework fw(testing::MakePlacer(name).profile);
    EXPECT_FALSE(fw.mutable_profile().gang->PlaceGang(CycleContext{w.cluster, w.rng}, w.Req(share)).has_value()) << name;
    auto p = fw.Schedule(CycleContext{w.cluster, w.rng}, w.Req(share));
    ASSERT_TRUE(p.has_value()) << name;
    EXPECT_EQ(Show(w.cluster, *p), "a2:7") << name;
    EXPECT_EQ(p->assignments[0].gpu_milli, std::vector<int32_t>{500}) << name;
    EXPECT_TRUE(w.cluster.CanBind(*p).has_value());
    auto q = fw.Schedule(CycleContext{w.cluster, w.rng}, w.Req(cpu_only));
    ASSERT_TRUE(q.has_value()) << name;
    EXPECT_EQ(Show(w.cluster, *q), "a2:") << name;
  }
}

// --- bugs found (placer code is being edited elsewhere; enable with the fix) ---

// BUG (gang::ShareFits): it always adds 1 for the rounding remainder, also
// when the node would hold the whole job (gpus == num_gpu), where the share
// is exactly cpu_milli. A 3-GPU job asking 1000 milli-CPU does not fit a node
// with exactly 1000 free under any topology placer (the node path places it),
// and on an empty cluster the queue then reports it as never fitting.
TEST(AllPlacersTest, AJobFitsANodeWithExactlyItsCpuFree) {
  World w(kOneLeaf, {{"n1", 4, "H100", 1000, 1000}, {"n2", 4, "H100", 0, 0}, {"n3", 4, "H100", 0, 0}, {"n4", 4, "H100", 0, 0}});
  for (const auto& name : testing::TopologyPlacers()) {
    EXPECT_EQ(w.Place(name, w.NewJob(3, true, 1000, 1000)), "n1:0-2") << name;
    EXPECT_EQ(w.Place(name, w.NewJob(3, false, 1000, 1000)), "n1:0-2") << name;
  }
}

// BUG (gang::ShareFits vs gang::Assemble): Assemble puts the whole rounding
// remainder on the first node, and with k nodes it can be up to k - 1
// milli-CPU (MiB), but ShareFits reserves only 1. Here 5 milli-CPU over three
// 1-GPU nodes gives 1 + 1 + 1 and a remainder of 2: n1 passes ShareFits
// with 2 free, Assemble then asks 3 of it and every placer gives up, though
// n4 first (3) with n1, n2 (1 each) fits.
TEST(AllPlacersTest, ARemainderOfSeveralUnitsStillFindsAPlacement) {
  World w(kOneLeaf, {{"n1", 1, "H100", 2, 10}, {"n2", 1, "H100", 2, 10}, {"n3", 1, "H100", 2, 10}, {"n4", 1, "H100", 10, 10}});
  for (const auto& name : testing::TopologyPlacers()) EXPECT_NE(w.Place(name, w.NewJob(3, false, 5, 0)), "") << name;
}

// BUG (kueue-tas, topologies where hosts sit beside switches, e.g. a host
// directly under the spine next to a leaf): the downward walk pools the
// children of the selected domains and stops when the pool's first entry is
// a host. (a) If a switch sorts first, the hosts in the pool are dropped
// (their children are GPUs, which have no capacity) and the job fails though
// it fits; (b) if a host sorts first, the switches left in the pool are taken
// as hosts: t.host_index(switch) is -1 and ClusterState::node_of_host(-1)
// reads out of bounds (undefined behaviour; it happened to pick node 0).
TEST(KueueTasPlaceTest, HostsBesideSwitchesArePlacedCorrectly) {
  auto yaml = [](const std::string& host) {
    return fmt::format(R"(version: 1
root:
  level: spine
  name: spine
  hosts: [{}]
  children:
    - {{level: leaf, name: leaf1, hosts: [a1, a2]}}
)",
                       host);
  };
  {
    // 24 GPUs: 3 pods of 8; leaf1 holds 2, so the spine: leaf1 and s1 pooled,
    // then s1 (a host) stays in the pool beside leaf1's hosts.
    World w(yaml("s1"), {{"a1", 8}, {"a2", 8}, {"s1", 8}});
    EXPECT_EQ(w.Place("kueue-tas", w.NewJob(24)), "a1:0-7 a2:0-7 s1:0-7");
  }
  {
    // 16 GPUs: 2 pods of 8 with a2 taken: leaf1 and c1 hold 1 each; c1 sorts
    // first (by name) and is carried while leaf1 is opened.
    World w(yaml("c1"), {{"c1", 8}, {"a1", 8}, {"a2", 8}});
    w.HoldFirst("a2", 8);
    EXPECT_EQ(w.Place("kueue-tas", w.NewJob(16)), "a1:0-7 c1:0-7");
  }
}

// Job::topo_required is honoured by the placers whose peers have it (topo,
// kueue-tas: they refuse a gang that fits only across leaves); first-fit,
// slurm-tree and hived place as their peers do without such a request, so
// they spread it (documented in workload/job.h).
TEST(AllPlacersTest, RequiredLevelHonouredByTopoAndKueueOnly) {
  World w(kTwoLeaves, kTwoLeavesHosts);
  w.HoldFirst("a2", 8);
  w.HoldFirst("b2", 8);
  Job& j = w.NewJob(16);
  j.topo_required = topo::Level::kLeaf;
  for (const auto& name : testing::TopologyPlacers()) {
    const bool honours = name == "topo" || name == "kueue-tas";
    if (honours) EXPECT_EQ(w.Place(name, j), "") << name;
    else EXPECT_NE(w.Place(name, j), "") << name;
  }
}

// --- the property -----------------------------------------------------------

struct RandomCluster {
  ClusterState cluster;
  std::vector<topo::Level> levels;  // node and above, present in the topology
  bool uniform_depth = true;        // every host at the same depth
};

// Random fan-outs (1-3), levels skipped at random (mixed depths, hosts beside
// switches), hosts of 1-8 GPUs of two models with random NUMA / NVLink
// layouts, the node list in random order, and some random jobs bound.
RandomCluster GenCluster() {
  using topo::Level;
  topo::TopologyBuilder b("random");
  std::vector<NodeSpec> nodes;
  const Level above[] = {Level::kBlock, Level::kLeaf, Level::kSpine, Level::kCore};
  std::function<void(Level, topo::DomainId)> grow = [&](Level l, topo::DomainId parent) {
    const int kids = *rc::gen::inRange(parent == 0 ? 2 : 1, 5);
    for (int k = 0; k < kids; ++k) {
      std::vector<Level> lower;
      for (Level x : above)
        if (topo::LevelIndex(x) < topo::LevelIndex(l)) lower.push_back(x);
      if (lower.empty() || nodes.size() >= 32 || *rc::gen::inRange(0, 4) == 0) {
        topo::HostLayout h;
        h.gpus = *rc::gen::inRange(1, 9);
        h.gpu_model = *rc::gen::inRange(0, 4) == 0 ? "B" : "A";
        const int layout = *rc::gen::inRange(0, 4);
        h.nvlink = layout == 3;
        if (layout == 1 && h.gpus % 2 == 0) {  // two NUMA halves
          for (int g = 0; g < 2; ++g) {
            topo::HostLayout::Group grp{Level::kPcie, fmt::format("numa{}", g), {}};
            for (int i = g * h.gpus / 2; i < (g + 1) * h.gpus / 2; ++i) grp.gpus.push_back(i);
            h.groups.push_back(grp);
          }
        } else if (layout == 2) {  // NVLink-bridged pairs
          for (int i = 0; i + 1 < h.gpus; i += 2) h.groups.push_back({Level::kNvlink, fmt::format("nv{}", i / 2), {i, i + 1}, true});
        }
        const std::string name = fmt::format("h{}", nodes.size());
        nodes.push_back({name, *rc::gen::element<int64_t>(16000, 32000, 64000), *rc::gen::element<int64_t>(65536, 262144), h.gpus,
                         h.gpu_model});
        b.AddHost(name, parent, h);
      } else {
        const Level x = *rc::gen::elementOf(lower);
        grow(x, b.AddDomain(x, fmt::format("{}{}", topo::LevelName(x), b.size()), parent));
      }
    }
  };
  const Level root = *rc::gen::element(Level::kLeaf, Level::kSpine, Level::kCore, Level::kCore);
  grow(root, b.AddDomain(root, "root", topo::kNoDomain));
  auto t = std::make_shared<const topo::Topology>(testing::Must(std::move(b).Build(), "random topology"));
  for (size_t i = nodes.size(); i > 1; --i) std::swap(nodes[i - 1], nodes[static_cast<size_t>(*rc::gen::inRange<size_t>(0, i))]);
  RandomCluster r{testing::Must(ClusterState::Build(nodes), "nodes")};
  testing::MustOk(r.cluster.AttachTopology(t), "attach");
  for (topo::Level l : t->levels())
    if (topo::LevelIndex(l) >= topo::LevelIndex(Level::kNode)) r.levels.push_back(l);
  for (int32_t h = 1; h < t->num_hosts(); ++h) r.uniform_depth = r.uniform_depth && t->depth(t->host(h)) == t->depth(t->host(0));
  JobId id = 1;
  for (NodeId n = 0; n < r.cluster.num_nodes(); ++n) {
    if (*rc::gen::inRange(0, 2) == 0) continue;
    NodeAssignment a{n, *rc::gen::inRange<int64_t>(0, r.cluster.cpu_capacity(n) / 2), *rc::gen::inRange<int64_t>(0, r.cluster.memory_capacity(n) / 2)};
    for (int32_t g = 0; g < r.cluster.gpu_count(n); ++g) {
      const int u = *rc::gen::inRange(0, 10);
      if (u < 3) a.gpus.push_back(g), a.gpu_milli.push_back(kMilliPerGpu);
      if (u == 3) a.gpus.push_back(g), a.gpu_milli.push_back(*rc::gen::inRange(1, 1000));
    }
    RC_ASSERT(r.cluster.Bind(id++, Placement{{a}}).has_value());
  }
  return r;
}

Job GenJob(const RandomCluster& r) {
  Job j;
  j.id = 999999;
  j.name = "gang";
  int32_t free = 0;
  for (NodeId n = 0; n < r.cluster.num_nodes(); ++n) free += r.cluster.free_whole_gpus(n);
  j.num_gpu = *rc::gen::inRange(0, 3) == 0 ? *rc::gen::inRange<int32_t>(1, 9) : *rc::gen::inRange<int32_t>(1, free + 3);
  j.gpu_milli = kMilliPerGpu;
  j.single_node = *rc::gen::inRange(0, 4) == 0;
  if (*rc::gen::inRange(0, 4) == 0) j.gpu_spec = {r.cluster.models().Name(*rc::gen::inRange<GpuModelId>(0, static_cast<GpuModelId>(r.cluster.models().size())))};
  if (*rc::gen::inRange(0, 3) == 0) j.topo_required = *rc::gen::elementOf(r.levels);
  j.tp_group = *rc::gen::element(0, 0, 2, 4);
  const int load = *rc::gen::inRange(0, 6);  // none, light, or a share that may not fit
  if (load > 0) {
    j.cpu_milli = *rc::gen::inRange<int64_t>(0, (load == 5 ? 16000 : 2000) * int64_t{j.num_gpu} + 1);
    j.memory_mib = *rc::gen::inRange<int64_t>(0, (load == 5 ? 65536 : 8192) * int64_t{j.num_gpu} + 1);
  }
  return j;
}

std::string Full(const ClusterState& c, const std::optional<Placement>& p) {
  if (!p) return "-";
  std::string s = Show(c, *p);
  for (const auto& a : p->assignments) s += fmt::format(" {}/{}", a.cpu_milli, a.memory_mib);
  return s;
}

void CheckEveryPlacer(bool kueue_on_mixed_depths) {
  const RandomCluster r = GenCluster();
  const ClusterState& c = r.cluster;
  const Job job = GenJob(r);
  const PodRequest pod = testing::Must(ResolveRequest(job, c.models()), "request");
  const uint64_t seed = *rc::gen::arbitrary<uint64_t>();
  bool one_node_fits = false;
  for (NodeId n = 0; n < c.num_nodes(); ++n) one_node_fits = one_node_fits || gang::NodeCanTake(c, pod, n, job.num_gpu);
  int64_t allowed_free = 0;
  for (NodeId n = 0; n < c.num_nodes(); ++n)
    if (c.gpu_count(n) > 0 && pod.gpu_spec.Allows(c.gpu_model(n))) allowed_free += c.free_whole_gpus(n);

  std::vector<std::string> names = testing::TopologyPlacers();
  names.push_back("random");
  for (const auto& name : names) {
    if (name == "kueue-tas" && !r.uniform_depth && !kueue_on_mixed_depths) continue;  // see DISABLED_HostsBesideSwitches...
    // RandomGangPlace only sees what the node path could not place (framework.cc).
    if (name == "random" && (job.single_node || one_node_fits)) continue;
    auto a = testing::MakePlacer(name), b = testing::MakePlacer(name);
    auto place = [&](GangPlacePlugin& g) {
      Rng rng(seed);
      return g.PlaceGang(CycleContext{c, rng, 0}, pod);
    };
    const auto p = place(a.gang());
    // Deterministic: a fresh placer and the same one again, same seed.
    RC_ASSERT(Full(c, place(b.gang())) == Full(c, p));
    RC_ASSERT(Full(c, place(a.gang())) == Full(c, p));
    const bool honours_required = name == "topo" || name == "kueue-tas";
    if (job.tp_group <= 1 && one_node_fits && (name != "kueue-tas" || !job.topo_required)) {
      // Fits on one node: every placer finds one node.
      RC_ASSERT(p.has_value());
      RC_ASSERT(p->assignments.size() == 1u);
    }
    if ((name == "topo" || name == "first-fit") && !job.single_node && !job.topo_required && job.tp_group <= 1 &&
        job.cpu_milli == 0 && job.memory_mib == 0 && allowed_free >= job.num_gpu) {
      RC_ASSERT(p.has_value());  // gathers all it needs
    }
    if (!p) continue;
    RC_ASSERT(c.CanBind(*p).has_value());
    int64_t gpus = 0, cpu = 0, mem = 0;
    std::set<NodeId> seen;
    std::vector<topo::DomainId> hosts;
    for (size_t i = 0; i < p->assignments.size(); ++i) {
      const NodeAssignment& x = p->assignments[i];
      RC_ASSERT(seen.insert(x.node).second);
      RC_ASSERT(!x.gpus.empty());
      RC_ASSERT(pod.gpu_spec.Allows(c.gpu_model(x.node)));
      for (int32_t m : x.gpu_milli) RC_ASSERT(m == kMilliPerGpu);
      const auto g = static_cast<int64_t>(x.gpus.size());
      gpus += g;
      cpu += x.cpu_milli;
      mem += x.memory_mib;
      // In proportion; a fractional share may carry one unit of the remainder.
      const int64_t cf = job.cpu_milli * g / job.num_gpu, mf = job.memory_mib * g / job.num_gpu;
      RC_ASSERT(x.cpu_milli == cf || (x.cpu_milli == cf + 1 && job.cpu_milli * g % job.num_gpu != 0));
      RC_ASSERT(x.memory_mib == mf || (x.memory_mib == mf + 1 && job.memory_mib * g % job.num_gpu != 0));
      hosts.push_back(c.topology().host(c.host_of(x.node)));
    }
    RC_ASSERT(gpus == int64_t{job.num_gpu});
    RC_ASSERT(cpu == job.cpu_milli);
    RC_ASSERT(mem == job.memory_mib);
    if (job.single_node) RC_ASSERT(p->assignments.size() == 1u);
    if (job.topo_required && honours_required) {
      std::sort(hosts.begin(), hosts.end());
      const topo::DomainId common = c.topology().LowestCommonDomain(hosts);
      RC_ASSERT(topo::LevelIndex(c.topology().level(common)) <= topo::LevelIndex(*job.topo_required));
    }
    ClusterState after = c;
    RC_ASSERT(after.Bind(job.id, *p).has_value());
    RC_ASSERT(after.CheckInvariants().has_value());
  }
}

RC_GTEST_PROP(TopologyPlacersProperty, ValidDeterministicAndWithinConstraints, ()) { CheckEveryPlacer(false); }

// With kueue-tas on topologies whose hosts sit at different depths: fails
// (see KueueTasPlaceTest.HostsBesideSwitchesArePlacedCorrectly).
RC_GTEST_PROP(TopologyPlacersProperty, KueueTasOnMixedDepths, ()) { CheckEveryPlacer(true); }

}  // namespace
}  // namespace tidal::plugins

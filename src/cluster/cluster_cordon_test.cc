// ClusterState's cordon (drain): a cordoned node takes no new binding, its
// free capacity is held out of every aggregate (node, cluster, topology
// domain), what its running jobs release goes into the hold, and Uncordon
// returns the hold exactly. Every expectation is an exact number worked out
// from the cluster below, and every step ends with CheckInvariants' recount.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "cluster/cluster_state.h"
#include "cluster/cluster_test_util.h"
#include "topology/builder.h"

namespace tidal {
namespace {

using topo::DomainId;
using topo::Level;

topo::HostLayout Gpus(int n) {
  topo::HostLayout L;
  L.gpus = n;
  return L;
}

// 0 S
//   1 L1: 2 hA (4 H100) 3-6, 7 hB (4 H100) 8-11
//  12 L2: 13 hC (8 A100; 14 p0 {15-18}, 19 p1 {20-23}), 24 hD (CPU only)
std::shared_ptr<const topo::Topology> Tree() {
  topo::TopologyBuilder b("tree");
  const DomainId s = b.AddDomain(Level::kSpine, "S", topo::kNoDomain);
  const DomainId l1 = b.AddDomain(Level::kLeaf, "L1", s);
  const DomainId l2 = b.AddDomain(Level::kLeaf, "L2", s);
  b.AddHost("hA", l1, Gpus(4));
  b.AddHost("hB", l1, Gpus(4));
  topo::HostLayout c = Gpus(8);
  c.groups = {{Level::kPcie, "p0", {0, 1, 2, 3}}, {Level::kPcie, "p1", {4, 5, 6, 7}}};
  b.AddHost("hC", l2, c);
  b.AddHost("hD", l2, Gpus(0));
  auto t = std::move(b).Build();
  EXPECT_TRUE(t.has_value()) << t.error().message;
  return std::make_shared<const topo::Topology>(t ? std::move(*t) : topo::Topology{});
}

constexpr DomainId S = 0, L1 = 1, hA = 2, hB = 7, L2 = 12, hC = 13, p0 = 14, p1 = 19, hD = 24;
constexpr NodeId nC = 0, nA = 1, nD = 2, nB = 3;

// Node ids differ from host indices on purpose (as in cluster_topology_test).
ClusterState Cluster() {
  auto s = ClusterState::Build({{"hC", 64000, 1 << 20, 8, "A100"},
                                {"hA", 32000, 1 << 19, 4, "H100"},
                                {"hD", 16000, 1 << 16, 0, ""},
                                {"hB", 32000, 1 << 19, 4, "H100"}});
  EXPECT_TRUE(s.has_value()) << s.error().message;
  ClusterState c = std::move(*s);
  EXPECT_TRUE(c.AttachTopology(Tree()).has_value());
  return c;
}

Placement Whole(NodeId n, std::vector<int32_t> gpus, int64_t cpu = 0, int64_t mem = 0) {
  NodeAssignment a{n, cpu, mem, gpus, std::vector<int32_t>(gpus.size(), kMilliPerGpu)};
  return Placement{{a}};
}

std::vector<int32_t> Free(const ClusterState& c, NodeId n) {
  auto f = c.gpu_free(n);
  return {f.begin(), f.end()};
}

using testing::ExpectAggregates;
using testing::Want;

using H = std::vector<std::pair<int, int>>;
H Hist(const ClusterState& c, DomainId d) {
  H out;
  for (int k = 0; k < ClusterState::kFreeHistogram; ++k)
    if (c.domain_hosts_with_free(d, k) != 0) out.push_back({k, c.domain_hosts_with_free(d, k)});
  return out;
}

const std::vector<Want> kAllFree = {{S, 16, 3, 8}, {L1, 8, 2, 4}, {L2, 8, 1, 8}, {hA, 4, 1, 4},
                                    {hB, 4, 1, 4}, {hC, 8, 1, 8}, {hD, 0, 0, 0}, {p0, 4, -1, -1}};

TEST(ClusterCordon, CordoningIdleNodesTakesExactlyTheirCapacityOutOfThePool) {
  ClusterState c = Cluster();
  ExpectAggregates(c, kAllFree, "attached");
  EXPECT_EQ(Hist(c, S), (H{{0, 1}, {4, 2}, {8, 1}}));
  EXPECT_EQ(c.num_cordoned(), 0);

  ASSERT_TRUE(c.Cordon(nA).has_value());
  EXPECT_TRUE(c.cordoned(nA));
  EXPECT_FALSE(c.cordoned(nB));
  EXPECT_EQ(c.num_cordoned(), 1);
  EXPECT_EQ(c.cpu_free(nA), 0);
  EXPECT_EQ(c.memory_free(nA), 0);
  EXPECT_EQ(Free(c, nA), (std::vector<int32_t>{0, 0, 0, 0}));
  EXPECT_EQ(c.free_whole_gpus(nA), 0);
  EXPECT_EQ(c.gpu_milli_free(nA), 0);
  EXPECT_EQ(c.version(nA), 1u);
  // Capacities stay; the cluster's free milli drops by exactly hA's 4000.
  EXPECT_EQ(c.cpu_capacity(nA), 32000);
  EXPECT_EQ(c.total_gpus(), 16);
  EXPECT_EQ(c.total_gpu_milli_free(), 12000);
  EXPECT_EQ(c.total_gpu_milli_allocated(), 4000);
  EXPECT_EQ(c.cordoned_gpu_milli(), 4000);
  EXPECT_EQ(c.cordon_gpu_milli(nA), 4000);
  EXPECT_EQ(c.cordon_gpu_milli(nB), 0);
  EXPECT_DOUBLE_EQ(c.gpus_in_use(), 0.0);
  ExpectAggregates(c, {{S, 12, 2, 8}, {L1, 4, 1, 4}, {L2, 8, 1, 8}, {hA, 0, 0, 0}, {hB, 4, 1, 4}, {3, 0, -1, -1}, {6, 0, -1, -1}},
                   "hA cordoned");
  EXPECT_EQ(Hist(c, S), (H{{0, 2}, {4, 1}, {8, 1}}));
  EXPECT_EQ(Hist(c, L1), (H{{0, 1}, {4, 1}}));
  EXPECT_EQ(Hist(c, hA), (H{{0, 1}}));

  // The largest host: the maxima above it fall to hB's 4.
  ASSERT_TRUE(c.Cordon(nC).has_value());
  EXPECT_EQ(c.total_gpu_milli_free(), 4000);
  EXPECT_EQ(c.cordoned_gpu_milli(), 12000);
  EXPECT_EQ(c.cordon_gpu_milli(nC), 8000);
  ExpectAggregates(c, {{S, 4, 1, 4}, {L2, 0, 0, 0}, {hC, 0, 0, 0}, {p0, 0, -1, -1}, {p1, 0, -1, -1}}, "hC cordoned too");
  EXPECT_EQ(Hist(c, S), (H{{0, 3}, {4, 1}}));

  // A CPU-only node: CPU and memory held, no GPU milli.
  ASSERT_TRUE(c.Cordon(nD).has_value());
  EXPECT_EQ(c.num_cordoned(), 3);
  EXPECT_EQ(c.cpu_free(nD), 0);
  EXPECT_EQ(c.memory_free(nD), 0);
  EXPECT_EQ(c.cordon_gpu_milli(nD), 0);
  EXPECT_EQ(c.cordoned_gpu_milli(), 12000);
  EXPECT_EQ(c.version(nD), 1u);
  ExpectAggregates(c, {{S, 4, 1, 4}, {hD, 0, 0, 0}}, "hD cordoned too");

  // Uncordon returns exactly what was held: whole GPUs = count when idle.
  ASSERT_TRUE(c.Uncordon(nC).has_value());
  EXPECT_EQ(c.free_whole_gpus(nC), 8);
  EXPECT_EQ(c.gpu_milli_free(nC), 8000);
  EXPECT_EQ(c.cpu_free(nC), 64000);
  EXPECT_EQ(c.memory_free(nC), 1 << 20);
  EXPECT_EQ(c.cordoned_gpu_milli(), 4000);
  EXPECT_EQ(c.version(nC), 2u);
  ExpectAggregates(c, {{S, 12, 2, 8}, {L2, 8, 1, 8}, {hC, 8, 1, 8}}, "hC back");
  ASSERT_TRUE(c.Uncordon(nA).has_value());
  ASSERT_TRUE(c.Uncordon(nD).has_value());
  EXPECT_EQ(c.num_cordoned(), 0);
  EXPECT_EQ(c.cordoned_gpu_milli(), 0);
  EXPECT_EQ(c.total_gpu_milli_free(), 16000);
  EXPECT_EQ(c.cpu_free(nA), 32000);
  EXPECT_EQ(c.memory_free(nA), 1 << 19);
  EXPECT_EQ(c.cpu_free(nD), 16000);
  EXPECT_EQ(c.memory_free(nD), 1 << 16);
  EXPECT_EQ(Free(c, nA), (std::vector<int32_t>{1000, 1000, 1000, 1000}));
  ExpectAggregates(c, kAllFree, "all back");
  EXPECT_EQ(Hist(c, S), (H{{0, 1}, {4, 2}, {8, 1}}));
  ASSERT_TRUE(c.Bind(1, Whole(nA, {0, 1, 2, 3}, 32000, 1 << 19)).has_value());
  EXPECT_TRUE(c.CheckInvariants().has_value());
}

TEST(ClusterCordon, CanBindRefusesACordonedNodeNamingIt) {
  ClusterState c = Cluster();
  ASSERT_TRUE(c.Cordon(nA).has_value());
  const std::string why = "node 'hA' is cordoned (drained); it takes no new work until it is uncordoned";
  auto r = c.CanBind(Whole(nA, {0}));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kUnschedulable);
  EXPECT_EQ(r.error().message, why);
  // Even a placement that takes nothing from the pool.
  ASSERT_TRUE(c.Cordon(nD).has_value());
  auto nothing = c.CanBind(Placement{{{nD, 0, 0, {}, {}}}});
  ASSERT_FALSE(nothing.has_value());
  EXPECT_EQ(nothing.error().code, ErrorCode::kUnschedulable);
  EXPECT_EQ(nothing.error().message, "node 'hD' is cordoned (drained); it takes no new work until it is uncordoned");
  // A gang with one part there fails whole, and Bind applies nothing.
  Placement gang{{{nB, 100, 0, {0}, {1000}}, {nA, 0, 0, {1}, {1000}}}};
  auto b = c.Bind(7, gang);
  ASSERT_FALSE(b.has_value());
  EXPECT_EQ(b.error().message, why);
  EXPECT_FALSE(c.HasAllocation(7));
  EXPECT_EQ(c.free_whole_gpus(nB), 4);
  EXPECT_EQ(c.cpu_free(nB), 32000);
  // Invalid input is still reported as such.
  EXPECT_EQ(c.CanBind(Whole(nA, {9})).error().code, ErrorCode::kInvalidArgument);
  ExpectAggregates(c, {{S, 12, 2, 8}, {hA, 0, 0, 0}}, "after refusals");
}

TEST(ClusterCordon, RunningJobsKeepRunningAndReleaseIntoTheHold) {
  ClusterState c = Cluster();
  ASSERT_TRUE(c.Bind(1, Whole(nA, {0, 1}, 4000, 1000)).has_value());
  ASSERT_TRUE(c.Bind(2, Placement{{{nA, 1000, 0, {2}, {300}}}}).has_value());
  EXPECT_EQ(c.total_gpu_milli_free(), 13700);

  ASSERT_TRUE(c.Cordon(nA).has_value());
  ASSERT_TRUE(c.HasAllocation(1));
  ASSERT_TRUE(c.HasAllocation(2));
  EXPECT_EQ(c.FindAllocation(1)->assignments[0].gpus, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(c.FindAllocation(1)->assignments[0].cpu_milli, 4000);
  EXPECT_EQ(c.cpu_free(nA), 0);
  EXPECT_EQ(c.memory_free(nA), 0);
  EXPECT_EQ(Free(c, nA), (std::vector<int32_t>{0, 0, 0, 0}));
  // Held: GPU 2's 700 and GPU 3's 1000.
  EXPECT_EQ(c.cordon_gpu_milli(nA), 1700);
  EXPECT_EQ(c.cordoned_gpu_milli(), 1700);
  EXPECT_EQ(c.total_gpu_milli_free(), 12000);
  EXPECT_EQ(c.total_gpu_milli_allocated(), 4000);
  EXPECT_DOUBLE_EQ(c.gpus_in_use(), 2.3);  // jobs' 2300, not the hold
  ExpectAggregates(c, {{S, 12, 2, 8}, {L1, 4, 1, 4}, {hA, 0, 0, 0}}, "cordoned with jobs");

  // Job 1 ends: its capacity goes into the hold, the node stays at 0 free.
  const uint64_t v = c.version(nA);
  ASSERT_TRUE(c.Unbind(1).has_value());
  EXPECT_FALSE(c.HasAllocation(1));
  EXPECT_GT(c.version(nA), v);
  EXPECT_EQ(c.cpu_free(nA), 0);
  EXPECT_EQ(c.memory_free(nA), 0);
  EXPECT_EQ(Free(c, nA), (std::vector<int32_t>{0, 0, 0, 0}));
  EXPECT_EQ(c.free_whole_gpus(nA), 0);
  EXPECT_EQ(c.gpu_milli_free(nA), 0);
  EXPECT_EQ(c.cordon_gpu_milli(nA), 3700);
  EXPECT_EQ(c.cordoned_gpu_milli(), 3700);
  EXPECT_EQ(c.total_gpu_milli_free(), 12000);
  EXPECT_DOUBLE_EQ(c.gpus_in_use(), 0.3);
  ExpectAggregates(c, {{S, 12, 2, 8}, {L1, 4, 1, 4}, {hA, 0, 0, 0}, {3, 0, -1, -1}}, "job 1 released into the hold");
  EXPECT_EQ(Hist(c, L1), (H{{0, 1}, {4, 1}}));

  // Uncordon with job 2 still running: exactly the hold comes back.
  ASSERT_TRUE(c.Uncordon(nA).has_value());
  EXPECT_EQ(c.cpu_free(nA), 31000);
  EXPECT_EQ(c.memory_free(nA), 1 << 19);
  EXPECT_EQ(Free(c, nA), (std::vector<int32_t>{1000, 1000, 700, 1000}));
  EXPECT_EQ(c.free_whole_gpus(nA), 3);
  EXPECT_EQ(c.gpu_milli_free(nA), 3700);
  EXPECT_EQ(c.total_gpu_milli_free(), 15700);
  EXPECT_EQ(c.cordoned_gpu_milli(), 0);
  EXPECT_DOUBLE_EQ(c.gpus_in_use(), 0.3);
  ExpectAggregates(c, {{S, 15, 2, 8}, {L1, 7, 1, 4}, {hA, 3, 0, 3}}, "uncordoned, job 2 runs");
  EXPECT_EQ(Hist(c, L1), (H{{3, 1}, {4, 1}}));
  ASSERT_TRUE(c.Bind(3, Whole(nA, {0, 1, 3}, 31000)).has_value());
  ASSERT_TRUE(c.Unbind(2).has_value());
  ASSERT_TRUE(c.Unbind(3).has_value());
  ExpectAggregates(c, kAllFree, "all free");
}

TEST(ClusterCordon, ErrorsChangeNothing) {
  ClusterState c = Cluster();
  auto bad = c.Cordon(4);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(bad.error().message, "cordon: node #4 does not exist (the cluster has 4 nodes)");
  EXPECT_EQ(c.Cordon(-1).error().code, ErrorCode::kInvalidArgument);
  auto bad_un = c.Uncordon(7);
  ASSERT_FALSE(bad_un.has_value());
  EXPECT_EQ(bad_un.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(bad_un.error().message, "uncordon: node #7 does not exist (the cluster has 4 nodes)");
  EXPECT_EQ(c.Uncordon(-1).error().code, ErrorCode::kInvalidArgument);

  auto not_cordoned = c.Uncordon(nA);
  ASSERT_FALSE(not_cordoned.has_value());
  EXPECT_EQ(not_cordoned.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_EQ(not_cordoned.error().message, "node 'hA' is not cordoned");
  EXPECT_EQ(c.free_whole_gpus(nA), 4);
  EXPECT_EQ(c.version(nA), 0u);

  ASSERT_TRUE(c.Cordon(nA).has_value());
  auto twice = c.Cordon(nA);
  ASSERT_FALSE(twice.has_value());
  EXPECT_EQ(twice.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_EQ(twice.error().message, "node 'hA' is already cordoned");
  EXPECT_EQ(c.num_cordoned(), 1);
  EXPECT_EQ(c.cordoned_gpu_milli(), 4000);
  EXPECT_EQ(c.version(nA), 1u);
  ASSERT_TRUE(c.Uncordon(nA).has_value());
  EXPECT_EQ(c.Uncordon(nA).error().code, ErrorCode::kFailedPrecondition);
  EXPECT_EQ(c.free_whole_gpus(nA), 4);
  ExpectAggregates(c, kAllFree, "after errors");
}

TEST(ClusterCordon, ACopyCarriesTheCordonAndGoesItsOwnWay) {
  ClusterState c = Cluster();
  ASSERT_TRUE(c.Bind(1, Whole(nA, {0}, 2000)).has_value());
  ASSERT_TRUE(c.Cordon(nA).has_value());
  ClusterState copy = c;
  EXPECT_NE(copy.instance_id(), c.instance_id());
  EXPECT_TRUE(copy.cordoned(nA));
  EXPECT_EQ(copy.num_cordoned(), 1);
  EXPECT_EQ(copy.cordoned_gpu_milli(), 3000);
  EXPECT_EQ(copy.cordon_gpu_milli(nA), 3000);
  EXPECT_EQ(copy.cpu_free(nA), 0);
  EXPECT_FALSE(copy.CanBind(Whole(nA, {1})).has_value());
  EXPECT_TRUE(copy.CheckInvariants().has_value()) << copy.CheckInvariants().error().message;
  // The copy's release goes into the copy's hold; the original is untouched.
  ASSERT_TRUE(copy.Unbind(1).has_value());
  EXPECT_EQ(copy.cordoned_gpu_milli(), 4000);
  EXPECT_EQ(copy.cpu_free(nA), 0);
  EXPECT_EQ(c.cordoned_gpu_milli(), 3000);
  EXPECT_TRUE(c.HasAllocation(1));
  ASSERT_TRUE(copy.Uncordon(nA).has_value());
  EXPECT_EQ(copy.free_whole_gpus(nA), 4);
  EXPECT_EQ(copy.cpu_free(nA), 32000);
  EXPECT_TRUE(c.cordoned(nA));
  EXPECT_EQ(c.free_whole_gpus(nA), 0);
  EXPECT_TRUE(copy.CheckInvariants().has_value()) << copy.CheckInvariants().error().message;
  EXPECT_TRUE(c.CheckInvariants().has_value()) << c.CheckInvariants().error().message;
}

// No topology; gpus_in_use counts what jobs hold, never the hold.
TEST(ClusterCordon, GpusInUseIgnoresTheHold) {
  auto built = ClusterState::Build({{"a", 8000, 16384, 2, "T4"}, {"b", 8000, 16384, 2, "T4"}});
  ASSERT_TRUE(built.has_value());
  ClusterState c = std::move(*built);
  ASSERT_TRUE(c.Bind(1, Placement{{{0, 1000, 0, {0, 1}, {1000, 500}}}}).has_value());
  EXPECT_DOUBLE_EQ(c.gpus_in_use(), 1.5);
  ASSERT_TRUE(c.Cordon(0).has_value());
  ASSERT_TRUE(c.Cordon(1).has_value());
  EXPECT_EQ(c.total_gpu_milli_allocated(), 4000);  // nothing is free for scheduling
  EXPECT_EQ(c.cordoned_gpu_milli(), 2500);
  EXPECT_DOUBLE_EQ(c.gpus_in_use(), 1.5);
  ASSERT_TRUE(c.Unbind(1).has_value());
  EXPECT_EQ(c.total_gpu_milli_allocated(), 4000);
  EXPECT_DOUBLE_EQ(c.gpus_in_use(), 0.0);
  EXPECT_TRUE(c.CheckInvariants().has_value()) << c.CheckInvariants().error().message;
}

// MIG: a cordoned node's MIG devices give no instance to a new job — not a
// new one, not an idle existing one — and none of its GPUs enters MIG mode;
// a device leaving MIG mode goes into the hold.
TEST(ClusterCordon, MigDevicesOnACordonedNodeTakeNoNewInstances) {
  auto built = ClusterState::Build({{"h0", 64000, 1 << 20, 2, "H100"}, {"h1", 64000, 1 << 20, 2, "H100"}});
  ASSERT_TRUE(built.has_value());
  ClusterState c = std::move(*built);
  const mig::Geometry& g = *mig::FindGeometry("H100");
  auto mig_job = [&](NodeId n, int32_t gpu, const char* profile, int32_t start, int64_t cpu) {
    NodeAssignment a;
    a.node = n;
    a.cpu_milli = cpu;
    a.mig = {{gpu, g.FindProfile(profile), start}};
    return Placement{{a}};
  };
  ASSERT_TRUE(c.Bind(1, mig_job(0, 0, "3g.40gb", 0, 1000)).has_value());
  ASSERT_TRUE(c.Cordon(0).has_value());
  // GPU 0 is in MIG mode (0 free milli already); GPU 1's 1000 are held.
  EXPECT_EQ(c.cordon_gpu_milli(0), 1000);
  EXPECT_EQ(c.cordoned_gpu_milli(), 1000);
  EXPECT_EQ(Free(c, 0), (std::vector<int32_t>{0, 0}));
  EXPECT_EQ(c.cpu_free(0), 0);
  EXPECT_DOUBLE_EQ(c.gpus_in_use(), 3.0 / 7.0);
  EXPECT_TRUE(c.CheckInvariants().has_value()) << c.CheckInvariants().error().message;

  const std::string why = "node 'h0' is cordoned (drained); it takes no new work until it is uncordoned";
  auto created = c.Bind(2, mig_job(0, 0, "2g.20gb", 4, 0));
  ASSERT_FALSE(created.has_value());
  EXPECT_EQ(created.error().code, ErrorCode::kUnschedulable);
  EXPECT_EQ(created.error().message, why);
  auto other = c.Bind(2, mig_job(0, 1, "1g.10gb", 0, 0));
  ASSERT_FALSE(other.has_value());
  EXPECT_EQ(other.error().message, why);
  EXPECT_EQ(c.mig_gpus(), 1);
  EXPECT_EQ(c.mig_idle_compute(), 4);

  // Job 1 ends: its instance stays in the layout, idle — and not for a new job.
  ASSERT_TRUE(c.Unbind(1).has_value());
  EXPECT_EQ(c.mig_idle_compute(), 7);
  EXPECT_EQ(mig::FormatLayout(g, c.mig_device(0, 0)->layout), "3g.40gb@0");
  EXPECT_DOUBLE_EQ(c.gpus_in_use(), 0.0);
  EXPECT_EQ(c.cpu_free(0), 0);
  EXPECT_TRUE(c.CheckInvariants().has_value()) << c.CheckInvariants().error().message;
  auto idle = c.Bind(3, mig_job(0, 0, "3g.40gb", 0, 0));
  ASSERT_FALSE(idle.has_value());
  EXPECT_EQ(idle.error().message, why);
  EXPECT_EQ(c.mig_device(0, 0)->owner, std::vector<JobId>{MigDevice::kNoOwner});
  // The other node's MIG devices work as ever.
  ASSERT_TRUE(c.Bind(4, mig_job(1, 0, "3g.40gb", 0, 1000)).has_value());

  auto enter = c.SetMigLayout(0, 1, {});
  ASSERT_FALSE(enter.has_value());
  EXPECT_EQ(enter.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_EQ(enter.error().message,
            "node 'h0' GPU 1: node 'h0' is cordoned (drained); its GPUs do not enter MIG mode until it is uncordoned");
  EXPECT_EQ(c.mig_device(0, 1), nullptr);

  // Leaving MIG mode: the device's 1000 milli go into the hold, not the pool.
  ASSERT_TRUE(c.DisableMig(0, 0).has_value());
  EXPECT_EQ(c.cordon_gpu_milli(0), 2000);
  EXPECT_EQ(c.cordoned_gpu_milli(), 2000);
  EXPECT_EQ(Free(c, 0), (std::vector<int32_t>{0, 0}));
  EXPECT_EQ(c.free_whole_gpus(0), 0);
  EXPECT_EQ(c.total_gpu_milli_free(), 1000);  // h1's GPU 1
  EXPECT_TRUE(c.CheckInvariants().has_value()) << c.CheckInvariants().error().message;

  ASSERT_TRUE(c.Uncordon(0).has_value());
  EXPECT_EQ(Free(c, 0), (std::vector<int32_t>{1000, 1000}));
  EXPECT_EQ(c.free_whole_gpus(0), 2);
  EXPECT_EQ(c.cpu_free(0), 64000);
  EXPECT_EQ(c.total_gpu_milli_free(), 3000);
  ASSERT_TRUE(c.Bind(5, mig_job(0, 1, "1g.10gb", 0, 0)).has_value());
  EXPECT_TRUE(c.CheckInvariants().has_value()) << c.CheckInvariants().error().message;
}

// Any sequence of binds, unbinds, cordons and uncordons keeps every
// aggregate equal to CheckInvariants' recount (the hold included), keeps a
// cordoned node at 0 free, never lets a bind through on one; uncordoning all
// and unbinding all gives back the cluster as it was.
RC_GTEST_PROP(ClusterCordonProperty, HoldsNeverLeakAndAllComesBack, ()) {
  ClusterState c = Cluster();
  std::vector<JobId> live;
  JobId next = 1;
  const int steps = *rc::gen::inRange(1, 150);
  for (int step = 0; step < steps; ++step) {
    const int what = *rc::gen::inRange(0, 6);
    const NodeId node = *rc::gen::inRange(0, c.num_nodes());
    if (what == 0) {
      const bool was = c.cordoned(node);
      RC_ASSERT(c.Cordon(node).has_value() == !was);
      RC_ASSERT(c.cordoned(node));
    } else if (what == 1) {
      const bool was = c.cordoned(node);
      RC_ASSERT(c.Uncordon(node).has_value() == was);
      RC_ASSERT(!c.cordoned(node));
    } else if (what == 2 && !live.empty()) {
      const size_t k = static_cast<size_t>(*rc::gen::inRange<int>(0, static_cast<int>(live.size())));
      RC_ASSERT(c.Unbind(live[k]).has_value());
      live.erase(live.begin() + static_cast<long>(k));
    } else {
      NodeAssignment a{node, *rc::gen::inRange<int64_t>(0, 20000), *rc::gen::inRange<int64_t>(0, 1 << 18), {}, {}};
      const int ngpu = c.gpu_count(node) == 0 ? 0 : *rc::gen::inRange(0, 3);
      for (int i = 0; i < ngpu; ++i) {
        a.gpus.push_back(*rc::gen::inRange(0, c.gpu_count(node)));
        a.gpu_milli.push_back(*rc::gen::inRange(1, 1001));
      }
      const bool ok = c.Bind(next, Placement{{a}}).has_value();
      if (c.cordoned(node)) RC_ASSERT(!ok);
      if (ok) live.push_back(next);
      ++next;
    }
    auto inv = c.CheckInvariants();
    RC_ASSERT(inv.has_value());
    int64_t held = 0;
    for (NodeId n = 0; n < c.num_nodes(); ++n) {
      held += c.cordon_gpu_milli(n);
      if (!c.cordoned(n)) continue;
      RC_ASSERT(c.cpu_free(n) == 0);
      RC_ASSERT(c.memory_free(n) == 0);
      RC_ASSERT(c.gpu_milli_free(n) == 0);
    }
    RC_ASSERT(held == c.cordoned_gpu_milli());
  }
  for (NodeId n = 0; n < c.num_nodes(); ++n)
    if (c.cordoned(n)) RC_ASSERT(c.Uncordon(n).has_value());
  for (JobId j : live) RC_ASSERT(c.Unbind(j).has_value());
  RC_ASSERT(c.num_cordoned() == 0);
  RC_ASSERT(c.cordoned_gpu_milli() == 0);
  RC_ASSERT(c.total_gpu_milli_free() == 16000);
  for (NodeId n = 0; n < c.num_nodes(); ++n) {
    RC_ASSERT(c.cpu_free(n) == c.cpu_capacity(n));
    RC_ASSERT(c.memory_free(n) == c.memory_capacity(n));
    RC_ASSERT(c.free_whole_gpus(n) == c.gpu_count(n));
  }
  for (const Want& w : kAllFree) {
    RC_ASSERT(c.domain_free_gpus(w.d) == w.gpus);
    if (w.hosts >= 0) RC_ASSERT(c.domain_free_hosts(w.d) == w.hosts);
    if (w.max >= 0) RC_ASSERT(c.domain_max_host_free(w.d) == w.max);
  }
  RC_ASSERT(Hist(c, S) == (H{{0, 1}, {4, 2}, {8, 1}}));
  RC_ASSERT(c.CheckInvariants().has_value());
}

}  // namespace
}  // namespace tidal

// ClusterState with a topology attached: AttachTopology's checks, the exact
// per-domain aggregates (free whole GPUs, fully free hosts, the largest free
// count on one host, the free-count histogram, the GPU model) after specific
// binds and unbinds, and a property: on random topologies, any sequence of
// binds and unbinds keeps every aggregate equal to CheckInvariants' recount
// and to this file's own recount.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <array>
#include <functional>
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
using ::testing::HasSubstr;

topo::HostLayout Gpus(int n) {
  topo::HostLayout L;
  L.gpus = n;
  return L;
}

std::shared_ptr<const topo::Topology> Share(topo::TopologyBuilder&& b) {
  auto t = std::move(b).Build();
  EXPECT_TRUE(t.has_value()) << t.error().message;
  return std::make_shared<const topo::Topology>(t ? std::move(*t) : topo::Topology{});
}

ClusterState Nodes(const std::vector<NodeSpec>& specs) {
  auto s = ClusterState::Build(specs);
  EXPECT_TRUE(s.has_value()) << s.error().message;
  return std::move(*s);
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
  return Share(std::move(b));
}

// Node ids differ from host indices on purpose.
ClusterState TreeNodes() {
  return Nodes({{"hC", 64000, 1 << 20, 8, "A100"}, {"hA", 32000, 1 << 19, 4, "H100"}, {"hD", 16000, 1 << 16, 0, ""},
                {"hB", 32000, 1 << 19, 4, "H100"}});
}

constexpr DomainId S = 0, L1 = 1, hA = 2, hB = 7, L2 = 12, hC = 13, p0 = 14, p1 = 19, hD = 24;
constexpr NodeId nC = 0, nA = 1, nD = 2, nB = 3;

Placement Whole(NodeId n, std::vector<int32_t> gpus) {
  NodeAssignment a{n, 0, 0, gpus, std::vector<int32_t>(gpus.size(), kMilliPerGpu)};
  return Placement{{a}};
}
Placement Milli(NodeId n, int32_t gpu, int32_t milli) { return Placement{{{n, 0, 0, {gpu}, {milli}}}}; }

using testing::ExpectAggregates;
using testing::Want;

// The non-zero histogram buckets of d as {k, count} pairs.
std::vector<std::pair<int, int>> Hist(const ClusterState& c, DomainId d) {
  std::vector<std::pair<int, int>> out;
  for (int k = 0; k < ClusterState::kFreeHistogram; ++k)
    if (c.domain_hosts_with_free(d, k) != 0) out.push_back({k, c.domain_hosts_with_free(d, k)});
  return out;
}
using H = std::vector<std::pair<int, int>>;

TEST(ClusterTopologyTest, AttachChecksNamesBothWays) {
  topo::TopologyBuilder b("t.yaml");
  const DomainId l = b.AddDomain(Level::kLeaf, "l", topo::kNoDomain);
  for (const char* h : {"a", "b", "d", "e"}) b.AddHost(h, l, Gpus(2));
  auto t = Share(std::move(b));
  ClusterState c = Nodes({{"a", 1, 1, 2, "T4"}, {"b", 1, 1, 2, "T4"}, {"c", 1, 1, 0, ""}});
  auto r = c.AttachTopology(t);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(r.error().message,
            "t.yaml: the topology's hosts and the node list differ; 1 node(s) not in the topology: c; 2 topology host(s) not in "
            "the node list: d, e; node names must match exactly");
  EXPECT_FALSE(c.has_topology());
  EXPECT_EQ(c.AttachTopology(nullptr).error().message, "no topology given");

  ClusterState many = Nodes({{"a", 1, 1, 2, "T4"}, {"b", 1, 1, 2, "T4"}, {"d", 1, 1, 2, "T4"}, {"e", 1, 1, 2, "T4"}, {"x1", 1, 1, 0, ""},
                             {"x2", 1, 1, 0, ""}, {"x3", 1, 1, 0, ""}, {"x4", 1, 1, 0, ""}, {"x5", 1, 1, 0, ""}, {"x6", 1, 1, 0, ""},
                             {"x7", 1, 1, 0, ""}});
  EXPECT_EQ(many.AttachTopology(t).error().message,
            "t.yaml: the topology's hosts and the node list differ; 7 node(s) not in the topology: x1, x2, x3, x4, x5 and 2 more; "
            "node names must match exactly");
}

TEST(ClusterTopologyTest, AttachChecksGpuCounts) {
  ClusterState c = Nodes({{"hC", 1, 1, 8, "A100"}, {"hA", 1, 1, 2, "H100"}, {"hD", 1, 1, 0, ""}, {"hB", 1, 1, 4, "H100"}});
  auto r = c.AttachTopology(Tree());
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message, "tree: host 'hA' has 4 GPUs in the topology but 2 in the node list");
  EXPECT_FALSE(c.has_topology());
  ClusterState cpu = Nodes({{"hC", 1, 1, 8, "A100"}, {"hA", 1, 1, 4, "H100"}, {"hD", 1, 1, 1, "T4"}, {"hB", 1, 1, 4, "H100"}});
  EXPECT_EQ(cpu.AttachTopology(Tree()).error().message, "tree: host 'hD' has 0 GPUs in the topology but 1 in the node list");
}

TEST(ClusterTopologyTest, AttachOnlyWhileNothingIsBound) {
  ClusterState c = TreeNodes();
  ASSERT_TRUE(c.Bind(1, Placement{{{nD, 100, 0, {}, {}}}}).has_value());
  auto r = c.AttachTopology(Tree());
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_EQ(r.error().message, "a topology can only be attached to an empty cluster (1 jobs hold capacity)");
  EXPECT_FALSE(c.has_topology());
  ASSERT_TRUE(c.Unbind(1).has_value());
  ASSERT_TRUE(c.AttachTopology(Tree()).has_value());
  EXPECT_TRUE(c.has_topology());
  EXPECT_EQ(c.host_of(nC), 2);
  EXPECT_EQ(c.host_of(nA), 0);
  EXPECT_EQ(c.node_of_host(1), nB);
  EXPECT_EQ(c.node_of_host(3), nD);
  EXPECT_EQ(c.gpu_domain(nC, 5), 21);
  EXPECT_EQ(c.gpu_domain(nB, 0), 8);
}

TEST(ClusterTopologyTest, AggregatesAfterBindsAndUnbinds) {
  ClusterState c = TreeNodes();
  ASSERT_TRUE(c.AttachTopology(Tree()).has_value());
  ExpectAggregates(c, {{S, 16, 3, 8}, {L1, 8, 2, 4}, {L2, 8, 1, 8}, {hA, 4, 1, 4}, {hC, 8, 1, 8}, {hD, 0, 0, 0}, {p0, 4, -1, -1},
                       {p1, 4, -1, -1}, {15, 1, -1, -1}},
                   "attached");
  EXPECT_EQ(Hist(c, S), (H{{0, 1}, {4, 2}, {8, 1}}));
  EXPECT_EQ(Hist(c, L2), (H{{0, 1}, {8, 1}}));
  EXPECT_EQ(Hist(c, hA), (H{{4, 1}}));

  ASSERT_TRUE(c.Bind(1, Whole(nC, {0, 1})).has_value());
  ExpectAggregates(c, {{S, 14, 2, 6}, {L1, 8, 2, 4}, {L2, 6, 0, 6}, {hC, 6, 0, 6}, {p0, 2, -1, -1}, {p1, 4, -1, -1}, {15, 0, -1, -1}},
                   "hC takes 2");
  EXPECT_EQ(Hist(c, S), (H{{0, 1}, {4, 2}, {6, 1}}));
  EXPECT_EQ(Hist(c, L2), (H{{0, 1}, {6, 1}}));

  // A GPU with 500 milli left is not free; the host stops being fully free.
  ASSERT_TRUE(c.Bind(2, Milli(nA, 0, 500)).has_value());
  ExpectAggregates(c, {{S, 13, 1, 6}, {L1, 7, 1, 4}, {hA, 3, 0, 3}, {hB, 4, 1, 4}, {3, 0, -1, -1}}, "hA GPU0 half");
  EXPECT_EQ(Hist(c, L1), (H{{3, 1}, {4, 1}}));
  // Taking the other half changes no whole-GPU count.
  ASSERT_TRUE(c.Bind(3, Milli(nA, 0, 500)).has_value());
  ExpectAggregates(c, {{S, 13, 1, 6}, {L1, 7, 1, 4}, {hA, 3, 0, 3}}, "hA GPU0 full");
  EXPECT_EQ(c.gpu_free(nA)[0], 0);

  // The largest host gets used: the maxima above it fall to the next largest.
  ASSERT_TRUE(c.Bind(4, Whole(nC, {2, 3, 4, 5})).has_value());
  ExpectAggregates(c, {{S, 9, 1, 4}, {L1, 7, 1, 4}, {L2, 2, 0, 2}, {hC, 2, 0, 2}, {p0, 0, -1, -1}, {p1, 2, -1, -1}}, "hC takes 4 more");
  EXPECT_EQ(Hist(c, S), (H{{0, 1}, {2, 1}, {3, 1}, {4, 1}}));
  ASSERT_TRUE(c.Bind(5, Whole(nB, {3})).has_value());
  ExpectAggregates(c, {{S, 8, 0, 3}, {L1, 6, 0, 3}, {hB, 3, 0, 3}}, "hB takes 1");
  EXPECT_EQ(Hist(c, S), (H{{0, 1}, {2, 1}, {3, 2}}));
  EXPECT_EQ(Hist(c, L1), (H{{3, 2}}));

  // ... and rise again as capacity comes back.
  ASSERT_TRUE(c.Unbind(1).has_value());
  ExpectAggregates(c, {{S, 10, 0, 4}, {L2, 4, 0, 4}, {hC, 4, 0, 4}, {p0, 2, -1, -1}}, "hC returns 2");
  ASSERT_TRUE(c.Unbind(4).has_value());
  ExpectAggregates(c, {{S, 14, 1, 8}, {L1, 6, 0, 3}, {L2, 8, 1, 8}, {hC, 8, 1, 8}, {p0, 4, -1, -1}, {p1, 4, -1, -1}}, "hC free");
  EXPECT_EQ(Hist(c, S), (H{{0, 1}, {3, 2}, {8, 1}}));
  ASSERT_TRUE(c.Unbind(2).has_value());  // job 3 still holds the other half
  ExpectAggregates(c, {{S, 14, 1, 8}, {hA, 3, 0, 3}}, "hA half back");
  ASSERT_TRUE(c.Unbind(3).has_value());
  ExpectAggregates(c, {{S, 15, 2, 8}, {L1, 7, 1, 4}, {hA, 4, 1, 4}}, "hA free");
  ASSERT_TRUE(c.Unbind(5).has_value());
  ExpectAggregates(c, {{S, 16, 3, 8}, {L1, 8, 2, 4}, {L2, 8, 1, 8}, {hA, 4, 1, 4}, {hB, 4, 1, 4}, {hC, 8, 1, 8}, {hD, 0, 0, 0}},
                   "all free");
  EXPECT_EQ(Hist(c, S), (H{{0, 1}, {4, 2}, {8, 1}}));

  // A failed bind changes nothing.
  ASSERT_FALSE(c.Bind(6, Placement{{{nC, 0, 0, {0}, {1000}}, {nA, 0, 0, {0, 0}, {600, 600}}}}).has_value());
  ExpectAggregates(c, {{S, 16, 3, 8}, {L2, 8, 1, 8}, {hC, 8, 1, 8}, {hA, 4, 1, 4}}, "failed bind");
}

// A device entering MIG mode leaves the whole-GPU pool, and the topology's
// host aggregates follow (found by mutation testing): hA (4 H100, node nA)
// with GPU 0 in MIG mode has 3 free, is no longer a fully free host, and its
// leaf's largest free count falls from 4 to 3 (hB still has 4).
TEST(ClusterTopologyTest, AggregatesFollowADeviceIntoAndOutOfMigMode) {
  ClusterState c = TreeNodes();
  ASSERT_TRUE(c.AttachTopology(Tree()).has_value());
  const mig::Geometry& g = *mig::FindGeometry("H100");
  mig::Layout layout;
  layout.instances.push_back({g.FindProfile("7g.80gb"), 0});
  ASSERT_TRUE(c.SetMigLayout(nA, 0, layout).has_value());
  ExpectAggregates(c, {{hA, 3, 0, 3}, {hB, 4, 1, 4}, {L1, 7, 1, 4}}, "hA GPU 0 in MIG mode");
  EXPECT_EQ(Hist(c, hA), (H{{3, 1}}));
  ASSERT_TRUE(c.SetMigLayout(nB, 1, layout).has_value());
  ExpectAggregates(c, {{hB, 3, 0, 3}, {L1, 6, 0, 3}, {S, 14, 1, 8}}, "and hB GPU 1");
  ASSERT_TRUE(c.DisableMig(nA, 0).has_value());
  ExpectAggregates(c, {{hA, 4, 1, 4}, {L1, 7, 1, 4}}, "hA back");
}

TEST(ClusterTopologyTest, MaxFallsOnlyAsFarAsTheNextLargestHost) {
  ClusterState c = TreeNodes();
  ASSERT_TRUE(c.AttachTopology(Tree()).has_value());
  // hC from 8 down to 4 one GPU at a time: S follows hC down to hB's 4 and stays.
  for (int32_t g = 0; g < 6; ++g) {
    ASSERT_TRUE(c.Bind(10 + g, Whole(nC, {g})).has_value());
    EXPECT_EQ(c.domain_max_host_free(hC), 7 - g);
    EXPECT_EQ(c.domain_max_host_free(L2), 7 - g);
    EXPECT_EQ(c.domain_max_host_free(S), std::max(4, 7 - g));
    EXPECT_EQ(c.domain_max_host_free(L1), 4);
  }
  for (int32_t g = 5; g >= 0; --g) {
    ASSERT_TRUE(c.Unbind(10 + g).has_value());
    EXPECT_EQ(c.domain_max_host_free(S), std::max(4, 8 - g));
    EXPECT_EQ(c.domain_max_host_free(L2), 8 - g);
  }
  EXPECT_TRUE(c.CheckInvariants().has_value());
}

TEST(ClusterTopologyTest, HistogramLastBucketHoldsSixtyFourAndMore) {
  topo::TopologyBuilder b("big");
  const DomainId l = b.AddDomain(Level::kLeaf, "l", topo::kNoDomain);
  b.AddHost("x128", l, Gpus(128));
  b.AddHost("x64", l, Gpus(64));
  b.AddHost("x70", l, Gpus(70));
  b.AddHost("x2", l, Gpus(2));
  ClusterState c = Nodes({{"x128", 1, 1, 128, "B200"}, {"x64", 1, 1, 64, "B200"}, {"x70", 1, 1, 70, "B200"}, {"x2", 1, 1, 2, "B200"}});
  ASSERT_TRUE(c.AttachTopology(Share(std::move(b))).has_value());
  EXPECT_EQ(Hist(c, 0), (H{{2, 1}, {64, 3}}));
  EXPECT_EQ(c.domain_hosts_with_free(0, 64), 3);
  EXPECT_EQ(c.domain_hosts_with_free(0, 1000), 3);  // any k past the end reads the last bucket
  EXPECT_EQ(c.domain_max_host_free(0), 128);
  std::vector<int32_t> g64(64);
  for (int32_t i = 0; i < 64; ++i) g64[static_cast<size_t>(i)] = i;
  ASSERT_TRUE(c.Bind(1, Whole(0, g64)).has_value());  // 128 -> 64: still the last bucket
  EXPECT_EQ(Hist(c, 0), (H{{2, 1}, {64, 3}}));
  EXPECT_EQ(c.domain_max_host_free(0), 70);
  ASSERT_TRUE(c.Bind(2, Whole(0, {64})).has_value());  // 64 -> 63
  EXPECT_EQ(Hist(c, 0), (H{{2, 1}, {63, 1}, {64, 2}}));
  EXPECT_EQ(Hist(c, c.topology().host(0)), (H{{63, 1}}));
  ASSERT_TRUE(c.Bind(3, Whole(1, {0})).has_value());  // x64: 64 -> 63
  EXPECT_EQ(Hist(c, 0), (H{{2, 1}, {63, 2}, {64, 1}}));
  ASSERT_TRUE(c.Bind(4, Milli(2, 5, 1)).has_value());  // x70: 70 -> 69, still the last bucket
  EXPECT_EQ(Hist(c, 0), (H{{2, 1}, {63, 2}, {64, 1}}));
  EXPECT_EQ(c.domain_max_host_free(0), 69);
  EXPECT_EQ(c.domain_free_hosts(0), 1);
  ASSERT_TRUE(c.Unbind(1).has_value());  // x128: 63 -> 127
  EXPECT_EQ(Hist(c, 0), (H{{2, 1}, {63, 1}, {64, 2}}));
  EXPECT_EQ(c.domain_max_host_free(0), 127);
  EXPECT_TRUE(c.CheckInvariants().has_value());
}

TEST(ClusterTopologyTest, DomainModelsMixUpwards) {
  ClusterState c = TreeNodes();
  ASSERT_TRUE(c.AttachTopology(Tree()).has_value());
  const GpuModelId h100 = c.models().Find("H100"), a100 = c.models().Find("A100");
  ASSERT_NE(h100, kNoGpuModel);
  ASSERT_NE(a100, kNoGpuModel);
  EXPECT_EQ(c.domain_model(hA), h100);
  EXPECT_EQ(c.domain_model(L1), h100);
  EXPECT_EQ(c.domain_model(hD), kNoGpuModel);  // CPU only
  EXPECT_EQ(c.domain_model(L2), a100);        // the CPU-only host does not mix it
  EXPECT_EQ(c.domain_model(hC), a100);
  EXPECT_EQ(c.domain_model(S), kMixedGpuModels);
  // A leaf of CPU-only hosts has no model.
  topo::TopologyBuilder b("cpu");
  const DomainId s = b.AddDomain(Level::kSpine, "s", topo::kNoDomain);
  const DomainId l = b.AddDomain(Level::kLeaf, "l", s);
  b.AddHost("c1", l, Gpus(0));
  b.AddHost("c2", l, Gpus(0));
  const DomainId m = b.AddDomain(Level::kLeaf, "m", s);
  b.AddHost("g1", m, Gpus(1));
  b.AddHost("g2", m, Gpus(1));
  ClusterState d = Nodes({{"c1", 1, 1, 0, ""}, {"c2", 1, 1, 0, ""}, {"g1", 1, 1, 1, "T4"}, {"g2", 1, 1, 1, "T4"}});
  ASSERT_TRUE(d.AttachTopology(Share(std::move(b))).has_value());
  EXPECT_EQ(d.domain_model(1), kNoGpuModel);
  EXPECT_EQ(d.domain_model(4), d.models().Find("T4"));
  EXPECT_EQ(d.domain_model(0), d.models().Find("T4"));
  EXPECT_EQ(d.domain_free_hosts(1), 0);
  EXPECT_EQ(d.domain_free_hosts(0), 2);
  EXPECT_EQ(Hist(d, 1), (H{{0, 2}}));
}


// --- property -------------------------------------------------------------------

// A random tree: 1-2 top domains at a random level, random fan-outs, hosts at
// any depth (mixed depths), hosts of 0..8 GPUs and now and then a 66-GPU one,
// some with interleaved or split pcie groups. Returns the hosts' GPU counts.
std::shared_ptr<const topo::Topology> RandomTopology(std::vector<std::pair<std::string, int>>& hosts) {
  topo::TopologyBuilder b("random");
  int next = 0;
  std::function<void(DomainId, Level, int)> grow = [&](DomainId parent, Level level, int min_kids) {
    const int kids = min_kids == 0 && *rc::gen::inRange(0, 10) == 0 ? 0 : *rc::gen::inRange(std::max(min_kids, 1), 5);  // now and then an empty switch
    for (int k = 0; k < kids && hosts.size() < 24; ++k) {
      const bool host = level == Level::kBlock || *rc::gen::inRange(0, 5) < 2;
      if (!host) {
        const int lo = topo::LevelIndex(Level::kBlock), hi = topo::LevelIndex(level);
        const Level l = topo::kAllLevels[static_cast<size_t>(*rc::gen::inRange(lo, hi))];
        grow(b.AddDomain(l, fmt::format("d{}", next++), parent), l, 0);
        continue;
      }
      const int gpus = *rc::gen::element(0, 1, 2, 3, 4, 8, 8, 66);
      topo::HostLayout L = Gpus(gpus);
      if (gpus >= 2 && gpus % 2 == 0 && *rc::gen::inRange(0, 2) == 0) {
        L.groups = {{Level::kPcie, "a", {}}, {Level::kPcie, "b", {}}};
        const bool interleave = *rc::gen::inRange(0, 2) == 0;
        for (int g = 0; g < gpus; ++g) L.groups[static_cast<size_t>(interleave ? g % 2 : g * 2 / gpus)].gpus.push_back(g);
      }
      const std::string name = fmt::format("h{}", next++);
      b.AddHost(name, parent, L);
      hosts.push_back({name, gpus});
    }
  };
  const Level top = topo::kAllLevels[static_cast<size_t>(*rc::gen::inRange(topo::LevelIndex(Level::kBlock), topo::kNumLevels))];
  const int tops = top == Level::kZone ? 1 : *rc::gen::inRange(1, 3);
  std::vector<DomainId> roots;
  for (int i = 0; i < tops; ++i) {
    roots.push_back(b.AddDomain(top, fmt::format("top{}", i), topo::kNoDomain));
    grow(roots.back(), top, 2);
  }
  if (hosts.empty()) {
    b.AddHost("only", roots.front(), Gpus(4));
    hosts.push_back({"only", 4});
  }
  auto t = std::move(b).Build();
  RC_ASSERT(t.has_value());
  return std::make_shared<const topo::Topology>(std::move(*t));
}

// Every aggregate recounted from the per-device values.
struct Recount {
  std::vector<int32_t> gpus, hosts, max, hist;
  bool operator==(const Recount&) const = default;
};
Recount FromDevices(const ClusterState& c) {
  const topo::Topology& t = c.topology();
  const auto nd = static_cast<size_t>(t.num_domains());
  Recount r{std::vector<int32_t>(nd, 0), std::vector<int32_t>(nd, 0), std::vector<int32_t>(nd, 0),
            std::vector<int32_t>(nd * ClusterState::kFreeHistogram, 0)};
  auto whole = [&](NodeId n) {
    int32_t w = 0;
    for (int32_t f : c.gpu_free(n)) w += f == kMilliPerGpu;
    return w;
  };
  for (DomainId d = 0; d < t.num_domains(); ++d) {
    const auto i = static_cast<size_t>(d);
    for (DomainId x = d; x < t.subtree_end(d); ++x)
      if (t.level(x) == Level::kGpu) r.gpus[i] += c.gpu_free(c.node_of_host(t.host_of(x)))[static_cast<size_t>(t.domain(x).local_index)] == kMilliPerGpu;
    if (topo::LevelIndex(t.level(d)) < topo::LevelIndex(Level::kNode)) continue;
    for (int32_t h = t.first_host(d); h < t.first_host(d) + t.hosts_under(d); ++h) {
      const NodeId n = c.node_of_host(h);
      const int32_t w = whole(n);
      r.hosts[i] += c.gpu_count(n) > 0 && w == c.gpu_count(n);
      r.max[i] = std::max(r.max[i], w);
      ++r.hist[i * ClusterState::kFreeHistogram + static_cast<size_t>(std::min(w, ClusterState::kFreeHistogram - 1))];
    }
  }
  return r;
}
Recount FromState(const ClusterState& c) {
  const topo::Topology& t = c.topology();
  const auto nd = static_cast<size_t>(t.num_domains());
  Recount r{std::vector<int32_t>(nd, 0), std::vector<int32_t>(nd, 0), std::vector<int32_t>(nd, 0),
            std::vector<int32_t>(nd * ClusterState::kFreeHistogram, 0)};
  for (DomainId d = 0; d < t.num_domains(); ++d) {
    const auto i = static_cast<size_t>(d);
    r.gpus[i] = c.domain_free_gpus(d);
    if (topo::LevelIndex(t.level(d)) < topo::LevelIndex(Level::kNode)) continue;
    r.hosts[i] = c.domain_free_hosts(d);
    r.max[i] = c.domain_max_host_free(d);
    for (int32_t k = 0; k < ClusterState::kFreeHistogram; ++k)
      r.hist[i * ClusterState::kFreeHistogram + static_cast<size_t>(k)] = c.domain_hosts_with_free(d, k);
  }
  return r;
}

// A placement on 1-2 random nodes, whole GPUs or fractions, that fits the
// current free capacity (the same device may appear twice).
Placement RandomPlacement(const ClusterState& c) {
  Placement p;
  std::vector<int32_t> free(static_cast<size_t>(c.num_nodes()) * 128, 0);
  const int nodes = *rc::gen::inRange(1, 3);
  for (int a = 0; a < nodes; ++a) {
    const NodeId n = *rc::gen::inRange<NodeId>(0, c.num_nodes());
    NodeAssignment as{n, 0, 0, {}, {}};
    const int32_t count = c.gpu_count(n);
    const bool whole = *rc::gen::inRange(0, 2) == 0;
    const int k = count == 0 ? 0 : *rc::gen::inRange(1, std::min(count, 6) + 1);
    for (int i = 0; i < k; ++i) {
      const int32_t g = *rc::gen::inRange<int32_t>(0, count);
      int32_t& taken = free[static_cast<size_t>(n) * 128 + static_cast<size_t>(g % 128)];
      const int32_t left = c.gpu_free(n)[static_cast<size_t>(g)] - taken;
      const int32_t m = whole ? kMilliPerGpu : (left > 0 ? *rc::gen::inRange<int32_t>(1, left + 1) : 1);
      if (m > left) continue;
      taken += m;
      as.gpus.push_back(g);
      as.gpu_milli.push_back(m);
    }
    p.assignments.push_back(std::move(as));
  }
  return p;
}

RC_GTEST_PROP(ClusterTopologyProperty, AggregatesMatchARecountAfterEveryStep, ()) {
  std::vector<std::pair<std::string, int>> hosts;
  auto topology = RandomTopology(hosts);
  // Nodes in a shuffled order, so node ids and host indices differ.
  for (size_t i = hosts.size(); i > 1; --i) std::swap(hosts[i - 1], hosts[static_cast<size_t>(*rc::gen::inRange<size_t>(0, i))]);
  std::vector<NodeSpec> specs;
  for (const auto& [name, gpus] : hosts) specs.push_back({name, 1000, 1000, gpus, gpus == 0 ? "" : *rc::gen::element<std::string>("A", "B")});
  auto built = ClusterState::Build(specs);
  RC_ASSERT(built.has_value());
  ClusterState c = std::move(*built);
  RC_ASSERT(c.AttachTopology(topology).has_value());
  RC_ASSERT(FromState(c) == FromDevices(c));
  std::vector<JobId> live;
  JobId next = 0;
  const int steps = *rc::gen::inRange(1, 80);
  for (int step = 0; step < steps; ++step) {
    if (!live.empty() && *rc::gen::inRange(0, 3) == 0) {
      const size_t k = static_cast<size_t>(*rc::gen::inRange<int>(0, static_cast<int>(live.size())));
      RC_ASSERT(c.Unbind(live[k]).has_value());
      live.erase(live.begin() + static_cast<long>(k));
    } else {
      RC_ASSERT(c.Bind(next, RandomPlacement(c)).has_value());
      live.push_back(next++);
    }
    const auto check = c.CheckInvariants();
    RC_ASSERT(check.has_value());
    RC_ASSERT(FromState(c) == FromDevices(c));
  }
  while (!live.empty()) {
    RC_ASSERT(c.Unbind(live.back()).has_value());
    live.pop_back();
  }
  RC_ASSERT(c.domain_free_gpus(topology->root()) == static_cast<int32_t>(topology->total_gpus()));
  RC_ASSERT(FromState(c) == FromDevices(c));
}

}  // namespace
}  // namespace tidal

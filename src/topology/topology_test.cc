// The Topology queries on small trees built with TopologyBuilder, checked
// exactly against ids worked out by hand: pre-order numbering (the builder
// renumbers whatever order domains were added in), subtree ranges, hosts and
// GPUs under each domain, GPU local-index order (also when a host's groups
// interleave GPUs), lowest common domains, ancestors by level, NVLink domains,
// rails and the link model of Between, default links and their notes.
// Builder errors and Materialize: builder_test.cc; FabricGraph: fabric_test.cc.
#include "topology/topology.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "topology/builder.h"

namespace tidal::topo {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using Ids = std::vector<DomainId>;

HostLayout Gpus(int n, bool nvlink = false) {
  HostLayout L;
  L.gpus = n;
  L.nvlink = nvlink;
  return L;
}

Topology Build(TopologyBuilder&& b) {
  auto t = std::move(b).Build();
  EXPECT_TRUE(t.has_value()) << t.error().message;
  return t ? std::move(*t) : Topology{};
}

Ids Span(std::span<const DomainId> s) { return {s.begin(), s.end()}; }

// Domains are added out of pre-order; the builder renumbers. Expected ids:
//   0 S (spine)
//   1 L1 (leaf, uplink 2:1)        8 L2 (leaf, uplink 3:1)
//   2 hA (2 GPUs, NVSwitch) 3 4    9 hC (CPU only)
//   5 hB (2 GPUs, uplink 5:1) 6 7  10 hD (4 GPUs) 11 p0 {12 13}  14 p1 {15 16}
Topology Tree() {
  TopologyBuilder b("t1");
  b.AddNote("from the reader");
  const DomainId s = b.AddDomain(Level::kSpine, "S", kNoDomain);
  const DomainId l1 = b.AddDomain(Level::kLeaf, "L1", s);
  const DomainId l2 = b.AddDomain(Level::kLeaf, "L2", s);
  b.mutable_domain(l1).link.oversubscription = 2;
  b.mutable_domain(l2).link.oversubscription = 3;
  b.AddHost("hA", l1, Gpus(2, true));
  b.AddHost("hC", l2, Gpus(0));
  HostLayout hb = Gpus(2);
  hb.link.oversubscription = 5;
  b.AddHost("hB", l1, hb);
  HostLayout hd = Gpus(4);
  hd.groups = {{Level::kPcie, "p1", {3, 2}}, {Level::kPcie, "p0", {0, 1}}};
  b.AddHost("hD", l2, hd);
  return Build(std::move(b));
}

TEST(TopologyTest, PreOrderIdsSubtreesAndChildren) {
  const Topology t = Tree();
  ASSERT_EQ(t.num_domains(), 17);
  const std::vector<std::string> names = {"S",     "L1",    "hA",    "hA/gpu0", "hA/gpu1", "hB",    "hB/gpu0", "hB/gpu1", "L2",
                                          "hC",    "hD",    "hD/p0", "hD/gpu0", "hD/gpu1", "hD/p1", "hD/gpu2", "hD/gpu3"};
  for (DomainId d = 0; d < t.num_domains(); ++d) EXPECT_EQ(t.DomainName(d), names[static_cast<size_t>(d)]) << d;
  const Ids parents = {kNoDomain, 0, 1, 2, 2, 1, 5, 5, 0, 8, 8, 10, 11, 11, 10, 14, 14};
  const Ids ends = {17, 8, 5, 4, 5, 8, 7, 8, 17, 10, 17, 14, 13, 14, 17, 16, 17};
  const std::vector<int> depths = {0, 1, 2, 3, 3, 2, 3, 3, 1, 2, 2, 3, 4, 4, 3, 4, 4};
  for (DomainId d = 0; d < t.num_domains(); ++d) {
    EXPECT_EQ(t.parent(d), parents[static_cast<size_t>(d)]) << d;
    EXPECT_EQ(t.domain(d).parent, parents[static_cast<size_t>(d)]) << d;
    EXPECT_EQ(t.subtree_end(d), ends[static_cast<size_t>(d)]) << d;
    EXPECT_EQ(t.depth(d), depths[static_cast<size_t>(d)]) << d;
  }
  EXPECT_EQ(t.root(), 0);
  EXPECT_EQ(Span(t.children(0)), (Ids{1, 8}));
  EXPECT_EQ(Span(t.children(1)), (Ids{2, 5}));
  EXPECT_EQ(Span(t.children(8)), (Ids{9, 10}));
  EXPECT_EQ(Span(t.children(10)), (Ids{11, 14}));
  EXPECT_EQ(Span(t.children(14)), (Ids{15, 16}));
  EXPECT_TRUE(t.children(9).empty());
  EXPECT_TRUE(t.children(3).empty());
  EXPECT_TRUE(t.children(16).empty());
  EXPECT_EQ(t.level(0), Level::kSpine);
  EXPECT_EQ(t.level(8), Level::kLeaf);
  EXPECT_EQ(t.level(10), Level::kNode);
  EXPECT_EQ(t.level(11), Level::kPcie);
  EXPECT_EQ(t.level(12), Level::kGpu);
  EXPECT_EQ(t.source(), "t1");
}

TEST(TopologyTest, ContainsIsTheHalfOpenSubtreeRange) {
  const Topology t = Tree();
  EXPECT_TRUE(t.Contains(1, 1));
  EXPECT_TRUE(t.Contains(1, 2));
  EXPECT_TRUE(t.Contains(1, 7));
  EXPECT_FALSE(t.Contains(1, 8));  // the first id past L1's subtree
  EXPECT_FALSE(t.Contains(1, 0));  // an ancestor is not inside
  EXPECT_FALSE(t.Contains(2, 1));
  EXPECT_TRUE(t.Contains(0, 16));
  EXPECT_TRUE(t.Contains(14, 16));
  EXPECT_FALSE(t.Contains(11, 14));
  EXPECT_FALSE(t.Contains(12, 13));  // siblings
  EXPECT_TRUE(t.Contains(16, 16));
  EXPECT_FALSE(t.Contains(9, 10));  // a CPU-only host holds only itself
}

TEST(TopologyTest, HostsAndTotalsUnderEachDomain) {
  const Topology t = Tree();
  ASSERT_EQ(t.num_hosts(), 4);
  EXPECT_EQ(Span(t.hosts()), (Ids{2, 5, 9, 10}));
  for (int32_t h = 0; h < 4; ++h) EXPECT_EQ(t.host_index(t.host(h)), h);
  EXPECT_EQ(t.host_index(0), -1);
  EXPECT_EQ(t.host_index(12), -1);
  EXPECT_EQ(t.FindHost("hD"), 3);
  EXPECT_EQ(t.FindHost("hA"), 0);
  EXPECT_EQ(t.FindHost("L1"), std::nullopt);
  EXPECT_EQ(t.FindHost("hD/gpu0"), std::nullopt);
  EXPECT_EQ(t.FindHost("hd"), std::nullopt);
  const std::vector<int32_t> first = {0, 0, 0, 1, 1, 1, 2, 2, 2, 2, 3, 4, 4, 4, 4, 4, 4};
  const std::vector<int32_t> hosts = {4, 2, 1, 0, 0, 1, 0, 0, 2, 1, 1, 0, 0, 0, 0, 0, 0};
  const std::vector<int32_t> gpus = {8, 4, 2, 1, 1, 2, 1, 1, 4, 0, 4, 2, 1, 1, 2, 1, 1};
  const std::vector<int32_t> host_of = {-1, -1, 0, 0, 0, 1, 1, 1, -1, 2, 3, 3, 3, 3, 3, 3, 3};
  for (DomainId d = 0; d < t.num_domains(); ++d) {
    const auto i = static_cast<size_t>(d);
    if (hosts[i] > 0) {
      EXPECT_EQ(t.first_host(d), first[i]) << d;
    }
    EXPECT_EQ(t.hosts_under(d), hosts[i]) << d;
    EXPECT_EQ(t.gpus_under(d), gpus[i]) << d;
    EXPECT_EQ(t.host_of(d), host_of[i]) << d;
  }
  EXPECT_EQ(t.total_gpus(), 8);
  EXPECT_EQ(t.host_gpus(0), 2);
  EXPECT_EQ(t.host_gpus(2), 0);
  EXPECT_EQ(t.host_gpus(3), 4);
  EXPECT_EQ(t.host_gpu(0, 1), 4);
  EXPECT_EQ(t.host_gpu(1, 0), 6);
  EXPECT_EQ(t.host_gpu(3, 0), 12);
  EXPECT_EQ(t.host_gpu(3, 3), 16);
  for (int32_t h = 0; h < 4; ++h)
    for (int32_t g = 0; g < t.host_gpus(h); ++g) {
      EXPECT_EQ(t.domain(t.host_gpu(h, g)).local_index, g);
      EXPECT_EQ(t.host_of(t.host_gpu(h, g)), h);
    }
  EXPECT_TRUE(t.gpus_known());
  EXPECT_EQ(t.layout(1).link.oversubscription, 5);
  EXPECT_TRUE(t.layout(0).nvlink);
  EXPECT_EQ(t.layout(3).groups.size(), 2u);
}

TEST(TopologyTest, LevelsAndDomainsAtEachLevel) {
  const Topology t = Tree();
  EXPECT_THAT(t.levels(), ElementsAre(Level::kGpu, Level::kPcie, Level::kNode, Level::kLeaf, Level::kSpine));
  EXPECT_EQ(Span(t.domains_at(Level::kGpu)), (Ids{3, 4, 6, 7, 12, 13, 15, 16}));
  EXPECT_EQ(Span(t.domains_at(Level::kPcie)), (Ids{11, 14}));
  EXPECT_EQ(Span(t.domains_at(Level::kNode)), (Ids{2, 5, 9, 10}));
  EXPECT_EQ(Span(t.domains_at(Level::kLeaf)), (Ids{1, 8}));
  EXPECT_EQ(Span(t.domains_at(Level::kSpine)), (Ids{0}));
  EXPECT_TRUE(t.domains_at(Level::kNvlink).empty());
  EXPECT_TRUE(t.domains_at(Level::kBlock).empty());
  EXPECT_TRUE(t.domains_at(Level::kZone).empty());
}

TEST(TopologyTest, LowestCommonDomainOfPairsAndSets) {
  const Topology t = Tree();
  EXPECT_EQ(t.LowestCommonDomain(3, 4), 2);
  EXPECT_EQ(t.LowestCommonDomain(4, 3), 2);
  EXPECT_EQ(t.LowestCommonDomain(3, 6), 1);
  EXPECT_EQ(t.LowestCommonDomain(7, 8), 0);  // last of L1 and L2 itself
  EXPECT_EQ(t.LowestCommonDomain(4, 5), 1);  // last GPU of hA and the next host
  EXPECT_EQ(t.LowestCommonDomain(3, 15), 0);
  EXPECT_EQ(t.LowestCommonDomain(12, 13), 11);
  EXPECT_EQ(t.LowestCommonDomain(13, 14), 10);
  EXPECT_EQ(t.LowestCommonDomain(15, 12), 10);
  EXPECT_EQ(t.LowestCommonDomain(9, 16), 8);
  EXPECT_EQ(t.LowestCommonDomain(2, 3), 2);  // ancestor and descendant
  EXPECT_EQ(t.LowestCommonDomain(16, 10), 10);
  EXPECT_EQ(t.LowestCommonDomain(7, 7), 7);
  EXPECT_EQ(t.LowestCommonDomain(0, 16), 0);
  const Ids a = {3, 6, 4}, b = {12, 13}, c = {13, 6, 15}, d = {15}, e = {16, 15, 12}, f = {9, 12};
  EXPECT_EQ(t.LowestCommonDomain(a), 1);
  EXPECT_EQ(t.LowestCommonDomain(b), 11);
  EXPECT_EQ(t.LowestCommonDomain(c), 0);
  EXPECT_EQ(t.LowestCommonDomain(d), 15);
  EXPECT_EQ(t.LowestCommonDomain(e), 10);
  EXPECT_EQ(t.LowestCommonDomain(f), 8);
  EXPECT_EQ(t.LowestCommonDomain(std::span<const DomainId>{}), kNoDomain);
}

TEST(TopologyTest, AncestorAtALevel) {
  const Topology t = Tree();
  EXPECT_EQ(t.AncestorAt(12, Level::kGpu), 12);
  EXPECT_EQ(t.AncestorAt(12, Level::kPcie), 11);
  EXPECT_EQ(t.AncestorAt(12, Level::kNode), 10);
  EXPECT_EQ(t.AncestorAt(12, Level::kLeaf), 8);
  EXPECT_EQ(t.AncestorAt(12, Level::kSpine), 0);
  EXPECT_EQ(t.AncestorAt(12, Level::kNvlink), kNoDomain);
  EXPECT_EQ(t.AncestorAt(12, Level::kBlock), kNoDomain);
  EXPECT_EQ(t.AncestorAt(12, Level::kZone), kNoDomain);
  EXPECT_EQ(t.AncestorAt(3, Level::kPcie), kNoDomain);  // hA has no groups
  EXPECT_EQ(t.AncestorAt(3, Level::kNode), 2);
  EXPECT_EQ(t.AncestorAt(8, Level::kNode), kNoDomain);  // below the domain itself
  EXPECT_EQ(t.AncestorAt(8, Level::kLeaf), 8);
  EXPECT_EQ(t.AncestorAt(0, Level::kSpine), 0);
}

TEST(TopologyTest, DefaultLinksAndTheNotesThatSayWhere) {
  EXPECT_EQ(DefaultLink(Level::kGpu, false), (LinkSpec{0, 0, 0, 1}));
  EXPECT_EQ(DefaultLink(Level::kNvlink, false), (LinkSpec{450, 3.0, 1, 1}));
  EXPECT_EQ(DefaultLink(Level::kPcie, false), (LinkSpec{25, 2.0, 1, 1}));
  EXPECT_EQ(DefaultLink(Level::kNode, false), (LinkSpec{20, 3.0, 1, 1}));
  EXPECT_EQ(DefaultLink(Level::kBlock, false), (LinkSpec{50, 5.0, 1, 1}));
  EXPECT_EQ(DefaultLink(Level::kLeaf, false), (LinkSpec{50, 5.0, 1, 1}));
  EXPECT_EQ(DefaultLink(Level::kSpine, false), (LinkSpec{50, 8.1, 3, 1}));
  EXPECT_EQ(DefaultLink(Level::kCore, false), (LinkSpec{50, 13.5, 5, 1}));
  EXPECT_EQ(DefaultLink(Level::kZone, false), (LinkSpec{25, 50.0, 7, 1}));
  EXPECT_EQ(DefaultLink(Level::kNode, true), (LinkSpec{450, 3.0, 1, 1}));
  EXPECT_EQ(DefaultLink(Level::kPcie, true), (LinkSpec{450, 3.0, 1, 1}));
  EXPECT_EQ(DefaultLink(Level::kBlock, true), (LinkSpec{900, 3.0, 1, 1}));

  const Topology t = Tree();
  // Defaults fill what the input left out; an oversubscription it gave is kept.
  EXPECT_EQ(t.domain(0).link, DefaultLink(Level::kSpine, false));
  EXPECT_EQ(t.domain(1).link, (LinkSpec{50, 5.0, 1, 2}));
  EXPECT_EQ(t.domain(8).link, (LinkSpec{50, 5.0, 1, 3}));
  EXPECT_EQ(t.domain(2).link, (LinkSpec{450, 3.0, 1, 1}));
  EXPECT_EQ(t.domain(5).link, (LinkSpec{20, 3.0, 1, 5}));
  EXPECT_EQ(t.domain(11).link, DefaultLink(Level::kPcie, false));
  EXPECT_EQ(t.domain(12).link, LinkSpec{});
  EXPECT_THAT(t.notes(), ElementsAre("from the reader",
                                     "node links: the input gives no bandwidth; using tidal's default 20 GB/s per GPU",
                                     "node (NVLink) links: the input gives no bandwidth; using tidal's default 450 GB/s per GPU",
                                     "leaf links: the input gives no bandwidth; using tidal's default 50 GB/s per GPU",
                                     "spine links: the input gives no bandwidth; using tidal's default 50 GB/s per GPU"));

  // Given links are kept as they are (no note); partial ones keep what was given.
  TopologyBuilder b("t2");
  const DomainId l = b.AddDomain(Level::kLeaf, "l", kNoDomain);
  b.mutable_domain(l).link = {100, 2.5, 2, 1.5};
  HostLayout h = Gpus(1);
  h.link = {0, 7.5, 4, 1};
  b.AddHost("h", l, h);
  const Topology u = Build(std::move(b));
  EXPECT_EQ(u.domain(0).link, (LinkSpec{100, 2.5, 2, 1.5}));
  EXPECT_EQ(u.domain(1).link, (LinkSpec{20, 7.5, 4, 1}));
  EXPECT_THAT(u.notes(), ElementsAre("node links: the input gives no bandwidth; using tidal's default 20 GB/s per GPU"));
}

TEST(TopologyTest, BetweenDividesByTheWorstUplinkOnEitherPath) {
  const Topology t = Tree();
  auto expect = [&](DomainId a, DomainId b, DomainId common, double gbps, double latency, int hops) {
    for (auto [x, y] : {std::pair{a, b}, std::pair{b, a}}) {
      const PathLink p = t.Between(x, y);
      EXPECT_EQ(p.common, common) << x << "-" << y;
      EXPECT_DOUBLE_EQ(p.gbps, gbps) << x << "-" << y;
      EXPECT_DOUBLE_EQ(p.latency_us, latency) << x << "-" << y;
      EXPECT_EQ(p.hops, hops) << x << "-" << y;
      EXPECT_EQ(t.Hops(x, y), hops);
    }
  };
  expect(3, 4, 2, 450, 3.0, 1);       // NVSwitch inside hA
  expect(6, 7, 5, 20, 3.0, 1);        // hB's own link; its uplink is not on the path
  expect(3, 6, 1, 50.0 / 5, 5.0, 1);  // hB's 5:1 uplink is; L1's own 2:1 is not
  expect(3, 15, 0, 50.0 / 3, 8.1, 3);  // L1 2:1 on one side, L2 3:1 on the other
  expect(6, 16, 0, 50.0 / 5, 8.1, 3);  // hB 5:1 beats L1 2:1 and L2 3:1
  expect(12, 13, 11, 25, 2.0, 1);
  expect(12, 15, 10, 20, 3.0, 1);
  const PathLink same = t.Between(12, 12);
  EXPECT_EQ(same.common, 12);
  EXPECT_EQ(same.gbps, 0);
  EXPECT_EQ(same.latency_us, 0);
  EXPECT_EQ(same.hops, 0);
  EXPECT_DOUBLE_EQ(t.OversubscriptionBelow(3, 0), 2);
  EXPECT_DOUBLE_EQ(t.OversubscriptionBelow(15, 0), 3);
  EXPECT_DOUBLE_EQ(t.OversubscriptionBelow(6, 1), 5);
  EXPECT_DOUBLE_EQ(t.OversubscriptionBelow(6, 5), 1);  // `top` itself is excluded
  EXPECT_DOUBLE_EQ(t.OversubscriptionBelow(1, 1), 1);
  EXPECT_DOUBLE_EQ(t.OversubscriptionBelow(1, kNoDomain), 2);
  EXPECT_EQ(t.Rail(3), -1);
}

// One host whose NUMA nodes interleave GPUs: pre-order follows the groups,
// host_gpu follows the local index.
//   0 nu  1 numa0 {2:g0 3:g2 4:g4 5:g6}  6 numa1 {7:g1 8:g3 9:g5 10:g7}
TEST(TopologyTest, InterleavedGroupsKeepLocalIndexOrder) {
  TopologyBuilder b("one");
  HostLayout L = Gpus(8);
  L.groups = {{Level::kPcie, "numa1", {1, 3, 5, 7}}, {Level::kPcie, "numa0", {0, 2, 4, 6}}};
  b.AddHost("nu", kNoDomain, L);
  const Topology t = Build(std::move(b));
  ASSERT_EQ(t.num_domains(), 11);
  EXPECT_EQ(t.level(0), Level::kNode);  // a one-host topology: the host is the root
  EXPECT_EQ(t.DomainName(1), "nu/numa0");
  EXPECT_EQ(t.DomainName(6), "nu/numa1");
  const Ids expect = {2, 7, 3, 8, 4, 9, 5, 10};
  for (int g = 0; g < 8; ++g) {
    EXPECT_EQ(t.host_gpu(0, g), expect[static_cast<size_t>(g)]) << g;
    EXPECT_EQ(t.DomainName(t.host_gpu(0, g)), "nu/gpu" + std::to_string(g));
    EXPECT_EQ(t.parent(t.host_gpu(0, g)), g % 2 == 0 ? 1 : 6);
  }
  EXPECT_EQ(Span(t.children(1)), (Ids{2, 3, 4, 5}));
  EXPECT_EQ(t.LowestCommonDomain(t.host_gpu(0, 0), t.host_gpu(0, 6)), 1);
  EXPECT_EQ(t.LowestCommonDomain(t.host_gpu(0, 0), t.host_gpu(0, 1)), 0);
  EXPECT_EQ(t.Between(t.host_gpu(0, 1), t.host_gpu(0, 7)).gbps, 25);
  EXPECT_EQ(t.Between(t.host_gpu(0, 6), t.host_gpu(0, 7)).gbps, 20);
  EXPECT_THAT(t.levels(), ElementsAre(Level::kGpu, Level::kPcie, Level::kNode));
  EXPECT_EQ(t.first_host(0), 0);
  EXPECT_EQ(t.hosts_under(0), 1);
}

// Groups given small-first and unsorted nest by size; children sort by their
// smallest GPU; an unnamed group is named after its level and index.
//   0 hx  1 s0 {2 b0 {3:g0 4:g1} 5:g2 6:g3}  7 s1 {8:g4 9:g5 10 b1 {11:g6 12:g7}}  13 p
TEST(TopologyTest, NestedGroupsInPreOrder) {
  TopologyBuilder b("nest");
  HostLayout L = Gpus(9);
  L.groups = {{Level::kNvlink, "b0", {1, 0}, true},
              {Level::kPcie, "s1", {7, 6, 5, 4}},
              {Level::kPcie, "s0", {3, 2, 1, 0}},
              {Level::kNvlink, "b1", {6, 7}, true},
              {Level::kPcie, "", {8}}};
  b.AddHost("hx", kNoDomain, L);
  const Topology t = Build(std::move(b));
  ASSERT_EQ(t.num_domains(), 15);
  EXPECT_EQ(Span(t.children(0)), (Ids{1, 7, 13}));
  EXPECT_EQ(Span(t.children(1)), (Ids{2, 5, 6}));
  EXPECT_EQ(Span(t.children(2)), (Ids{3, 4}));
  EXPECT_EQ(Span(t.children(7)), (Ids{8, 9, 10}));
  EXPECT_EQ(Span(t.children(10)), (Ids{11, 12}));
  EXPECT_EQ(Span(t.children(13)), (Ids{14}));
  EXPECT_EQ(t.DomainName(2), "hx/b0");
  EXPECT_EQ(t.DomainName(10), "hx/b1");
  EXPECT_EQ(t.DomainName(13), "hx/pcie4");
  EXPECT_EQ(t.level(2), Level::kNvlink);
  EXPECT_EQ(t.level(7), Level::kPcie);
  for (int g = 0; g < 9; ++g) EXPECT_EQ(t.domain(t.host_gpu(0, g)).local_index, g);
  EXPECT_EQ(t.host_gpu(0, 2), 5);
  EXPECT_EQ(t.host_gpu(0, 6), 11);
  EXPECT_EQ(t.host_gpu(0, 8), 14);
  EXPECT_EQ(t.NvlinkDomain(3), 2);
  EXPECT_EQ(t.NvlinkDomain(5), 5);
  EXPECT_EQ(t.NvlinkDomain(12), 10);
  EXPECT_EQ(t.Between(3, 4).gbps, 450);
  EXPECT_EQ(t.Between(3, 5).gbps, 25);
  EXPECT_EQ(t.Between(3, 8).gbps, 20);
  EXPECT_EQ(t.AncestorAt(4, Level::kNvlink), 2);
  EXPECT_EQ(t.AncestorAt(4, Level::kPcie), 1);
  EXPECT_EQ(t.AncestorAt(9, Level::kNvlink), kNoDomain);
  EXPECT_THAT(t.levels(), ElementsAre(Level::kGpu, Level::kNvlink, Level::kPcie, Level::kNode));
}

// NVLink at three scales and a rail group:
//   0 sp
//   1 rg (leaf, 2 rails)  2 r1 (4, NVSwitch) 3-6  7 r2 (4, NVSwitch) 8-11  12 pn (2, PCIe) 13 14
//   15 ln (leaf)  16 nvl (block, NVLink)  17 b1 (4) 18-21  22 b2 (4) 23-26
//   27 lp (leaf)  28 pc (4, bridged pairs) 29 nv0 {30 31} 32 nv1 {33 34}
Topology Fabric() {
  TopologyBuilder b("fab");
  const DomainId sp = b.AddDomain(Level::kSpine, "sp", kNoDomain);
  const DomainId rg = b.AddDomain(Level::kLeaf, "rg", sp);
  b.mutable_domain(rg).rails = 2;
  b.AddHost("r1", rg, Gpus(4, true));
  b.AddHost("r2", rg, Gpus(4, true));
  b.AddHost("pn", rg, Gpus(2));
  const DomainId ln = b.AddDomain(Level::kLeaf, "ln", sp);
  const DomainId nvl = b.AddDomain(Level::kBlock, "nvl", ln);
  b.mutable_domain(nvl).nvlink = true;
  b.AddHost("b1", nvl, Gpus(4, true));
  b.AddHost("b2", nvl, Gpus(4, true));
  const DomainId lp = b.AddDomain(Level::kLeaf, "lp", sp);
  HostLayout pc = Gpus(4);
  pc.groups = {{Level::kNvlink, "nv0", {0, 1}, true}, {Level::kNvlink, "nv1", {2, 3}, true}};
  b.AddHost("pc", lp, pc);
  return Build(std::move(b));
}

TEST(TopologyTest, NvlinkDomainsHostWideBridgedAndMultiNode) {
  const Topology t = Fabric();
  ASSERT_EQ(t.num_domains(), 35);
  ASSERT_EQ(t.DomainName(16), "nvl");
  ASSERT_EQ(t.DomainName(29), "pc/nv0");
  EXPECT_EQ(t.NvlinkDomain(3), 2);    // host-wide NVSwitch
  EXPECT_EQ(t.NvlinkDomain(11), 7);
  EXPECT_EQ(t.NvlinkDomain(13), 13);  // no NVLink: the GPU itself
  EXPECT_EQ(t.NvlinkDomain(18), 16);  // NVL72-style block across hosts
  EXPECT_EQ(t.NvlinkDomain(26), 16);
  EXPECT_EQ(t.NvlinkDomain(30), 29);  // bridged pair
  EXPECT_EQ(t.NvlinkDomain(34), 32);
  EXPECT_EQ(t.gpus_under(t.NvlinkDomain(20)), 8);
  const PathLink blk = t.Between(18, 23);
  EXPECT_EQ(blk.common, 16);
  EXPECT_EQ(blk.gbps, 900);
  EXPECT_EQ(blk.latency_us, 3.0);
  EXPECT_EQ(blk.hops, 1);
  EXPECT_EQ(t.Between(18, 19).common, 17);
  EXPECT_EQ(t.Between(18, 19).gbps, 450);
  EXPECT_EQ(t.Between(30, 31).common, 29);
  EXPECT_EQ(t.Between(30, 31).gbps, 450);
  EXPECT_EQ(t.Between(31, 33).common, 28);
  EXPECT_EQ(t.Between(31, 33).gbps, 20);
  EXPECT_EQ(t.AncestorAt(18, Level::kBlock), 16);
  EXPECT_EQ(t.AncestorAt(3, Level::kBlock), kNoDomain);
  EXPECT_EQ(t.AncestorAt(3, Level::kLeaf), 1);
  const Ids set = {18, 23, 19};
  EXPECT_EQ(t.LowestCommonDomain(set), 16);
  const Ids wide = {30, 3, 18};
  EXPECT_EQ(t.LowestCommonDomain(wide), 0);
  EXPECT_THAT(t.levels(), ElementsAre(Level::kGpu, Level::kNvlink, Level::kNode, Level::kBlock, Level::kLeaf, Level::kSpine));
  EXPECT_EQ(Span(t.domains_at(Level::kBlock)), (Ids{16}));
  EXPECT_EQ(Span(t.domains_at(Level::kLeaf)), (Ids{1, 15, 27}));
  EXPECT_EQ(Span(t.domains_at(Level::kNvlink)), (Ids{29, 32}));
}

TEST(TopologyTest, RailsAndTheExtraHopAcrossRails) {
  const Topology t = Fabric();
  EXPECT_EQ(t.domain(1).rails, 2);
  EXPECT_EQ(t.Rail(3), 0);
  EXPECT_EQ(t.Rail(4), 1);
  EXPECT_EQ(t.Rail(5), 0);
  EXPECT_EQ(t.Rail(6), 1);
  EXPECT_EQ(t.Rail(8), 0);
  EXPECT_EQ(t.Rail(13), 0);
  EXPECT_EQ(t.Rail(14), 1);
  EXPECT_EQ(t.Rail(18), -1);
  EXPECT_EQ(t.Rail(30), -1);
  // Same rail across hosts: the leaf's link as it is.
  PathLink p = t.Between(3, 8);
  EXPECT_EQ(p.common, 1);
  EXPECT_EQ(p.gbps, 50);
  EXPECT_EQ(p.latency_us, 5.0);
  EXPECT_EQ(p.hops, 1);
  EXPECT_EQ(t.Between(4, 13).hops, 2);  // rail 1 and rail 0
  EXPECT_EQ(t.Between(14, 4).hops, 1);  // both rail 1
  // Different rails: one more hop, plus an NVLink hop's latency on the sender's host.
  p = t.Between(3, 9);
  EXPECT_EQ(p.common, 1);
  EXPECT_EQ(p.gbps, 50);
  EXPECT_DOUBLE_EQ(p.latency_us, 5.0 + 3.0);
  EXPECT_EQ(p.hops, 2);
  p = t.Between(9, 3);
  EXPECT_DOUBLE_EQ(p.latency_us, 8.0);
  EXPECT_EQ(p.hops, 2);
  // A sender without NVLink pays the leaf's latency again.
  p = t.Between(13, 9);
  EXPECT_DOUBLE_EQ(p.latency_us, 10.0);
  EXPECT_EQ(p.hops, 2);
  // Inside one host the rail group is not on the path.
  p = t.Between(3, 4);
  EXPECT_EQ(p.common, 2);
  EXPECT_EQ(p.hops, 1);
  EXPECT_EQ(p.latency_us, 3.0);
  // Above the rail group neither.
  p = t.Between(4, 18);
  EXPECT_EQ(p.common, 0);
  EXPECT_EQ(p.hops, 3);
  EXPECT_DOUBLE_EQ(p.latency_us, 8.1);
}

TEST(TopologyTest, SeveralTopLevelDomainsGetACommonRoot) {
  {
    TopologyBuilder b("two-leaves");
    const DomainId a = b.AddDomain(Level::kLeaf, "a", kNoDomain);
    const DomainId c = b.AddDomain(Level::kLeaf, "c", kNoDomain);
    b.AddHost("h1", a, Gpus(1));
    b.AddHost("h2", c, Gpus(1));
    const Topology t = Build(std::move(b));
    EXPECT_EQ(t.DomainName(0), "cluster");
    EXPECT_EQ(t.level(0), Level::kSpine);
    EXPECT_EQ(t.domain(0).link, DefaultLink(Level::kSpine, false));
    EXPECT_EQ(Span(t.children(0)), (Ids{1, 4}));
    EXPECT_EQ(t.DomainName(1), "a");
    EXPECT_EQ(t.DomainName(4), "c");
  }
  {
    // Hosts alone: a flat set behind one switch (leaf, not block).
    TopologyBuilder b("hosts");
    b.AddHost("cluster", kNoDomain, Gpus(1));
    b.AddHost("cluster-2", kNoDomain, Gpus(2));
    const Topology t = Build(std::move(b));
    EXPECT_EQ(t.DomainName(0), "cluster-3");
    EXPECT_EQ(t.level(0), Level::kLeaf);
    EXPECT_EQ(t.hosts_under(0), 2);
    EXPECT_EQ(t.gpus_under(0), 3);
  }
  {
    TopologyBuilder b("block-and-host");
    const DomainId k = b.AddDomain(Level::kBlock, "k", kNoDomain);
    b.AddHost("h1", k, Gpus(1));
    b.AddHost("h2", kNoDomain, Gpus(1));
    const Topology t = Build(std::move(b));
    EXPECT_EQ(t.level(0), Level::kLeaf);
    EXPECT_EQ(Span(t.children(0)), (Ids{1, 4}));
  }
  {
    TopologyBuilder b("core-and-leaf");
    const DomainId c = b.AddDomain(Level::kCore, "c", kNoDomain);
    b.AddHost("h1", c, Gpus(1));
    const DomainId l = b.AddDomain(Level::kLeaf, "l", kNoDomain);
    b.AddHost("h2", l, Gpus(1));
    const Topology t = Build(std::move(b));
    EXPECT_EQ(t.level(0), Level::kZone);
    EXPECT_EQ(t.domain(0).link, DefaultLink(Level::kZone, false));
  }
}

}  // namespace
}  // namespace tidal::topo

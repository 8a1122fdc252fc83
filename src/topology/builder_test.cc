// TopologyBuilder's checks (every error, with the item's location first) and
// Materialize: GPU counts and models from a node list, a default layout for
// hosts that had none, and the mismatches it refuses, listed both ways.
#include "topology/builder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tidal::topo {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

HostLayout Gpus(int n, bool nvlink = false) {
  HostLayout L;
  L.gpus = n;
  L.nvlink = nvlink;
  return L;
}

std::string BuildError(TopologyBuilder&& b) {
  auto t = std::move(b).Build();
  EXPECT_FALSE(t.has_value()) << "built " << t->num_domains() << " domains";
  return t ? std::string() : t.error().message;
}

// A host with the given groups under one leaf.
std::string GroupError(int gpus, std::vector<HostLayout::Group> groups) {
  TopologyBuilder b("src");
  const DomainId l = b.AddDomain(Level::kLeaf, "l", kNoDomain);
  HostLayout L = Gpus(gpus);
  L.groups = std::move(groups);
  b.AddHost("h", l, L, "f:9");
  return BuildError(std::move(b));
}

TEST(TopologyBuilderTest, ParentMustBeAtAHigherLevel) {
  {
    TopologyBuilder b("src");
    const DomainId a = b.AddDomain(Level::kLeaf, "a", kNoDomain, "f:1");
    const DomainId c = b.AddDomain(Level::kLeaf, "b", a, "f:2");
    b.AddHost("h", c, Gpus(1));
    EXPECT_EQ(BuildError(std::move(b)),
              "f:2: src: leaf 'b' is under leaf 'a'; a parent must be at a higher level (gpu < nvlink < pcie < node < block < "
              "leaf < spine < core < zone)");
  }
  {
    TopologyBuilder b("src");
    const DomainId a = b.AddDomain(Level::kLeaf, "a", kNoDomain);
    const DomainId s = b.AddDomain(Level::kSpine, "s", a);
    b.AddHost("h", s, Gpus(1));
    EXPECT_THAT(BuildError(std::move(b)), HasSubstr("src: spine 's' is under leaf 'a'; a parent must be at a higher level"));
  }
  {
    TopologyBuilder b("src");  // one level up is enough
    const DomainId k = b.AddDomain(Level::kBlock, "k", kNoDomain);
    b.AddHost("h", k, Gpus(1));
    EXPECT_TRUE(std::move(b).Build().has_value());
  }
}

TEST(TopologyBuilderTest, NothingButGpusInsideHosts) {
  {
    TopologyBuilder b("src");
    const DomainId h = b.AddHost("h1", kNoDomain, Gpus(1), "f:1");
    b.AddHost("h2", h, Gpus(1), "f:3");
    EXPECT_EQ(BuildError(std::move(b)), "f:3: src: 'h2' is placed inside host 'h1'; only GPUs are inside hosts");
  }
  {
    TopologyBuilder b("src");
    const DomainId h = b.AddHost("h1", kNoDomain, Gpus(1));
    b.AddDomain(Level::kBlock, "k", h);
    EXPECT_EQ(BuildError(std::move(b)), "src: 'k' is placed inside host 'h1'; only GPUs are inside hosts");
  }
  for (Level l : {Level::kGpu, Level::kNvlink, Level::kPcie}) {
    TopologyBuilder b("src");
    const DomainId leaf = b.AddDomain(Level::kLeaf, "l", kNoDomain);
    b.AddHost("h", leaf, Gpus(1));
    b.AddDomain(l, "x", leaf, "f:4");
    EXPECT_EQ(BuildError(std::move(b)), fmt::format("f:4: src: 'x': {} domains are described inside a host's layout, not on their own",
                                                    LevelName(l)));
  }
}

TEST(TopologyBuilderTest, NamesAreUniqueAndNotEmpty) {
  {
    TopologyBuilder b("src");
    const DomainId l = b.AddDomain(Level::kLeaf, "x", kNoDomain, "f:1");
    b.AddHost("x", l, Gpus(1), "f:2");
    EXPECT_EQ(BuildError(std::move(b)), "f:2: src: the name 'x' is used twice; switch, block and host names must be unique");
  }
  {
    TopologyBuilder b("src");
    const DomainId l = b.AddDomain(Level::kLeaf, "l", kNoDomain);
    b.AddHost("h", l, Gpus(1));
    b.AddHost("h", l, Gpus(1), "f:7");
    EXPECT_THAT(BuildError(std::move(b)), HasSubstr("f:7: src: the name 'h' is used twice"));
  }
  {
    TopologyBuilder b("src");
    const DomainId l = b.AddDomain(Level::kLeaf, "", kNoDomain, "f:5");
    b.AddHost("h", l, Gpus(1));
    EXPECT_EQ(BuildError(std::move(b)), "f:5: src: a leaf domain has no name");
  }
}

TEST(TopologyBuilderTest, EmptyOrHostless) {
  EXPECT_EQ(BuildError(TopologyBuilder("src")), "src: the topology is empty (no hosts or switches)");
  TopologyBuilder b("src");
  const DomainId s = b.AddDomain(Level::kSpine, "s", kNoDomain);
  b.AddDomain(Level::kLeaf, "l", s);
  EXPECT_EQ(BuildError(std::move(b)), "src: the topology has no hosts; name the nodes under the switches");
}

TEST(TopologyBuilderTest, OneZoneAtTheTop) {
  {
    TopologyBuilder b("src");
    const DomainId z1 = b.AddDomain(Level::kZone, "z1", kNoDomain, "f:1");
    const DomainId z2 = b.AddDomain(Level::kZone, "z2", kNoDomain, "f:5");
    b.AddHost("h1", z1, Gpus(1));
    b.AddHost("h2", z2, Gpus(1));
    EXPECT_EQ(BuildError(std::move(b)),
              "src: 2 top-level items (zone 'z1' (f:1), zone 'z2' (f:5)) have no common parent and one of them is a zone; a "
              "topology has one root: put them under one zone or connect the stray items");
  }
  {
    TopologyBuilder b("src");
    const DomainId z = b.AddDomain(Level::kZone, "z", kNoDomain);
    b.AddHost("h1", z, Gpus(1));
    for (int i = 0; i < 4; ++i) b.AddHost(fmt::format("stray{}", i), kNoDomain, Gpus(1));
    EXPECT_EQ(BuildError(std::move(b)),
              "src: 5 top-level items (zone 'z', node 'stray0', node 'stray1', node 'stray2', ...) have no common parent and "
              "one of them is a zone; a topology has one root: put them under one zone or connect the stray items");
  }
}

TEST(TopologyBuilderTest, GroupsNestOrAreDisjoint) {
  EXPECT_EQ(GroupError(4, {{Level::kPcie, "a", {0, 1, 2}}, {Level::kPcie, "b", {2, 3}}}),
            "f:9: src: host 'h': GPU groups 'b' and 'a' overlap without one holding the other");
  EXPECT_EQ(GroupError(4, {{Level::kPcie, "a", {0, 1}}, {Level::kPcie, "b", {1, 2}}}),
            "f:9: src: host 'h': GPU groups 'b' and 'a' overlap without one holding the other");
  EXPECT_EQ(GroupError(4, {{Level::kNvlink, "in", {0, 1}, true}, {Level::kPcie, "mid", {0, 1, 2}}, {Level::kPcie, "x", {2, 3}}}),
            "f:9: src: host 'h': GPU groups 'x' and 'mid' overlap without one holding the other");
}

TEST(TopologyBuilderTest, GroupIndicesWithinTheHost) {
  const std::string outside = "f:9: src: host 'h': group 'g' names GPUs outside 0..3 or twice";
  EXPECT_EQ(GroupError(4, {{Level::kPcie, "g", {0, 4}}}), outside);
  EXPECT_EQ(GroupError(4, {{Level::kPcie, "g", {-1, 0}}}), outside);
  EXPECT_EQ(GroupError(4, {{Level::kPcie, "g", {1, 1}}}), outside);
  EXPECT_EQ(GroupError(4, {{Level::kPcie, "g", {}}}), outside);
  EXPECT_EQ(GroupError(0, {{Level::kPcie, "g", {0}}}), "f:9: src: host 'h': group 'g' names GPUs outside 0..-1 or twice");
  {
    TopologyBuilder b("src");
    HostLayout L;  // count unknown
    L.groups = {{Level::kPcie, "g", {0}}};
    b.AddHost("h", kNoDomain, L, "f:2");
    EXPECT_EQ(BuildError(std::move(b)), "f:2: src: host 'h' has GPU groups but no GPU count");
  }
  {
    TopologyBuilder b("src");
    b.AddHost("h", kNoDomain, Gpus(4097));
    EXPECT_EQ(BuildError(std::move(b)), "src: host 'h' has 4097 GPUs; at most 4096 per host");
  }
  TopologyBuilder b("src");
  b.AddHost("h", kNoDomain, Gpus(4096));
  auto t = std::move(b).Build();
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->total_gpus(), 4096);
}

TEST(TopologyBuilderTest, GroupLevelsRiseStrictly) {
  EXPECT_EQ(GroupError(4, {{Level::kNvlink, "n", {0, 1, 2, 3}, true}, {Level::kPcie, "p", {0, 1}}}),
            "f:9: src: host 'h': group 'p' (pcie) cannot sit inside a nvlink");
  EXPECT_EQ(GroupError(4, {{Level::kPcie, "out", {0, 1, 2, 3}}, {Level::kPcie, "in", {0, 1}}}),
            "f:9: src: host 'h': group 'in' (pcie) cannot sit inside a pcie");
  EXPECT_EQ(GroupError(4, {{Level::kPcie, "same", {0, 1}}, {Level::kPcie, "twin", {1, 0}}}),
            "f:9: src: host 'h': group 'twin' (pcie) cannot sit inside a pcie");
  EXPECT_EQ(GroupError(4, {{Level::kGpu, "g", {0}}}), "f:9: src: host 'h': group 'g' (gpu) cannot sit inside a node");
  EXPECT_EQ(GroupError(4, {{Level::kNode, "n", {0}}}), "f:9: src: host 'h': group 'n' (node) cannot sit inside a node");
  EXPECT_EQ(GroupError(4, {{Level::kLeaf, "n", {0}}}), "f:9: src: host 'h': group 'n' (leaf) cannot sit inside a node");
}

// --- Materialize ---------------------------------------------------------------

// A leaf over a (count unknown), b (unknown, its own 30 GB/s link), c (2 GPUs known).
Topology Unknown() {
  TopologyBuilder b("src");
  const DomainId l = b.AddDomain(Level::kLeaf, "l", kNoDomain);
  b.mutable_domain(l).link = {40, 4, 1, 2};
  b.AddHost("a", l, HostLayout{});
  HostLayout lb;
  lb.link = {30, 2, 1, 1};
  b.AddHost("b", l, lb);
  b.AddHost("c", l, Gpus(2));
  auto t = std::move(b).Build();
  EXPECT_TRUE(t.has_value());
  return std::move(*t);
}

TEST(MaterializeTest, FillsCountsModelsAndTheDefaultLayout) {
  const Topology t = Unknown();
  EXPECT_FALSE(t.gpus_known());
  EXPECT_EQ(t.host_gpus(0), 0);
  EXPECT_EQ(t.total_gpus(), 2);
  HostLayout def;
  def.nvlink = true;
  def.gpus = 99;  // ignored
  def.groups = {{Level::kPcie, "numa0", {0, 1, 2, 3}}, {Level::kPcie, "numa1", {4, 5, 6, 7}}};
  auto m = Materialize(t, {{"c", 2, "T4"}, {"a", 8, "H100"}, {"b", 4, "A100"}}, def);
  ASSERT_TRUE(m.has_value()) << m.error().message;
  EXPECT_TRUE(m->gpus_known());
  ASSERT_EQ(m->num_hosts(), 3);
  EXPECT_EQ(m->domain(m->host(0)).name, "a");
  EXPECT_EQ(m->host_gpus(0), 8);
  EXPECT_EQ(m->host_gpus(1), 4);
  EXPECT_EQ(m->host_gpus(2), 2);
  EXPECT_EQ(m->total_gpus(), 14);
  EXPECT_EQ(m->domain(m->host(0)).gpu_model, "H100");
  EXPECT_EQ(m->domain(m->host(1)).gpu_model, "A100");
  EXPECT_EQ(m->domain(m->host(2)).gpu_model, "T4");
  EXPECT_EQ(m->layout(0).gpus, 8);
  EXPECT_EQ(m->layout(0).groups.size(), 2u);
  ASSERT_EQ(m->layout(1).groups.size(), 1u);  // numa1 names GPUs a 4-GPU host lacks
  EXPECT_EQ(m->layout(1).groups[0].name, "numa0");
  EXPECT_TRUE(m->layout(2).groups.empty());  // a known layout is kept as it was
  EXPECT_TRUE(m->domain(m->host(0)).nvlink);
  EXPECT_FALSE(m->domain(m->host(2)).nvlink);
  EXPECT_EQ(m->domain(m->host(0)).link, DefaultLink(Level::kNode, true));
  EXPECT_EQ(m->domain(m->host(1)).link, (LinkSpec{30, 2, 1, 1}));  // the host's own link survives the default
  EXPECT_EQ(m->domain(0).link, (LinkSpec{40, 4, 1, 2}));
  EXPECT_EQ(m->domain(0).name, "l");
  EXPECT_EQ(m->DomainName(m->AncestorAt(m->host_gpu(0, 5), Level::kPcie)), "a/numa1");
  // The NUMA group of an NVSwitch host is inside its NVLink domain: the host.
  EXPECT_EQ(m->NvlinkDomain(m->host_gpu(0, 5)), m->host(0));
  EXPECT_TRUE(m->domain(m->AncestorAt(m->host_gpu(0, 5), Level::kPcie)).nvlink);
  EXPECT_EQ(m->domain(m->AncestorAt(m->host_gpu(0, 5), Level::kPcie)).link, m->domain(m->host(0)).link);
  EXPECT_EQ(m->source(), "src");
}

TEST(MaterializeTest, DropsDefaultGroupsThatReachPastTheLastGpu) {
  HostLayout def;
  def.groups = {{Level::kPcie, "lo", {0, 1}}, {Level::kPcie, "hi", {2, 3}}};
  auto m = Materialize(Unknown(), {{"a", 3, "T4"}, {"b", 4, "T4"}, {"c", 2, "T4"}}, def);
  ASSERT_TRUE(m.has_value()) << m.error().message;
  ASSERT_EQ(m->layout(0).groups.size(), 1u);  // GPU 3 is one past a 3-GPU host's last
  EXPECT_EQ(m->layout(0).groups[0].name, "lo");
  EXPECT_EQ(m->layout(1).groups.size(), 2u);
  EXPECT_EQ(m->DomainName(m->parent(m->host_gpu(0, 2))), "a");
  EXPECT_EQ(m->DomainName(m->parent(m->host_gpu(1, 2))), "b/hi");
}

TEST(MaterializeTest, KnownCountsMustAgree) {
  auto m = Materialize(Unknown(), {{"a", 8, "H100"}, {"b", 4, "A100"}, {"c", 3, "T4"}});
  ASSERT_FALSE(m.has_value());
  EXPECT_EQ(m.error().message, "src: host 'c' has 2 GPUs in the topology but 3 in the node list");
  EXPECT_EQ(m.error().code, ErrorCode::kInvalidArgument);
}

TEST(MaterializeTest, NamesMustMatchBothWays) {
  auto m = Materialize(Unknown(), {{"a", 8, "H100"}, {"x", 1, "T4"}, {"y", 1, "T4"}});
  ASSERT_FALSE(m.has_value());
  EXPECT_EQ(m.error().message,
            "src: the topology and the node list name different hosts; 2 node(s) are not in the topology: x, y; 2 topology "
            "host(s) are not in the node list: b, c; node names must match exactly");
  m = Materialize(Unknown(), {{"a", 8, "H100"}, {"b", 1, "T4"}, {"c", 2, "T4"}, {"z", 1, "T4"}});
  ASSERT_FALSE(m.has_value());
  EXPECT_EQ(m.error().message,
            "src: the topology and the node list name different hosts; 1 node(s) are not in the topology: z; node names must "
            "match exactly");
  m = Materialize(Unknown(), {{"a", 8, "H100"}});
  ASSERT_FALSE(m.has_value());
  EXPECT_EQ(m.error().message,
            "src: the topology and the node list name different hosts; 2 topology host(s) are not in the node list: b, c; node "
            "names must match exactly");
  std::vector<NodeGpus> many = {{"a", 8, ""}, {"b", 4, ""}, {"c", 2, ""}};
  for (int i = 1; i <= 7; ++i) many.push_back({fmt::format("n{}", i), 1, ""});
  m = Materialize(Unknown(), many);
  ASSERT_FALSE(m.has_value());
  EXPECT_THAT(m.error().message, HasSubstr("; 7 node(s) are not in the topology: n1, n2, n3, n4, n5 and 2 more; node names"));
}

TEST(MaterializeTest, KeepsTheTreeAndItsNotes) {
  TopologyBuilder b("src");
  b.AddNote("reader note");
  const DomainId s = b.AddDomain(Level::kSpine, "s", kNoDomain);
  const DomainId l = b.AddDomain(Level::kLeaf, "l", s);
  b.mutable_domain(l).rails = 4;
  b.mutable_domain(l).switches = 4;
  b.AddHost("h1", l, HostLayout{});
  b.AddHost("h2", s, HostLayout{});
  auto t = std::move(b).Build();
  ASSERT_TRUE(t.has_value());
  auto m = Materialize(*t, {{"h1", 8, "H100"}, {"h2", 0, ""}});
  ASSERT_TRUE(m.has_value()) << m.error().message;
  ASSERT_EQ(m->num_domains(), 2 + 2 + 8);
  EXPECT_EQ(m->domain(1).rails, 4);
  EXPECT_EQ(m->domain(1).switches, 4);
  EXPECT_EQ(m->Rail(m->host_gpu(0, 5)), 1);
  EXPECT_EQ(m->parent(m->host(1)), 0);
  EXPECT_EQ(m->host_gpus(1), 0);
  EXPECT_EQ(m->notes().front(), "reader note");
  // Each default is noted once, not again for the materialized copy.
  EXPECT_THAT(m->notes(), ElementsAre("reader note",
                                      "node links: the input gives no bandwidth; using tidal's default 20 GB/s per GPU",
                                      "leaf links: the input gives no bandwidth; using tidal's default 50 GB/s per GPU",
                                      "spine links: the input gives no bandwidth; using tidal's default 50 GB/s per GPU"));
}

}  // namespace
}  // namespace tidal::topo

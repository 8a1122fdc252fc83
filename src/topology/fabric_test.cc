// FabricGraph: switches and hosts by name, edges in any order. Parallel
// switches merge (spine planes; rail leaves also set rails), the tree keeps
// declaration order, levels come from height unless given, and every bad
// input (unknown switch, host under two parents, cycle, a chain far too
// deep) is an error naming where, without recursion on the input's depth.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "topology/builder.h"
#include "topology/topology_test_util.h"

namespace tidal::topo {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::Describe;

HostLayout Gpus(int n) {
  HostLayout L;
  L.gpus = n;
  return L;
}

void Switch(FabricGraph& g, const std::string& name, std::optional<Level> level = std::nullopt, const std::string& where = "") {
  ASSERT_TRUE(g.AddSwitch(name, level, where).has_value()) << name;
}
void Host(FabricGraph& g, const std::string& name, int gpus = 1, const std::string& where = "") {
  ASSERT_TRUE(g.AddHost(name, where, Gpus(gpus)).has_value()) << name;
}

Topology Build(FabricGraph&& g, FabricGraph::Options o = {}) {
  auto t = std::move(g).Build(o);
  EXPECT_TRUE(t.has_value()) << t.error().message;
  return t ? std::move(*t) : Topology{};
}

std::string BuildError(FabricGraph&& g, FabricGraph::Options o = {}) {
  auto t = std::move(g).Build(o);
  EXPECT_FALSE(t.has_value()) << "built " << t->num_domains() << " domains";
  return t ? std::string() : t.error().message;
}

TEST(FabricGraphTest, EdgesInAnyOrderTreeInDeclarationOrder) {
  FabricGraph g("fab");
  // Edges first, declarations after; children follow declaration order.
  g.Connect("l2", "h4", "e1");
  g.Connect("s1", "l2", "e2");
  g.Connect("l1", "h1", "e3");
  g.Connect("l2", "h3", "e4");
  g.Connect("s1", "l1", "e5");
  g.Connect("l1", "h2", "e6");
  g.Connect("l1", "h2", "e7");  // a second cable: one edge
  Switch(g, "s1");
  Switch(g, "l1");
  Switch(g, "l2");
  for (const char* h : {"h1", "h2", "h3"}) Host(g, h, 2);
  Host(g, "h4", 4);
  const Topology t = Build(std::move(g));
  EXPECT_THAT(Describe(t), ElementsAre("spine s1 <- - hosts=4 gpus=10", "leaf l1 <- s1 hosts=2 gpus=4", "node h1 <- l1 gpus=2",
                                       "node h2 <- l1 gpus=2", "leaf l2 <- s1 hosts=2 gpus=6", "node h3 <- l2 gpus=2",
                                       "node h4 <- l2 gpus=4"));
  EXPECT_EQ(t.domain(0).switches, 1);
  EXPECT_EQ(t.domain(1).rails, 0);
  EXPECT_TRUE(t.notes().size() == 3);  // defaults for node, leaf, spine links
}

TEST(FabricGraphTest, SpinePlanesMergeIntoOneDomain) {
  FabricGraph g("fab");
  for (const char* s : {"s1", "s2", "s3", "l1", "l2"}) Switch(g, s);
  for (const char* h : {"h1", "h2", "h3", "h4"}) Host(g, h);
  for (const char* s : {"s1", "s2", "s3"})
    for (const char* l : {"l2", "l1"}) g.Connect(s, l, "");
  g.Connect("l1", "h1", "");
  g.Connect("l1", "h2", "");
  g.Connect("l2", "h3", "");
  g.Connect("l2", "h4", "");
  const Topology t = Build(std::move(g));
  EXPECT_THAT(Describe(t), ElementsAre("spine s[1-3] <- - hosts=4 gpus=4", "leaf l1 <- s[1-3] hosts=2 gpus=2", "node h1 <- l1 gpus=1",
                                       "node h2 <- l1 gpus=1", "leaf l2 <- s[1-3] hosts=2 gpus=2", "node h3 <- l2 gpus=1",
                                       "node h4 <- l2 gpus=1"));
  EXPECT_EQ(t.domain(0).switches, 3);
  EXPECT_EQ(t.domain(0).rails, 0);  // planes over switches are not rails
  EXPECT_EQ(t.domain(1).switches, 1);
}

TEST(FabricGraphTest, RailLeavesMergeAndSetRails) {
  FabricGraph g("fab");
  for (const char* s : {"sA", "sB", "r0", "r1", "r2", "r3"}) Switch(g, s);
  Host(g, "h1", 8);
  Host(g, "h2", 8);
  for (const char* r : {"r0", "r1", "r2", "r3"}) {
    g.Connect(r, "h1", "");
    g.Connect(r, "h2", "");
    g.Connect("sA", r, "");
    g.Connect("sB", r, "");
  }
  const Topology t = Build(std::move(g));
  EXPECT_THAT(Describe(t), ElementsAre("spine sA,sB <- - hosts=2 gpus=16", "leaf r[0-3] <- sA,sB hosts=2 gpus=16",
                                       "node h1 <- r[0-3] gpus=8", "node h2 <- r[0-3] gpus=8"));
  EXPECT_EQ(t.domain(0).switches, 2);
  EXPECT_EQ(t.domain(0).rails, 0);
  EXPECT_EQ(t.domain(1).switches, 4);
  EXPECT_EQ(t.domain(1).rails, 4);
  EXPECT_EQ(t.Rail(t.host_gpu(0, 0)), 0);
  EXPECT_EQ(t.Rail(t.host_gpu(0, 5)), 1);
  EXPECT_EQ(t.Rail(t.host_gpu(1, 7)), 3);
  EXPECT_EQ(t.Between(t.host_gpu(0, 1), t.host_gpu(1, 2)).hops, 2);
  EXPECT_EQ(t.Between(t.host_gpu(0, 1), t.host_gpu(1, 5)).hops, 1);
}

TEST(FabricGraphTest, WithoutMergingParallelSwitchesAreTwoParents) {
  FabricGraph g("fab");
  for (const char* s : {"s1", "s2", "l1"}) Switch(g, s);
  Host(g, "h1");
  g.Connect("s1", "l1", "f:1");
  g.Connect("s2", "l1", "f:2");
  g.Connect("l1", "h1", "f:3");
  EXPECT_EQ(BuildError(std::move(g), {.merge_parallel = false}),
            "f:2: switch 'l1' is under both 's1' (f:1) and 's2' (f:2); tidal models the fabric as a tree, so each host and "
            "switch needs one parent");
}

TEST(FabricGraphTest, HostUnderTwoParentsNamesBothLocations) {
  FabricGraph g("fab");
  Switch(g, "l1", std::nullopt, "f:1");
  Switch(g, "l2", std::nullopt, "f:5");
  for (const char* h : {"h1", "h2", "h3"}) Host(g, h);
  g.Connect("l1", "h1", "f:3");
  g.Connect("l1", "h2", "f:4");
  g.Connect("l2", "h1", "f:7");
  g.Connect("l2", "h3", "f:8");
  EXPECT_EQ(BuildError(std::move(g)),
            "f:7: host 'h1' is under both 'l1' (f:3) and 'l2' (f:7); tidal models the fabric as a tree, so each host and switch "
            "needs one parent (or parents with identical children, which are merged as parallel switches)");
}

TEST(FabricGraphTest, SwitchUnderPartlyParallelSpines) {
  FabricGraph g("fab");
  for (const char* s : {"s1", "s2", "l1", "l2", "l3"}) Switch(g, s);
  for (const char* h : {"h1", "h2", "h3"}) Host(g, h);
  g.Connect("s1", "l1", "a");
  g.Connect("s1", "l2", "b");
  g.Connect("s2", "l2", "c");
  g.Connect("s2", "l3", "d");
  g.Connect("l1", "h1", "");
  g.Connect("l2", "h2", "");
  g.Connect("l3", "h3", "");
  EXPECT_THAT(BuildError(std::move(g)), HasSubstr("c: switch 'l2' is under both 's1' (b) and 's2' (c)"));
}

TEST(FabricGraphTest, SwitchesWithDifferentExplicitLevelsDoNotMerge) {
  FabricGraph g("fab");
  Switch(g, "s1", Level::kSpine);
  Switch(g, "s2");
  Switch(g, "l1");
  Host(g, "h1");
  g.Connect("s1", "l1", "x");
  g.Connect("s2", "l1", "y");
  g.Connect("l1", "h1", "");
  EXPECT_THAT(BuildError(std::move(g)), HasSubstr("y: switch 'l1' is under both 's1' (x) and 's2' (y)"));
}

TEST(FabricGraphTest, UnknownNamesAndSelfLoops) {
  auto base = [] {
    FabricGraph g("fab");
    EXPECT_TRUE(g.AddSwitch("l1", std::nullopt, "f:1").has_value());
    EXPECT_TRUE(g.AddHost("h1", "f:2").has_value());
    EXPECT_TRUE(g.AddHost("h2", "f:2").has_value());
    g.Connect("l1", "h1", "f:3");
    return g;
  };
  FabricGraph a = base();
  a.Connect("nosuch", "h1", "f:4");
  EXPECT_EQ(BuildError(std::move(a)), "f:4: 'nosuch' is used as a switch but is not declared as one");
  FabricGraph b = base();
  b.Connect("h1", "h2", "f:5");
  EXPECT_EQ(BuildError(std::move(b)), "f:5: 'h1' is used as a switch but is not declared as one");
  FabricGraph c = base();
  c.Connect("l1", "ghost", "f:6");
  EXPECT_EQ(BuildError(std::move(c)), "f:6: switch 'l1' names 'ghost', which is not declared anywhere (unknown switch or host)");
  FabricGraph d = base();
  d.Connect("l1", "l1", "f:7");
  EXPECT_EQ(BuildError(std::move(d)), "f:7: switch 'l1' lists itself as its child (a cycle)");
}

TEST(FabricGraphTest, DeclarationErrors) {
  FabricGraph g("fab");
  ASSERT_TRUE(g.AddSwitch("x", std::nullopt, "f:1").has_value());
  ASSERT_TRUE(g.AddHost("h", "f:2").has_value());
  EXPECT_EQ(g.AddSwitch("x", Level::kLeaf, "f:3").error().message, "f:3: switch 'x' is declared twice (first at f:1); names must be unique");
  EXPECT_EQ(g.AddSwitch("h", std::nullopt, "f:4").error().message, "f:4: 'h' is both a switch and a host (host at f:2)");
  EXPECT_EQ(g.AddHost("x", "f:5").error().message, "f:5: 'x' is both a host and a switch (switch at f:1)");
  EXPECT_EQ(g.AddSwitch("", std::nullopt, "f:6").error().message, "f:6: a switch has an empty name");
  EXPECT_EQ(g.AddHost("", "f:7").error().message, "f:7: a host has an empty name");
  // A host seen again: fine when it agrees or says nothing; a first unknown layout is filled in.
  EXPECT_TRUE(g.AddHost("h", "f:8", Gpus(4)).has_value());
  EXPECT_TRUE(g.AddHost("h", "f:9", Gpus(4)).has_value());
  EXPECT_TRUE(g.AddHost("h", "f:10").has_value());
  EXPECT_EQ(g.AddHost("h", "f:11", Gpus(8)).error().message, "f:11: host 'h' is described twice, differently (first at f:2)");
  EXPECT_TRUE(g.HasSwitch("x"));
  EXPECT_FALSE(g.HasSwitch("h"));
  EXPECT_TRUE(g.HasHost("h"));
  g.Connect("x", "h", "");
  const Topology t = Build(std::move(g));
  EXPECT_EQ(t.host_gpus(0), 4);
}

TEST(FabricGraphTest, CycleMessageShowsTheCycle) {
  {
    FabricGraph g("fab");
    Switch(g, "a", std::nullopt, "f:10");
    Switch(g, "b");
    Switch(g, "c");
    Host(g, "h");
    g.Connect("a", "b", "");
    g.Connect("b", "c", "");
    g.Connect("c", "a", "");
    g.Connect("a", "h", "");
    EXPECT_EQ(BuildError(std::move(g)),
              "f:10: the switches form a cycle (a -> b -> c -> a); a fabric description must be a tree or a Clos");
  }
  {
    // The walk starts above the cycle; the message shows only the cycle.
    FabricGraph g("fab");
    Switch(g, "a");
    Switch(g, "z1", std::nullopt, "f:20");
    Switch(g, "z2");
    Switch(g, "l");
    Host(g, "h");
    g.Connect("a", "z1", "");
    g.Connect("z1", "z2", "");
    g.Connect("z2", "z1", "");
    g.Connect("z2", "l", "");
    g.Connect("l", "h", "");
    EXPECT_EQ(BuildError(std::move(g)), "f:20: the switches form a cycle (z1 -> z2 -> z1); a fabric description must be a tree or a Clos");
  }
  {
    FabricGraph g("fab");  // no location: the source instead
    Switch(g, "p");
    Switch(g, "q");
    g.Connect("p", "q", "");
    g.Connect("q", "p", "");
    EXPECT_EQ(BuildError(std::move(g)), "fab: the switches form a cycle (p -> q -> p); a fabric description must be a tree or a Clos");
  }
}

TEST(FabricGraphTest, AVeryLongChainFailsCleanly) {
  constexpr int kChain = 300'000;
  FabricGraph g("fab");
  auto name = [](int i) { return fmt::format("c{:06}", i); };
  for (int i = 0; i < kChain; ++i) ASSERT_TRUE(g.AddSwitch(name(i), std::nullopt, i == 0 ? "f:1" : "").has_value());
  Host(g, "h");
  for (int i = 0; i + 1 < kChain; ++i) g.Connect(name(i), name(i + 1), "");
  g.Connect(name(kChain - 1), "h", "");
  EXPECT_EQ(BuildError(std::move(g)),
            "f:1: switch 'c000000' sits 300000 switch tiers above the hosts; tidal models at most five (block, leaf, spine, core, zone)");
}

// t1 .. tN stacked over one host, t1 lowest; `block` makes t0 an explicit block under t1.
FabricGraph Chain(int tiers, bool block) {
  FabricGraph g("fab");
  EXPECT_TRUE(g.AddHost("h", "", Gpus(1)).has_value());
  std::string below = "h";
  if (block) {
    EXPECT_TRUE(g.AddSwitch("t0", Level::kBlock, "").has_value());
    g.Connect("t0", "h", "");
    below = "t0";
  }
  for (int i = 1; i <= tiers; ++i) {
    const std::string n = fmt::format("t{}", i);
    EXPECT_TRUE(g.AddSwitch(n, std::nullopt, fmt::format("f:{}", i)).has_value());
    g.Connect(n, below, "");
    below = n;
  }
  return g;
}

std::vector<Level> Levels(const Topology& t) {
  std::vector<Level> v;
  for (DomainId d = 0; d < t.num_domains(); ++d) v.push_back(t.level(d));
  return v;
}

TEST(FabricGraphTest, LevelsFromHeight) {
  EXPECT_THAT(Levels(Build(Chain(1, false))), ElementsAre(Level::kLeaf, Level::kNode, Level::kGpu));
  EXPECT_THAT(Levels(Build(Chain(2, false))), ElementsAre(Level::kSpine, Level::kLeaf, Level::kNode, Level::kGpu));
  EXPECT_THAT(Levels(Build(Chain(3, false))), ElementsAre(Level::kCore, Level::kSpine, Level::kLeaf, Level::kNode, Level::kGpu));
  EXPECT_THAT(Levels(Build(Chain(4, false))),
              ElementsAre(Level::kZone, Level::kCore, Level::kSpine, Level::kLeaf, Level::kNode, Level::kGpu));
  EXPECT_EQ(BuildError(Chain(5, false)),
            "f:5: switch 't5' sits more than four switch tiers above the hosts; tidal models leaf, spine, core and zone");
  // An explicit block counts as a tier of its own: five in all.
  EXPECT_THAT(Levels(Build(Chain(4, true))),
              ElementsAre(Level::kZone, Level::kCore, Level::kSpine, Level::kLeaf, Level::kBlock, Level::kNode, Level::kGpu));
  EXPECT_EQ(BuildError(Chain(5, true)),
            "f:5: switch 't5' sits 6 switch tiers above the hosts; tidal models at most five (block, leaf, spine, core, zone)");
}

TEST(FabricGraphTest, MixedDepthsExplicitLevelsAndNvlinkBlocks) {
  FabricGraph g("fab");
  Switch(g, "s");
  Switch(g, "l1");
  ASSERT_TRUE(g.AddSwitch("nvl", Level::kBlock, "", LinkSpec{900, 2, 1, 1}, true).has_value());
  Switch(g, "l2");
  Host(g, "h1", 4);
  Host(g, "h2", 4);
  HostLayout nv = Gpus(4);  // hosts of an NVLink block are NVLink hosts too (as the readers make them)
  nv.nvlink = true;
  ASSERT_TRUE(g.AddHost("h3", "", nv).has_value());
  ASSERT_TRUE(g.AddHost("h4", "", nv).has_value());
  g.Connect("s", "l1", "");
  g.Connect("s", "h2", "");  // a host straight under the spine
  g.Connect("l1", "h1", "");
  g.Connect("s", "l2", "");
  g.Connect("l2", "nvl", "");
  g.Connect("nvl", "h3", "");
  g.Connect("nvl", "h4", "");
  const Topology t = Build(std::move(g));
  // Children in declaration order: l1, l2, then h2.
  EXPECT_THAT(Describe(t), ElementsAre("spine s <- - hosts=4 gpus=16", "leaf l1 <- s hosts=1 gpus=4", "node h1 <- l1 gpus=4",
                                       "leaf l2 <- s hosts=2 gpus=8", "block nvl <- l2 hosts=2 gpus=8 nvlink",
                                       "node h3 <- nvl gpus=4 nvlink", "node h4 <- nvl gpus=4 nvlink", "node h2 <- s gpus=4"));
  const DomainId nvl = t.AncestorAt(t.host_gpu(1, 0), Level::kBlock);
  EXPECT_EQ(t.DomainName(nvl), "nvl");
  EXPECT_EQ(t.domain(nvl).link, (LinkSpec{900, 2, 1, 1}));
  EXPECT_EQ(t.NvlinkDomain(t.host_gpu(1, 0)), nvl);
  EXPECT_EQ(t.NvlinkDomain(t.host_gpu(3, 0)), t.host_gpu(3, 0));
  EXPECT_EQ(t.Between(t.host_gpu(1, 0), t.host_gpu(2, 3)).gbps, 900);
  EXPECT_EQ(t.AncestorAt(t.host_gpu(3, 0), Level::kLeaf), kNoDomain);
}

TEST(FabricGraphTest, ExplicitLevelsMustStillRise) {
  FabricGraph g("fab");
  Switch(g, "up", Level::kLeaf, "f:1");
  Switch(g, "down", Level::kSpine, "f:2");
  Host(g, "h");
  g.Connect("up", "down", "");
  g.Connect("down", "h", "");
  EXPECT_THAT(BuildError(std::move(g)), HasSubstr("f:2: fab: spine 'down' is under leaf 'up'; a parent must be at a higher level"));
}

TEST(FabricGraphTest, LonelyHostsSitUnderTheRoot) {
  FabricGraph g("fab");
  Switch(g, "l1");
  Host(g, "h1");
  Host(g, "h2");
  g.Connect("l1", "h1", "");
  const Topology t = Build(std::move(g));
  EXPECT_THAT(Describe(t), ElementsAre("spine cluster <- - hosts=2 gpus=2", "leaf l1 <- cluster hosts=1 gpus=1",
                                       "node h1 <- l1 gpus=1", "node h2 <- cluster gpus=1"));
  EXPECT_TRUE(testing::HasNote(t, "1 host(s) are connected to no switch; they sit directly under the root"));
  FabricGraph only("fab");  // no switches at all: nothing to note
  Host(only, "a");
  Host(only, "b");
  const Topology u = Build(std::move(only));
  EXPECT_EQ(u.level(0), Level::kLeaf);
  EXPECT_FALSE(testing::HasNote(u, "connected to no switch"));
}

}  // namespace
}  // namespace tidal::topo

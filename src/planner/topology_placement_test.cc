// PlacementFromTopology: the planner's Placement of real GPU sets on small
// tidal-YAML fabrics, every field exact. The figures follow from the link
// model of topology.h: a ring link between two GPUs meeting at domain C runs
// at C.gbps / (largest uplink oversubscription below C), with C's latency and
// hops; a level's per-hop latency is the worst ring latency over its hops.
#include "planner/topology_placement.h"

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "topology/readers/tidal_yaml.h"

namespace tidal::planner {
namespace {

topo::Topology Yaml(const std::string& text) {
  auto t = topo::ReadTidalYaml(text, "t.yaml");
  EXPECT_TRUE(t) << t.error().message;
  return t ? std::move(*t) : topo::Topology{};
}

// GPUs `locals` of host `name`.
std::vector<topo::DomainId> Gpus(const topo::Topology& t, const std::string& name, std::vector<int> locals) {
  std::vector<topo::DomainId> out;
  const auto h = t.FindHost(name);
  EXPECT_TRUE(h.has_value()) << name;
  if (!h) return out;
  for (int l : locals) out.push_back(t.host_gpu(*h, l));
  return out;
}
std::vector<topo::DomainId> All(const topo::Topology& t, const std::string& name) {
  const auto h = t.FindHost(name);
  EXPECT_TRUE(h.has_value()) << name;
  std::vector<int> l(static_cast<size_t>(h ? t.host_gpus(*h) : 0));
  for (size_t i = 0; i < l.size(); ++i) l[i] = static_cast<int>(i);
  return Gpus(t, name, l);
}
std::vector<topo::DomainId> Cat(std::vector<topo::DomainId> a, const std::vector<topo::DomainId>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

void ExpectPlacement(const Placement& got, const Placement& want) {
  EXPECT_EQ(got.gpus, want.gpus);
  EXPECT_EQ(got.gpus_per_domain, want.gpus_per_domain);
  EXPECT_EQ(got.nodes, want.nodes);
  EXPECT_DOUBLE_EQ(got.nvlink_gbps, want.nvlink_gbps);
  EXPECT_DOUBLE_EQ(got.nvlink_latency_us, want.nvlink_latency_us);
  ASSERT_EQ(got.levels.size(), want.levels.size());
  for (size_t i = 0; i < want.levels.size(); ++i) {
    SCOPED_TRACE(fmt::format("level {}", i));
    EXPECT_EQ(got.levels[i].name, want.levels[i].name);
    EXPECT_EQ(got.levels[i].span_gpus, want.levels[i].span_gpus);
    EXPECT_DOUBLE_EQ(got.levels[i].gbps, want.levels[i].gbps);
    EXPECT_DOUBLE_EQ(got.levels[i].latency_us, want.levels[i].latency_us);
    EXPECT_EQ(got.levels[i].hops, want.levels[i].hops);
  }
}

Placement Want(int gpus, int per_domain, int nodes, double nv_gbps, double nv_lat, std::vector<NetworkLevel> levels) {
  Placement p;
  p.gpus = gpus;
  p.gpus_per_domain = per_domain;
  p.nodes = nodes;
  p.nvlink_gbps = nv_gbps;
  p.nvlink_latency_us = nv_lat;
  p.levels = std::move(levels);
  return p;
}

// Two leaves of two 8-GPU NVSwitch hosts, leaves 2:1 oversubscribed to the spine.
constexpr const char* kFatTree = R"(version: 1
links:
  leaf: {gbps: 50, latency_us: 5, hops: 1, oversubscription: 2}
  spine: {gbps: 50, latency_us: 8.1, hops: 3}
host_types:
  hgx:
    gpus: 8
    nvlink: true
    link: {gbps: 450, latency_us: 3, hops: 1}
root:
  level: spine
  name: spine
  children:
    - level: leaf
      names: leaf[1-2]
      hosts: h[1-4]
      host_type: hgx
)";

TEST(PlacementFromTopology, EightGpusOnOneNvswitchHost) {
  const topo::Topology t = Yaml(kFatTree);
  ExpectPlacement(PlacementFromTopology(t, All(t, "h1")), Want(8, 8, 1, 450, 3, {{"nvlink", 0, 450, 3, 1}}));
}

TEST(PlacementFromTopology, SixteenGpusInOneLeaf) {
  const topo::Topology t = Yaml(kFatTree);
  // h1 and h2 share leaf1: span 16 crosses the leaf at its full 50 GB/s.
  ExpectPlacement(PlacementFromTopology(t, Cat(All(t, "h1"), All(t, "h2"))),
                  Want(16, 8, 2, 450, 3, {{"leaf", 0, 50, 5, 1}}));
}

TEST(PlacementFromTopology, SixteenGpusAcrossTheOversubscribedSpine) {
  const topo::Topology t = Yaml(kFatTree);
  // h2 (leaf1) and h3 (leaf2): 50 / 2 through the 2:1 leaf uplinks, 3 hops of 8.1 / 3 us.
  ExpectPlacement(PlacementFromTopology(t, Cat(All(t, "h2"), All(t, "h3"))),
                  Want(16, 8, 2, 450, 3, {{"spine", 0, 25, 8.1 / 3, 3}}));
}

TEST(PlacementFromTopology, ThirtyTwoGpusHaveALeafAndASpineLevel) {
  const topo::Topology t = Yaml(kFatTree);
  const auto gpus = Cat(Cat(All(t, "h1"), All(t, "h2")), Cat(All(t, "h3"), All(t, "h4")));
  ExpectPlacement(PlacementFromTopology(t, gpus),
                  Want(32, 8, 4, 450, 3, {{"leaf", 16, 50, 5, 1}, {"spine", 0, 25, 8.1 / 3, 3}}));
}

TEST(PlacementFromTopology, EqualLinksAtConsecutiveSpansMerge) {
  // Four hosts under one leaf: spans 16 and 32 both cross the leaf only, so
  // they are one level (unbounded), not a leaf level of span 16 and another.
  const topo::Topology t = Yaml(R"(version: 1
links:
  leaf: {gbps: 50, latency_us: 5, hops: 1, oversubscription: 2}
host_types:
  hgx: {gpus: 8, nvlink: true, link: {gbps: 450, latency_us: 3, hops: 1}}
root:
  level: leaf
  name: leaf1
  hosts: h[1-4]
  host_type: hgx
)");
  const auto gpus = Cat(Cat(All(t, "h1"), All(t, "h2")), Cat(All(t, "h3"), All(t, "h4")));
  ExpectPlacement(PlacementFromTopology(t, gpus), Want(32, 8, 4, 450, 3, {{"leaf", 0, 50, 5, 1}}));
  // 24 GPUs on three hosts (divisors 2 3 4 6 8 12 24): blocks of 3 already
  // straddle h1/h2 (ranks 6-8), so the NVLink span stops at 2 even though
  // blocks of 4 and 8 sit in hosts again. Those spans get a level of their own
  // (the host's NVSwitch), so levels are per divisor, not monotonic; only
  // neighbours with equal links merge (12 and 24).
  const auto g24 = Cat(Cat(All(t, "h1"), All(t, "h2")), All(t, "h3"));
  ExpectPlacement(PlacementFromTopology(t, g24),
                  Want(24, 2, 3, 450, 3,
                       {{"leaf", 3, 50, 5, 1}, {"node", 4, 450, 3, 1}, {"leaf", 6, 50, 5, 1}, {"node", 8, 450, 3, 1},
                        {"leaf", 0, 50, 5, 1}}));
  const Placement p24 = PlacementFromTopology(t, g24);
  EXPECT_DOUBLE_EQ(LinkFor(p24, 8).gbps, 450);  // a TP-8 group sits in one host
  EXPECT_DOUBLE_EQ(LinkFor(p24, 6).gbps, 50);
}

TEST(PlacementFromTopology, FourPlusFourOverTwoHosts) {
  const topo::Topology t = Yaml(kFatTree);
  ExpectPlacement(PlacementFromTopology(t, Cat(Gpus(t, "h1", {0, 1, 2, 3}), Gpus(t, "h2", {4, 5, 6, 7}))),
                  Want(8, 4, 2, 450, 3, {{"leaf", 0, 50, 5, 1}}));
  // The same four per host across the spine.
  ExpectPlacement(PlacementFromTopology(t, Cat(Gpus(t, "h1", {0, 1, 2, 3}), Gpus(t, "h4", {0, 1, 2, 3}))),
                  Want(8, 4, 2, 450, 3, {{"spine", 0, 25, 8.1 / 3, 3}}));
}

TEST(PlacementFromTopology, ThreePlusFiveHasNoNvlinkSpan) {
  // Ranks 0-2 on h1, 3-7 on h2: the block of ranks 2-3 already straddles the
  // hosts, so no span is NVLink-only; the innermost network link stands in.
  const topo::Topology t = Yaml(kFatTree);
  ExpectPlacement(PlacementFromTopology(t, Cat(Gpus(t, "h1", {0, 1, 2}), Gpus(t, "h2", {0, 1, 2, 3, 4}))),
                  Want(8, 1, 2, 50, 5, {{"leaf", 0, 50, 5, 1}}));
}

// PCIe hosts: bridged NVLink pairs inside two PCIe switches (roce-2tier's host).
constexpr const char* kPcieHost = R"(version: 1
links:
  leaf: {gbps: 25, latency_us: 6, hops: 1, oversubscription: 3}
  spine: {gbps: 25, latency_us: 10, hops: 3}
host_types:
  pcie8:
    gpus: 8
    link: {gbps: 20, latency_us: 3, hops: 1}
    groups:
      - {level: pcie, name: numa0, gpus: [0, 1, 2, 3], link: {gbps: 50, latency_us: 2, hops: 1}}
      - {level: pcie, name: numa1, gpus: [4, 5, 6, 7], link: {gbps: 50, latency_us: 2, hops: 1}}
      - {level: nvlink, name: bridge0, gpus: [0, 1], link: {gbps: 300, latency_us: 2, hops: 0}}
      - {level: nvlink, name: bridge1, gpus: [2, 3], link: {gbps: 300, latency_us: 2, hops: 0}}
      - {level: nvlink, name: bridge2, gpus: [4, 5], link: {gbps: 300, latency_us: 2, hops: 0}}
      - {level: nvlink, name: bridge3, gpus: [6, 7], link: {gbps: 300, latency_us: 2, hops: 0}}
root:
  level: spine
  name: spine
  children:
    - level: leaf
      names: tor[1-2]
      hosts: p[1-2]
      host_type: pcie8
)";

TEST(PlacementFromTopology, BridgedNvlinkPairs) {
  const topo::Topology t = Yaml(kPcieHost);
  // Pairs are the NVLink domains; 4 GPUs meet at the PCIe switch, 8 across sockets.
  ExpectPlacement(PlacementFromTopology(t, All(t, "p1")),
                  Want(8, 2, 1, 300, 2, {{"pcie", 4, 50, 2, 1}, {"node", 0, 20, 3, 1}}));
  // One pair alone: all NVLink (the bridge has no switch hop).
  ExpectPlacement(PlacementFromTopology(t, Gpus(t, "p1", {2, 3})), Want(2, 2, 1, 300, 2, {{"nvlink", 0, 300, 2, 1}}));
  // GPUs of two pairs: no NVLink span; the PCIe switch stands in.
  ExpectPlacement(PlacementFromTopology(t, Gpus(t, "p1", {0, 2})), Want(2, 1, 1, 50, 2, {{"pcie", 0, 50, 2, 1}}));
  // Two hosts under different ToRs: 25 / 3 over the 3:1 uplinks, 10 us over 3 hops.
  ExpectPlacement(PlacementFromTopology(t, Cat(All(t, "p1"), All(t, "p2"))),
                  Want(16, 2, 2, 300, 2, {{"pcie", 4, 50, 2, 1}, {"node", 8, 20, 3, 1}, {"spine", 0, 25.0 / 3, 10.0 / 3, 3}}));
}

// NVL72: 18 trays of 4 GPUs per rack, the rack one NVLink domain; racks under a leaf.
constexpr const char* kNvl72 = R"(version: 1
links:
  leaf: {gbps: 50, latency_us: 5, hops: 1}
host_types:
  tray:
    gpus: 4
    nvlink: true
    link: {gbps: 900, latency_us: 3, hops: 1}
root:
  level: leaf
  name: su1
  children:
    - level: block
      names: rack[1-2]
      nvlink: true
      link: {gbps: 900, latency_us: 3, hops: 1}
      hosts: r[1-2]-t[01-18]
      host_type: tray
)";

TEST(PlacementFromTopology, Nvl72BlockSpansHosts) {
  const topo::Topology t = Yaml(kNvl72);
  std::vector<topo::DomainId> rack1, rack2;
  for (int i = 1; i <= 18; ++i) {
    rack1 = Cat(rack1, All(t, fmt::format("r1-t{:02}", i)));
    rack2 = Cat(rack2, All(t, fmt::format("r2-t{:02}", i)));
  }
  ASSERT_EQ(rack1.size(), 72u);
  ExpectPlacement(PlacementFromTopology(t, rack1), Want(72, 72, 18, 900, 3, {{"nvlink", 0, 900, 3, 1}}));
  // Two trays of one rack: NVLink through the rack, not the host.
  ExpectPlacement(PlacementFromTopology(t, Cat(All(t, "r1-t01"), All(t, "r1-t18"))),
                  Want(8, 8, 2, 900, 3, {{"nvlink", 0, 900, 3, 1}}));
  // Two racks (144 = 2^4 3^2): blocks of 2..12 divide 72 and stay in a rack;
  // 16 is the first divisor whose blocks straddle the racks (ranks 64-79), so
  // the NVLink span is 12; 18, 24, 36 and 72 are rack-internal again (one
  // merged block level up to 36, another at 72), 48 and 144 cross the leaf.
  ExpectPlacement(PlacementFromTopology(t, Cat(rack1, rack2)),
                  Want(144, 12, 36, 900, 3,
                       {{"leaf", 16, 50, 5, 1}, {"block", 36, 900, 3, 1}, {"leaf", 48, 50, 5, 1}, {"block", 72, 900, 3, 1},
                        {"leaf", 0, 50, 5, 1}}));
}

TEST(PlacementFromTopology, OneGpu) {
  const topo::Topology t = Yaml(kFatTree);
  ExpectPlacement(PlacementFromTopology(t, Gpus(t, "h3", {5})), Want(1, 1, 1, 450, 3, {{"none", 0, 450, 0, 1}}));
  // A GPU with no NVLink at all: bandwidth 1 stands in (it never communicates).
  const topo::Topology p = Yaml(R"(version: 1
host_types:
  plain: {gpus: 2}
root: {level: leaf, name: l, hosts: x1, host_type: plain}
)");
  ExpectPlacement(PlacementFromTopology(p, Gpus(p, "x1", {1})), Want(1, 1, 1, 1, 3, {{"none", 0, 1, 0, 1}}));
}

TEST(PlacementFromTopology, RankOrderIgnoresInputOrder) {
  const topo::Topology t = Yaml(kFatTree);
  auto gpus = Cat(Cat(All(t, "h1"), All(t, "h2")), Cat(All(t, "h3"), All(t, "h4")));
  const Placement sorted = PlacementFromTopology(t, gpus);
  std::mt19937 rng(7);
  for (int i = 0; i < 5; ++i) {
    std::shuffle(gpus.begin(), gpus.end(), rng);
    ExpectPlacement(PlacementFromTopology(t, gpus), sorted);
  }
  // Host order in the list does not matter either: 5 GPUs of h2 then 3 of h1
  // is still h1's 3 first (ranks 0-2), so still no NVLink span.
  ExpectPlacement(PlacementFromTopology(t, Cat(Gpus(t, "h2", {4, 3, 2, 1, 0}), Gpus(t, "h1", {2, 0, 1}))),
                  Want(8, 1, 2, 50, 5, {{"leaf", 0, 50, 5, 1}}));
}

TEST(PlacementFromTopology, LinkForReadsTheLevels) {
  // What the cost model reads off the placement: span <= NVLink domain is
  // NVLink; above it the first level whose span holds it, the last for all.
  const topo::Topology t = Yaml(kFatTree);
  const auto gpus = Cat(Cat(All(t, "h1"), All(t, "h2")), Cat(All(t, "h3"), All(t, "h4")));
  const Placement pl = PlacementFromTopology(t, gpus);
  EXPECT_DOUBLE_EQ(LinkFor(pl, 8).gbps, 450);
  EXPECT_DOUBLE_EQ(LinkFor(pl, 16).gbps, 50);
  EXPECT_DOUBLE_EQ(LinkFor(pl, 16).latency_us, 5);
  EXPECT_DOUBLE_EQ(LinkFor(pl, 32).gbps, 25);
  EXPECT_NEAR(LinkFor(pl, 32).latency_us, 8.1, 1e-12);
  EXPECT_EQ(LinkFor(pl, 32).hops, 3);
}

}  // namespace
}  // namespace tidal::planner

// WriteTidalYaml then ReadTidalYaml gives the same domains — names, levels,
// parents, links, NVLink, rails, parallel switches, host layouts and every
// sub-node domain — on topologies of several shapes: a fat tree with link
// overrides, two host types under one leaf, interleaved GPU groups, a rail
// group and NVLink blocks, mixed depths, a single host, hosts of unknown
// layout, and FabricGraph output whose merged switches have list-like names.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

#include <fmt/ranges.h>

#include "common/csv.h"
#include "topology/builder.h"
#include "topology/readers/tidal_yaml.h"

namespace tidal::topo {
namespace {

std::string Link(const LinkSpec& l) { return fmt::format("{}/{}/{}/{}", l.gbps, l.latency_us, l.hops, l.oversubscription); }

// Every domain by name (GPUs and groups by their host-qualified names).
std::map<std::string, std::string> Dump(const Topology& t) {
  std::map<std::string, std::string> out;
  for (DomainId d = 0; d < t.num_domains(); ++d) {
    const Domain& x = t.domain(d);
    std::string s = fmt::format("{} parent={} link={} nvlink={} rails={} switches={} model={} local={}", LevelName(x.level),
                                x.parent == kNoDomain ? "-" : t.DomainName(x.parent), Link(x.link), x.nvlink, x.rails, x.switches,
                                x.gpu_model, x.local_index);
    if (x.level == Level::kNode) {
      const HostLayout& L = t.layout(t.host_index(d));
      s += fmt::format(" gpus={}/{} layout={}/{}/{}/{}", t.host_gpus(t.host_index(d)), L.gpus, L.gpu_model, L.nvlink, Link(L.link),
                       L.groups.size());
      for (const auto& g : L.groups)
        s += fmt::format(" [{} {} {} {} {}]", LevelName(g.level), g.name, fmt::join(g.gpus, ","), g.nvlink, Link(g.link));
    }
    EXPECT_TRUE(out.emplace(t.DomainName(d), s).second) << "two domains named " << t.DomainName(d);
  }
  return out;
}

// Writes t, reads it back, and checks both agree; returns the text. The
// text itself is a fixed point after one pass (the first write may reorder
// hosts that sit next to sub-domains, and so renumber host types).
std::string ExpectRoundTrip(const Topology& t) {
  if (t.num_domains() == 0) {
    ADD_FAILURE() << "nothing to write";
    return "";
  }
  const std::string text = WriteTidalYaml(t);
  auto back = ReadTidalYaml(text, t.source());
  EXPECT_TRUE(back.has_value()) << back.error().message << "\n" << text;
  if (!back) return text;
  EXPECT_EQ(Dump(*back), Dump(t)) << text;
  EXPECT_EQ(back->num_domains(), t.num_domains());
  EXPECT_EQ(back->gpus_known(), t.gpus_known());
  const std::string again = WriteTidalYaml(*back);
  auto twice = ReadTidalYaml(again, t.source());
  EXPECT_TRUE(twice.has_value());
  if (twice) {
    EXPECT_EQ(WriteTidalYaml(*twice), again) << "writing is not stable";
  }
  return text;
}

Topology Read(const std::string& yaml) {
  auto t = ReadTidalYaml(yaml, "t.yaml");
  EXPECT_TRUE(t.has_value()) << t.error().message;
  return t ? std::move(*t) : Topology{};
}

TEST(TidalYamlRoundTripTest, FatTreeWithOverridesTypesAndGroups) {
  ExpectRoundTrip(Read(R"(version: 1
links:
  leaf: {gbps: 25, latency_us: 5, hops: 1, oversubscription: 2}
  spine: {gbps: 25, latency_us: 8.1, hops: 3}
  node: {gbps: 30}
host_types:
  hgx:
    gpus: 8
    gpu_model: H100
    nvlink: true
    link: {gbps: 300, latency_us: 3, hops: 1}
  numa:
    gpus: 8
    gpu_model: L40S
    groups:
      - {level: pcie, name: numa0, gpus: [0, 2, 4, 6], link: {gbps: 32, latency_us: 1.5, hops: 1}}
      - {level: pcie, name: numa1, gpus: [1, 3, 5, 7], nvlink: true}
      - {level: nvlink, name: br, gpus: [0, 2]}
  pair: {gpus: 2, gpu_model: T4}
root:
  level: core
  name: core
  link: {oversubscription: 1.5}
  switches: 4
  children:
    - level: spine
      names: sp[1-2]
      switches: 2
      children:
        - level: leaf
          names: rack[01-04]
          hosts: g[001-008]
          host_type: hgx
    - level: spine
      name: sp3
      children:
        - level: leaf
          name: mixed
          link: {gbps: 12.5, hops: 2}
          children:
            - {level: node, name: a1, host_type: numa}
            - {level: node, name: b1, host_type: pair}
            - {level: node, name: a2, host_type: numa}
            - {level: node, name: c1}
        - level: node
          names: direct[1-2]
          host_type: pair
)"));
}

TEST(TidalYamlRoundTripTest, RailsBlocksAndNvlink) {
  ExpectRoundTrip(Read(R"(version: 1
host_types:
  gb200: {gpus: 4, gpu_model: GB200, nvlink: true}
  dgx: {gpus: 8, nvlink: true}
root:
  level: zone
  name: hall
  children:
    - level: spine
      name: s
      children:
        - level: leaf
          name: su1
          rails: 8
          switches: 8
          hosts: dgx[1-4]
          host_type: dgx
        - level: leaf
          name: nvl-row
          children:
            - level: block
              names: nvl72-[1-2]
              nvlink: true
              link: {gbps: 900, latency_us: 2.5, hops: 1}
              hosts: tray[01-36]
              host_type: gb200
)"));
}

TEST(TidalYamlRoundTripTest, SingleHosts) {
  const std::string text = ExpectRoundTrip(Read(R"(version: 1
host_types:
  t: {gpus: 4, groups: [{level: nvlink, name: p0, gpus: [0, 1]}, {level: nvlink, name: p1, gpus: [2, 3]}]}
root: {level: node, name: solo, host_type: t}
)"));
  EXPECT_THAT(text, ::testing::HasSubstr("root:\n  level: node\n  name: solo\n  host_type: type1\n"));
  ExpectRoundTrip(Read("version: 1\nroot: {level: node, name: bare}\n"));
}

TEST(TidalYamlRoundTripTest, BuilderTopologiesWithUnknownLayoutsAndASyntheticRoot) {
  TopologyBuilder b("built");
  const DomainId l1 = b.AddDomain(Level::kLeaf, "l1", kNoDomain);
  b.mutable_domain(l1).link = {40, 6.5, 2, 3};
  b.AddHost("u1", l1, HostLayout{});
  b.AddHost("u2", l1, HostLayout{});
  HostLayout known;
  known.gpus = 2;
  known.link = {0, 0, 0, 1};
  b.AddHost("k1", kNoDomain, known);
  const DomainId blk = b.AddDomain(Level::kBlock, "blk", kNoDomain);
  b.mutable_domain(blk).nvlink = true;
  HostLayout nv;
  nv.gpus = 4;
  nv.nvlink = true;
  nv.gpu_model = "GB300";
  b.AddHost("n1", blk, nv);
  auto t = std::move(b).Build();
  ASSERT_TRUE(t.has_value()) << t.error().message;
  ASSERT_EQ(t->DomainName(0), "cluster");
  ExpectRoundTrip(*t);
}

// FabricGraph names a merged set of parallel switches by their compressed
// list ("s[1-2]", "sA,sB"); written and read back it is still one domain.
TEST(TidalYamlRoundTripTest, MergedSwitchNamesStayOneDomain) {
  FabricGraph g("fab");
  for (const char* s : {"s1", "s2", "l1", "l2", "sA", "sB", "r0", "r1"}) ASSERT_TRUE(g.AddSwitch(s, std::nullopt, "").has_value());
  HostLayout L;
  L.gpus = 2;
  for (const char* h : {"h1", "h2", "h3", "h4", "x1", "x2"}) ASSERT_TRUE(g.AddHost(h, "", L).has_value());
  for (const char* s : {"s1", "s2"})
    for (const char* l : {"l1", "l2"}) g.Connect(s, l, "");
  g.Connect("l1", "h1", "");
  g.Connect("l1", "h2", "");
  g.Connect("l2", "h3", "");
  g.Connect("l2", "h4", "");
  for (const char* r : {"r0", "r1"}) {
    g.Connect("sA", r, "");
    g.Connect("sB", r, "");
    g.Connect(r, "x1", "");
    g.Connect(r, "x2", "");
  }
  auto t = std::move(g).Build();
  ASSERT_TRUE(t.has_value()) << t.error().message;
  ASSERT_EQ(t->DomainName(1), "s[1-2]");
  ExpectRoundTrip(*t);
  // The same in the spec: `name:` is one name as written; `names:` is a list.
  const Topology one = Read("version: 1\nroot:\n  level: leaf\n  name: \"r[0-1]\"\n  rails: 2\n  hosts: x[1-2]\n");
  ASSERT_EQ(one.num_domains(), 3);
  EXPECT_EQ(one.DomainName(0), "r[0-1]");
  EXPECT_EQ(one.hosts_under(0), 2);
}

TEST(TidalYamlRoundTripTest, PhillyFatTreeFromTheRepository) {
  auto text = ReadFileToString(std::string(TIDAL_SOURCE_DIR) + "/data/topologies/philly-fat-tree.yaml");
  ASSERT_TRUE(text.has_value()) << text.error().message;
  const Topology t = Read(*text);
  EXPECT_EQ(t.num_hosts(), 552);
  EXPECT_EQ(t.total_gpus(), 231 * 8 + 321 * 2);
  ExpectRoundTrip(t);
}

// The written form itself, for a small tree: one host type per distinct
// layout, hosts as compressed lists, links only where they differ from the
// defaults.
TEST(TidalYamlRoundTripTest, WrittenTextIsTheExplicitForm) {
  const Topology t = Read(R"(version: 1
host_types:
  a: {gpus: 2, gpu_model: T4}
  b: {gpus: 8, nvlink: true}
root:
  level: spine
  name: s
  children:
    - level: leaf
      name: l1
      link: {gbps: 25, latency_us: 5, hops: 1, oversubscription: 2}
      hosts: n[1-3]
      host_type: a
    - level: leaf
      name: l2
      children:
        - {level: node, names: "m[1-2]", host_type: b}
        - {level: node, name: m3, host_type: a}
        - {level: node, name: m4}
)");
  EXPECT_EQ(WriteTidalYaml(t), R"(version: 1
name: t.yaml
host_types:
  type1:
    gpus: 2
    gpu_model: T4
  type2:
    gpus: 8
    nvlink: true
root:
  level: spine
  name: s
  children:
    - level: leaf
      name: l1
      link: {gbps: 25, latency_us: 5, hops: 1, oversubscription: 2}
      hosts: n[1-3]
      host_type: type1
    - level: leaf
      name: l2
      children:
        - level: node
          names: m[1-2]
          host_type: type2
        - level: node
          names: m3
          host_type: type1
        - level: node
          names: m4
)");
}

}  // namespace
}  // namespace tidal::topo

// tidal's YAML spec: names shared among parents (evenly, per:, hosts_per:),
// node entries, host types and their GPU groups, link defaults and
// overrides, and a table of bad inputs, each asserted as file:line and the
// problem. The write -> read round trip is in tidal_yaml_roundtrip_test.cc.
#include "topology/readers/tidal_yaml.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "topology/topology_test_util.h"

namespace tidal::topo {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing::Describe;

Topology Read(const std::string& yaml) {
  auto t = ReadTidalYaml(yaml, "t.yaml");
  EXPECT_TRUE(t.has_value()) << t.error().message << "\n" << yaml;
  return t ? std::move(*t) : Topology{};
}

std::string ReadError(const std::string& yaml) {
  auto t = ReadTidalYaml(yaml, "t.yaml");
  EXPECT_FALSE(t.has_value()) << yaml;
  return t ? std::string() : t.error().message;
}

const Domain& Named(const Topology& t, const std::string& name) {
  for (DomainId d = 0; d < t.num_domains(); ++d)
    if (t.DomainName(d) == name) return t.domain(d);
  ADD_FAILURE() << "no domain " << name;
  static const Domain none;
  return none;
}

TEST(TidalYamlTest, NamesAreSharedEvenlyAmongParents) {
  const Topology t = Read(R"(version: 1
root:
  level: core
  name: c
  children:
    - level: spine
      names: s[1-2]
      children:
        - level: leaf
          names: l[1-4]
          hosts: h[1-8]
)");
  EXPECT_THAT(Describe(t),
              ElementsAre("core c <- - hosts=8", "spine s1 <- c hosts=4", "leaf l1 <- s1 hosts=2", "node h1 <- l1", "node h2 <- l1",
                          "leaf l2 <- s1 hosts=2", "node h3 <- l2", "node h4 <- l2", "spine s2 <- c hosts=4", "leaf l3 <- s2 hosts=2",
                          "node h5 <- l3", "node h6 <- l3", "leaf l4 <- s2 hosts=2", "node h7 <- l4", "node h8 <- l4"));
  EXPECT_FALSE(t.gpus_known());  // no host types: counts come from the node list
  EXPECT_EQ(t.layout(0).gpus, -1);
}

TEST(TidalYamlTest, PerAndHostsPerFillParentsInOrder) {
  const Topology t = Read(R"(version: 1
root:
  level: spine
  names: s[1-2]
  children:
    - level: leaf
      names: l[1-5]
      per: 3
      hosts: ["h[1-3]", x, y]
      hosts_per: 1
)");
  // Two top-level spines get a common root.
  EXPECT_THAT(Describe(t), ElementsAre("core cluster <- - hosts=5", "spine s1 <- cluster hosts=3", "leaf l1 <- s1 hosts=1", "node h1 <- l1",
                                       "leaf l2 <- s1 hosts=1", "node h2 <- l2", "leaf l3 <- s1 hosts=1", "node h3 <- l3",
                                       "spine s2 <- cluster hosts=2", "leaf l4 <- s2 hosts=1", "node x <- l4",
                                       "leaf l5 <- s2 hosts=1", "node y <- l5"));
  const Topology u = Read(R"(version: 1
root:
  level: spine
  name: s
  children:
    - level: leaf
      names: l[1-2]
      hosts: h[1-5]
      hosts_per: 3
)");
  EXPECT_THAT(Describe(u), ElementsAre("spine s <- - hosts=5", "leaf l1 <- s hosts=3", "node h1 <- l1", "node h2 <- l1", "node h3 <- l1",
                                       "leaf l2 <- s hosts=2", "node h4 <- l2", "node h5 <- l2"));
}

TEST(TidalYamlTest, SharingThatDoesNotComeOutEvenIsAnError) {
  const std::string head = "version: 1\nroot:\n  level: spine\n  names: s[1-2]\n  children:\n";
  EXPECT_EQ(ReadError(head + "    - level: leaf\n      names: l[1-5]\n"),
            "t.yaml:6: 5 names cannot be shared evenly among 2 parents; change the counts or give per: N");
  EXPECT_EQ(ReadError(head + "    - level: leaf\n      names: l[1-7]\n      per: 3\n"),
            "t.yaml:6: 7 names at 3 per parent fill 3 parents, but there are 2");
  EXPECT_EQ(ReadError(head + "    - level: leaf\n      names: l[1-2]\n      per: 3\n"),
            "t.yaml:6: 2 names at 3 per parent fill 1 parents, but there are 2");
  EXPECT_EQ(ReadError(head + "    - level: leaf\n      names: l[1-4]\n      hosts: h[1-6]\n"),
            "t.yaml:8: 6 hosts cannot be shared evenly among 4 parents; change the counts or give per: N");
  EXPECT_EQ(ReadError(head + "    - level: leaf\n      names: l[1-4]\n      hosts: h[1-6]\n      hosts_per: 4\n"),
            "t.yaml:8: 6 hosts at 4 per parent fill 2 parents, but there are 4");
}

// per: N promises N to a parent also when there is only one parent.
TEST(TidalYamlTest, PerIsCheckedWithASingleParentToo) {
  EXPECT_EQ(ReadError("version: 1\nroot:\n  level: leaf\n  name: l\n  hosts: h[1-8]\n  hosts_per: 4\n"),
            "t.yaml:5: 8 hosts at 4 per parent fill 2 parents, but there are 1");
  EXPECT_EQ(ReadError("version: 1\nroot:\n  level: leaf\n  names: l[1-4]\n  per: 2\n  hosts: h[1-4]\n"),
            "t.yaml:3: 4 names at 2 per parent fill 2 parents, but there are 1");
  // A per that one parent holds is fine, also when the last share is short.
  const Topology t = Read("version: 1\nroot:\n  level: leaf\n  name: l\n  hosts: h[1-3]\n  hosts_per: 4\n");
  EXPECT_THAT(Describe(t), ElementsAre("leaf l <- - hosts=3", "node h1 <- l", "node h2 <- l", "node h3 <- l"));
}

TEST(TidalYamlTest, NodeEntriesGiveHostsOfSeveralTypes) {
  const Topology t = Read(R"(version: 1
host_types:
  big: {gpus: 8, gpu_model: H100, nvlink: true}
  small: {gpus: 2, gpu_model: T4}
root:
  level: leaf
  names: l[1-2]
  children:
    - level: node
      names: a[1-4]
      host_type: big
    - level: node
      names: [b1, b2]
      host_type: small
)");
  EXPECT_THAT(Describe(t), ElementsAre("spine cluster <- - hosts=6 gpus=36", "leaf l1 <- cluster hosts=3 gpus=18", "node a1 <- l1 gpus=8 nvlink",
                                       "node a2 <- l1 gpus=8 nvlink", "node b1 <- l1 gpus=2", "leaf l2 <- cluster hosts=3 gpus=18",
                                       "node a3 <- l2 gpus=8 nvlink", "node a4 <- l2 gpus=8 nvlink", "node b2 <- l2 gpus=2"));
  EXPECT_EQ(Named(t, "a1").gpu_model, "H100");
  EXPECT_EQ(Named(t, "b2").gpu_model, "T4");
  EXPECT_EQ(Named(t, "a1").link, DefaultLink(Level::kNode, true));
  // A one-host topology is a node entry at the root.
  const Topology one = Read("version: 1\nhost_types:\n  t: {gpus: 4}\nroot:\n  level: node\n  name: solo\n  host_type: t\n");
  EXPECT_THAT(Describe(one), ElementsAre("node solo <- - gpus=4"));
  const Topology bare = Read("version: 1\nroot: {level: host, name: solo}\n");
  EXPECT_THAT(Describe(bare), ElementsAre("node solo <- -"));
  EXPECT_EQ(ReadError("version: 1\nroot:\n  level: node\n  name: n\n  hosts: h1\n"),
            "t.yaml:5: a node entry takes names and host_type only, not hosts");
  EXPECT_EQ(ReadError("version: 1\nroot:\n  level: node\n  name: n\n  children: []\n"),
            "t.yaml:5: a node entry takes names and host_type only, not children");
  EXPECT_EQ(ReadError("version: 1\nroot:\n  level: node\n  name: n\n  host_type: gone\n"),
            "t.yaml:5: unknown host_type 'gone'; define it under host_types");
}

TEST(TidalYamlTest, HostTypesWithGroups) {
  const Topology t = Read(R"(version: 1
host_types:
  hgx:
    gpus: 8
    gpu_model: H100
    link: {gbps: 300, latency_us: 2, hops: 1}
    groups:
      - {level: pcie, name: numa0, gpus: [0, 2, 4, 6]}
      - {level: numa, name: numa1, gpus: [1, 3, 5, 7], link: {gbps: 40, latency_us: 1.5, hops: 2}}
      - {level: nvlink, name: pair, gpus: [0, 2]}
      - {level: nvlink, gpus: [3, 1], nvlink: false}
  nvpcie:
    gpus: 2
    groups: [{level: pcie, gpus: [0, 1], nvlink: true}]
root:
  level: leaf
  name: l
  children:
    - {level: node, name: h1, host_type: hgx}
    - {level: node, name: h2, host_type: nvpcie}
)");
  ASSERT_EQ(t.num_hosts(), 2);
  const HostLayout& L = t.layout(0);
  EXPECT_EQ(L.gpus, 8);
  EXPECT_EQ(L.gpu_model, "H100");
  EXPECT_FALSE(L.nvlink);
  EXPECT_EQ(L.link, (LinkSpec{300, 2, 1, 1}));
  ASSERT_EQ(L.groups.size(), 4u);
  EXPECT_EQ(L.groups[0], (HostLayout::Group{Level::kPcie, "numa0", {0, 2, 4, 6}, false, {}}));
  EXPECT_EQ(L.groups[1], (HostLayout::Group{Level::kPcie, "numa1", {1, 3, 5, 7}, false, {40, 1.5, 2, 1}}));
  EXPECT_EQ(L.groups[2], (HostLayout::Group{Level::kNvlink, "pair", {0, 2}, true, {}}));
  EXPECT_EQ(L.groups[3], (HostLayout::Group{Level::kNvlink, "", {3, 1}, true, {}}));  // an nvlink group is NVLink
  EXPECT_EQ(t.layout(1).groups, (std::vector<HostLayout::Group>{{Level::kPcie, "", {0, 1}, true, {}}}));
  const auto g = [&](int i) { return t.host_gpu(0, i); };
  EXPECT_EQ(t.DomainName(t.parent(g(0))), "h1/pair");
  EXPECT_EQ(t.DomainName(t.parent(t.parent(g(0)))), "h1/numa0");
  EXPECT_EQ(t.DomainName(t.parent(g(1))), "h1/nvlink3");
  EXPECT_EQ(t.DomainName(t.parent(t.parent(g(1)))), "h1/numa1");
  EXPECT_EQ(t.DomainName(t.parent(g(5))), "h1/numa1");
  EXPECT_EQ(t.DomainName(t.parent(t.host_gpu(1, 0))), "h2/pcie0");
  EXPECT_EQ(t.NvlinkDomain(g(2)), t.parent(g(2)));
  EXPECT_EQ(t.NvlinkDomain(g(4)), g(4));
  EXPECT_EQ(t.Between(g(0), g(2)).gbps, 450);
  EXPECT_EQ(t.Between(g(1), g(3)).gbps, 450);
  EXPECT_EQ(t.Between(g(5), g(7)).gbps, 40);
  EXPECT_EQ(t.Between(g(5), g(7)).hops, 2);
  EXPECT_EQ(t.Between(g(5), g(7)).latency_us, 1.5);
  EXPECT_EQ(t.Between(g(4), g(6)).gbps, 25);
  EXPECT_EQ(t.Between(g(0), g(1)).gbps, 300);
  EXPECT_EQ(t.Between(t.host_gpu(1, 0), t.host_gpu(1, 1)).gbps, 450);  // DefaultLink(pcie, nvlink)
}

TEST(TidalYamlTest, LinkDefaultsAndOverrides) {
  const Topology t = Read(R"(version: 1
links:
  leaf: {gbps: 25, oversubscription: 2}
  spine: {latency_us: 9}
  node: {gbps: 30}
host_types:
  plain: {gpus: 2}
  nv: {gpus: 2, nvlink: true}
  own: {gpus: 2, link: {gbps: 10, latency_us: 1, hops: 1}}
root:
  level: spine
  name: s
  link: {oversubscription: 4}
  children:
    - level: leaf
      name: a
      hosts: a1
      host_type: plain
    - level: leaf
      name: b
      link: {hops: 2}
      hosts: b1
      host_type: nv
    - level: leaf
      name: c
      link: {gbps: 100, latency_us: 1, hops: 1, oversubscription: 1}
      hosts: c1
      host_type: own
)");
  EXPECT_EQ(Named(t, "s").link, (LinkSpec{50, 9, 3, 4}));
  EXPECT_EQ(Named(t, "a").link, (LinkSpec{25, 5, 1, 2}));
  EXPECT_EQ(Named(t, "b").link, (LinkSpec{25, 5, 2, 2}));
  EXPECT_EQ(Named(t, "c").link, (LinkSpec{100, 1, 1, 1}));
  EXPECT_EQ(Named(t, "a1").link, (LinkSpec{30, 3, 1, 1}));  // links.node for host types without a link of their own
  EXPECT_EQ(Named(t, "b1").link, DefaultLink(Level::kNode, true));  // but not for NVLink hosts
  EXPECT_EQ(Named(t, "c1").link, (LinkSpec{10, 1, 1, 1}));
  EXPECT_EQ(t.Between(t.host_gpu(0, 0), t.host_gpu(1, 0)).gbps, 50.0 / 2);
  EXPECT_THAT(t.notes(), ElementsAre("node (NVLink) links: the input gives no bandwidth; using tidal's default 450 GB/s per GPU"));
}

TEST(TidalYamlTest, NvlinkRailsSwitchesAndNotes) {
  const Topology t = Read(R"(version: 1
notes: [from a survey]
host_types:
  gb200: {gpus: 4, nvlink: true}
root:
  level: spine
  name: s
  switches: 8
  children:
    - level: leaf
      name: rail
      rails: 4
      switches: 4
      hosts: r[1-2]
      host_type: gb200
    - level: block
      names: nvl[1-2]
      nvlink: true
      hosts: n[1-4]
      host_type: gb200
)");
  EXPECT_EQ(Named(t, "s").switches, 8);
  EXPECT_EQ(Named(t, "rail").rails, 4);
  EXPECT_EQ(Named(t, "rail").switches, 4);
  EXPECT_TRUE(Named(t, "nvl2").nvlink);
  EXPECT_EQ(Named(t, "nvl2").link, DefaultLink(Level::kBlock, true));
  EXPECT_EQ(t.gpus_under(t.NvlinkDomain(t.host_gpu(3, 0))), 8);
  EXPECT_EQ(t.Rail(t.host_gpu(1, 3)), 3);
  EXPECT_EQ(t.notes().front(), "from a survey");
}

// --- bad input: file:line and the problem ------------------------------------

struct Bad {
  const char* what;
  std::string yaml;
  std::string message;  // the whole message, or its start when it ends in "..."
};

TEST(TidalYamlTest, BadInputNamesFileLineAndProblem) {
  const std::string v = "version: 1\n";
  const std::string leaf = v + "root:\n  level: leaf\n  name: l\n";  // lines 2-4
  const std::string ht = v + "host_types:\n  t:\n";                   // a host type body from line 4
  const std::string tail = "root:\n  level: leaf\n  name: l\n  hosts: h1\n  host_type: t\n";
  const std::vector<Bad> rows = {
      {"not YAML", v + "root: [a\n", "t.yaml:3: not valid YAML: ..."},
      {"not a mapping", "- a\n- b\n", "t.yaml:1: a tidal topology is a YAML mapping with version: 1"},
      {"no version", "root: {level: leaf, name: l, hosts: h}\n", "t.yaml:1: missing 'version: 1'"},
      {"version 2", "version: 2\nroot: {level: leaf, name: l, hosts: h}\n",
       "t.yaml:1: version 2 is not supported (this tidal reads version 1)"},
      {"version type", "version: one\n", "t.yaml:1: version has the wrong type ('one')"},
      {"unknown top key", v + "rot: {}\n",
       "t.yaml:2: unknown key 'rot' in the document (known: version, name, links, host_types, root, notes)"},
      {"no root", v + "name: x\n", "t.yaml: missing 'root:' (the tree of domains)"},
      {"entry no level", v + "root:\n  name: l\n", "t.yaml:3: a domain entry needs a level (block, leaf, spine, core or zone)"},
      {"entry not a map", v + "root: leaf\n", "t.yaml:2: a domain entry must be a mapping of keys"},
      {"unknown level", v + "root:\n  level: leef\n  name: l\n",
       "t.yaml:3: unknown level 'leef'; use gpu, nvlink, pcie, node, block, leaf, spine, core or zone"},
      {"gpu entry", v + "root:\n  level: pcie\n  name: l\n",
       "t.yaml:3: level pcie is not a domain entry; GPUs and their groups go in host_types"},
      {"name and names", leaf + "  names: m[1-2]\n", "t.yaml:3: give name or names, not both"},
      {"no name", v + "root:\n  level: leaf\n  hosts: h1\n", "t.yaml:3: a domain entry needs a name (or names: a[1-4])"},
      {"no names", v + "root:\n  level: leaf\n  names: []\n", "t.yaml:3: the entry names no domains"},
      {"unknown entry key", leaf + "  hosts: h1\n  childs: []\n",
       "t.yaml:6: unknown key 'childs' in a domain entry (known: level, name, names, per, link, nvlink, rails, switches, children, "
       "hosts, hosts_per, host_type)"},
      {"bad host list", leaf + "  hosts: h[1-\n", "t.yaml:5: host list 'h[1-': '[' is never closed"},
      {"reversed names", v + "root:\n  level: leaf\n  names: l[3-1]\n", "t.yaml:4: host list 'l[3-1]': range '3-1' runs backwards"},
      {"unknown host type", leaf + "  hosts: h1\n  host_type: gone\n", "t.yaml:6: unknown host_type 'gone'; define it under host_types"},
      {"host type no hosts", ht + "    gpus: 1\n" + "root:\n  level: leaf\n  name: l\n  host_type: t\n",
       "t.yaml:8: host_type without hosts"},
      {"children not a list", leaf + "  children: {level: node}\n", "t.yaml:5: children must be a list of entries"},
      {"link key", leaf + "  link: {gbs: 3}\n  hosts: h\n",
       "t.yaml:5: unknown key 'gbs' in a link (known: gbps, latency_us, hops, oversubscription)"},
      {"link not a map", leaf + "  link: 3\n  hosts: h\n", "t.yaml:5: a link must be a mapping of keys"},
      {"gbps 0", leaf + "  link: {gbps: 0}\n  hosts: h\n", "t.yaml:5: gbps = 0 is outside [0.001, 1000000]"},
      {"gbps type", leaf + "  link: {gbps: fast}\n  hosts: h\n", "t.yaml:5: gbps has the wrong type ('fast')"},
      {"latency < 0", leaf + "  link: {latency_us: -1}\n  hosts: h\n", "t.yaml:5: latency_us = -1 is outside [0, 1000000]"},
      {"hops 65", leaf + "  link: {hops: 65}\n  hosts: h\n", "t.yaml:5: hops = 65 is outside [0, 64]"},
      {"oversubscription < 1", leaf + "  link:\n    oversubscription: 0.5\n  hosts: h\n",
       "t.yaml:6: oversubscription = 0.5 is outside [1, 1000]"},
      {"rails 65", leaf + "  rails: 65\n  hosts: h\n", "t.yaml:5: rails = 65 is outside [0, 64]"},
      {"switches 0", leaf + "  switches: 0\n  hosts: h\n", "t.yaml:5: switches = 0 is outside [1, 4096]"},
      {"per 0", leaf + "  per: 0\n  hosts: h\n", "t.yaml:5: per = 0 is outside [1, 10000000]"},
      {"nvlink type", leaf + "  nvlink: maybe\n  hosts: h\n", "t.yaml:5: nvlink has the wrong type ('maybe')"},
      {"links level", v + "links:\n  tor: {gbps: 1}\n" + "root: {level: leaf, name: l, hosts: h}\n",
       "t.yaml:3: unknown key 'tor' in links (known: nvlink, pcie, node, block, leaf, spine, core, zone)"},
      {"host_types list", v + "host_types: [a]\nroot: {level: leaf, name: l, hosts: h}\n",
       "t.yaml:2: host_types must map names to host types"},
      {"host type key", ht + "    gpu: 8\n" + tail,
       "t.yaml:4: unknown key 'gpu' in a host type (known: gpus, gpu_model, nvlink, link, groups)"},
      {"gpus 5000", ht + "    gpus: 5000\n" + tail, "t.yaml:4: gpus = 5000 is outside [0, 4096]"},
      {"gpus type", ht + "    gpus: eight\n" + tail, "t.yaml:4: gpus has the wrong type ('eight')"},
      {"groups not a list", ht + "    gpus: 2\n    groups: 3\n" + tail, "t.yaml:5: groups must be a list"},
      {"group key", ht + "    gpus: 2\n    groups:\n      - {level: pcie, gpu: [0]}\n" + tail,
       "t.yaml:6: unknown key 'gpu' in a GPU group (known: level, name, gpus, nvlink, link)"},
      {"group level", ht + "    gpus: 2\n    groups:\n      - {level: node, gpus: [0]}\n" + tail,
       "t.yaml:6: a GPU group's level is pcie or nvlink, not 'node'"},
      {"group without gpus", ht + "    gpus: 2\n    groups:\n      - {level: pcie}\n" + tail,
       "t.yaml:6: a GPU group needs gpus: [indices]"},
      {"group gpus type", ht + "    gpus: 2\n    groups:\n      - {level: pcie, gpus: [a]}\n" + tail,
       "t.yaml:6: gpus has the wrong type ('...')"},
      {"group out of range", ht + "    gpus: 2\n    groups:\n      - {level: pcie, name: g, gpus: [0, 2]}\n" + tail,
       "t.yaml:10: t.yaml: host 'h1': group 'g' names GPUs outside 0..1 or twice"},
      {"groups overlap", ht + "    gpus: 4\n    groups:\n      - {name: a, gpus: [0, 1]}\n      - {name: b, gpus: [1, 2]}\n" + tail,
       "t.yaml:11: t.yaml: host 'h1': GPU groups 'b' and 'a' overlap without one holding the other"},
      {"duplicate name", leaf + "  hosts: [h1, l]\n", "t.yaml:5: t.yaml: the name 'l' is used twice; switch, block and host names must be unique"},
      {"leaf under leaf", leaf + "  children:\n    - level: leaf\n      name: m\n      hosts: h\n",
       "t.yaml:6: t.yaml: leaf 'm' is under leaf 'l'; a parent must be at a higher level ..."},
      {"two zones", v + "root:\n  - {level: zone, name: z1, hosts: a}\n  - {level: zone, name: z2, hosts: b}\n",
       "t.yaml: 2 top-level items (zone 'z1' (t.yaml:3), zone 'z2' (t.yaml:4)) have no common parent and one of them is a zone; ..."},
      {"notes type", v + "notes: {a: b}\nroot: {level: leaf, name: l, hosts: h}\n", "t.yaml:2: notes has the wrong type ('...')"},
  };
  ASSERT_GE(rows.size(), 15u);
  for (const Bad& b : rows) {
    const std::string got = ReadError(b.yaml);
    if (b.message.ends_with("...")) {
      EXPECT_THAT(got, StartsWith(b.message.substr(0, b.message.size() - 3))) << b.what << "\n" << b.yaml;
    } else {
      EXPECT_EQ(got, b.message) << b.what << "\n" << b.yaml;
    }
  }
}

}  // namespace
}  // namespace tidal::topo

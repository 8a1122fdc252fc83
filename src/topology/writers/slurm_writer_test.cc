// Slurm topology writers: exact output for the fixtures, and write -> read
// back -> the same domains (name, level, parent, hosts under, parallel
// switches, rails) for every fixture and for tidal topologies of the shapes
// Slurm sites run: a 3-tier tree, NVL72 blocks under leaves, mixed depths and
// a DGX SuperPOD-style rail group; what Slurm cannot say is an error or a
// '# tidal:' comment, asserted exactly.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "topology/formats.h"
#include "topology/hostlist.h"
#include "topology/readers/slurm.h"
#include "topology/readers/slurm_test_util.h"
#include "topology/readers/tidal_yaml.h"
#include "topology/writers/slurm.h"

namespace tidal::topo {
namespace {

using slurm_test::Dom;
using slurm_test::Fixture;
using slurm_test::Hosts;
std::map<std::string, Dom> Domains(const Topology& t) { return slurm_test::Domains(t, /*with_hosts=*/true); }

// Writes t both ways, reads each back and checks the format detection.
struct Back {
  std::string conf, yaml;
  std::optional<Topology> from_conf, from_yaml;
};
Back RoundTrip(const Topology& t, const std::string& yaml_topology = "") {
  Back b;
  auto conf = WriteSlurmTopologyConf(t);
  EXPECT_TRUE(conf) << conf.error().message;
  if (conf) {
    b.conf = *conf;
    EXPECT_EQ(DetectFormat(b.conf, "out.conf").value_or(Format::kAuto), Format::kSlurmConf) << b.conf;
    auto r = ReadSlurmTopologyConf(b.conf, "out.conf");
    EXPECT_TRUE(r) << r.error().message << "\n" << b.conf;
    if (r) b.from_conf = std::move(*r);
  }
  auto yaml = WriteSlurmTopologyYaml(t);
  EXPECT_TRUE(yaml) << yaml.error().message;
  if (yaml) {
    b.yaml = *yaml;
    EXPECT_EQ(DetectFormat(b.yaml, "out.yaml").value_or(Format::kAuto), Format::kSlurmYaml) << b.yaml;
    auto r = ReadSlurmTopologyYaml(b.yaml, "out.yaml", yaml_topology);
    EXPECT_TRUE(r) << r.error().message << "\n" << b.yaml;
    if (r) b.from_yaml = std::move(*r);
  }
  return b;
}

void ExpectSame(const Topology& a, const std::optional<Topology>& b, const std::string& text) {
  ASSERT_TRUE(b.has_value()) << text;
  EXPECT_EQ(Domains(a), Domains(*b)) << text;
  EXPECT_EQ(Hosts(a), Hosts(*b)) << text;
}

Topology Tidal(const std::string& yaml) {
  auto t = ReadTidalYaml(yaml, "t.yaml");
  EXPECT_TRUE(t) << t.error().message;
  return std::move(*t);
}

TEST(SlurmWriter, EveryFixtureRoundTrips) {
  if (!slurm_test::HaveFixtures()) GTEST_SKIP() << "no fixtures at " << slurm_test::kDir;
  int checked = 0;
  for (const std::string& name : slurm_test::FixtureNames()) {
    const std::string text = Fixture(name);
    std::vector<std::string> topologies = {""};
    if (name.ends_with(".yaml")) topologies = {"", "topo1", "topo2"};
    for (const auto& which : topologies) {
      SCOPED_TRACE(name + " " + which);
      auto t = name.ends_with(".yaml") ? ReadSlurmTopologyYaml(text, name, which) : ReadSlurmTopologyConf(text, name);
      ASSERT_TRUE(t) << t.error().message;
      const bool blocks = !t->domains_at(Level::kBlock).empty();
      // With blocks, topology.yaml holds a tree and a block topology; read both into one.
      Back b = RoundTrip(*t, blocks ? "tree+block" : "");
      ExpectSame(*t, b.from_conf, b.conf);
      ExpectSame(*t, b.from_yaml, b.yaml);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 9);
}

TEST(SlurmWriter, ExactConfOfTheFixtures) {
  if (!slurm_test::HaveFixtures()) GTEST_SKIP() << "no fixtures at " << slurm_test::kDir;
  auto tree = ReadSlurmTopologyConf(Fixture("slurm-man5-topology-tree.conf"), "tree.conf");
  ASSERT_TRUE(tree);
  EXPECT_EQ(*WriteSlurmTopologyConf(*tree),
            "# topology.conf for TopologyPlugin=topology/tree, written by tidal from tree.conf\n"
            "SwitchName=s0 Nodes=dev[0-5]\n"
            "SwitchName=s1 Nodes=dev[6-11]\n"
            "SwitchName=s2 Nodes=dev[12-17]\n"
            "SwitchName=s3 Switches=s[0-2]\n");
  // The merged spine s[4-7] goes back as its four switches, which the reader merges again.
  auto ex2 = ReadSlurmTopologyConf(Fixture("slurm-topology-guide-ex2-two-level-linkspeed.conf"), "ex2.conf");
  ASSERT_TRUE(ex2);
  EXPECT_EQ(*WriteSlurmTopologyConf(*ex2),
            "# topology.conf for TopologyPlugin=topology/tree, written by tidal from ex2.conf\n"
            "SwitchName=s0 Nodes=tux[0-3]\n"
            "SwitchName=s1 Nodes=tux[4-7]\n"
            "SwitchName=s2 Nodes=tux[8-11]\n"
            "SwitchName=s3 Nodes=tux[12-15]\n"
            "SwitchName=s4 Switches=s[0-3]\n"
            "SwitchName=s5 Switches=s[0-3]\n"
            "SwitchName=s6 Switches=s[0-3]\n"
            "SwitchName=s7 Switches=s[0-3]\n");
  // BlockSizes: the smallest block is the base (Slurm's first value, in nodes), then doublings up to all blocks.
  auto block = ReadSlurmTopologyConf(Fixture("slurm-man5-topology-block.conf"), "block.conf");
  ASSERT_TRUE(block);
  EXPECT_EQ(*WriteSlurmTopologyConf(*block),
            "# topology.conf for TopologyPlugin=topology/block, written by tidal from block.conf\n"
            "BlockName=block1 Nodes=node[1-32]\n"
            "BlockName=block2 Nodes=node[33-64]\n"
            "BlockName=block3 Nodes=node[65-96]\n"
            "BlockName=block4 Nodes=node[97-128]\n"
            "BlockSizes=32,64,128\n");
  auto ring = ReadSlurmTopologyConf(Fixture("slurm-man5-topology-ring.conf"), "ring.conf");
  ASSERT_TRUE(ring);
  EXPECT_EQ(*WriteSlurmTopologyConf(*ring),
            "# topology.conf for TopologyPlugin=topology/block, written by tidal from ring.conf\n"
            "BlockName=ring0 Nodes=node[01-08]\n"
            "BlockName=ring1 Nodes=node[09-16]\n"
            "BlockSizes=8,16\n");
}

TEST(SlurmWriter, ExactYamlOfTheFixture) {
  if (!slurm_test::HaveFixtures()) GTEST_SKIP() << "no fixtures at " << slurm_test::kDir;
  auto t = ReadSlurmTopologyYaml(Fixture("slurm-man5-topology.yaml"), "topology.yaml", "topo2");
  ASSERT_TRUE(t);
  EXPECT_EQ(*WriteSlurmTopologyYaml(*t),
            "# topology.yaml written by tidal from topology.yaml\n"
            "- topology: tree\n"
            "  cluster_default: true\n"
            "  tree:\n"
            "    switches:\n"
            "      - switch: cluster\n"
            "        nodes: node[01-16]\n"
            "- topology: block\n"
            "  cluster_default: false\n"
            "  block:\n"
            "    block_sizes: [4, 8, 16]\n"
            "    blocks:\n"
            "      - block: b1\n"
            "        nodes: node[01-04]\n"
            "      - block: b2\n"
            "        nodes: node[05-08]\n"
            "      - block: b3\n"
            "        nodes: node[09-12]\n"
            "      - block: b4\n"
            "        nodes: node[13-16]\n");
}

TEST(SlurmWriter, ThreeTierTreeRoundTrips) {
  const Topology t = Tidal(R"(version: 1
host_types:
  h100: {gpus: 8, gpu_model: H100, nvlink: true, groups: [{level: pcie, gpus: [0, 1, 2, 3]}, {level: pcie, gpus: [4, 5, 6, 7]}]}
root:
  level: core
  name: core0
  children:
    - level: spine
      names: spine[1-2]
      children:
        - level: leaf
          names: leaf[1-4]
          hosts: gpu[001-016]
          host_type: h100
)");
  Back b = RoundTrip(t);
  ExpectSame(t, b.from_conf, b.conf);
  ExpectSame(t, b.from_yaml, b.yaml);
  EXPECT_EQ(b.conf,
            "# topology.conf for TopologyPlugin=topology/tree, written by tidal from t.yaml\n"
            "SwitchName=leaf1 Nodes=gpu[001-004]\n"
            "SwitchName=leaf2 Nodes=gpu[005-008]\n"
            "SwitchName=spine1 Switches=leaf[1-2]\n"
            "SwitchName=leaf3 Nodes=gpu[009-012]\n"
            "SwitchName=leaf4 Nodes=gpu[013-016]\n"
            "SwitchName=spine2 Switches=leaf[3-4]\n"
            "SwitchName=core0 Switches=spine[1-2]\n");  // sub-node (pcie) groups are not written
  ASSERT_TRUE(b.from_conf);
  EXPECT_EQ(b.from_conf->domain(b.from_conf->root()).level, Level::kCore);
}

TEST(SlurmWriter, TreeWithNvl72BlocksRoundTripsThroughYaml) {
  const Topology t = Tidal(R"(version: 1
host_types:
  gb200: {gpus: 4, gpu_model: GB200, nvlink: true}
root:
  level: spine
  name: spine0
  children:
    - level: leaf
      names: leaf[1-2]
      children:
        - level: block
          names: nvl72-[1-4]
          nvlink: true
          hosts: gb-[001-072]
          host_type: gb200
)");
  Back b = RoundTrip(t, "tree+block");
  ExpectSame(t, b.from_yaml, b.yaml);  // the tree and the blocks, read into one tree
  // topology.conf holds one plugin's lines: the block form, the switches in a comment.
  EXPECT_EQ(b.conf,
            "# topology.conf for TopologyPlugin=topology/block, written by tidal from t.yaml\n"
            "# tidal: NVLink domains, which Slurm's files cannot mark: block(s) nvl72-[1-4]\n"
            "# tidal: the 3 switch domains above the blocks are not written: topology.conf holds one plugin's lines; export "
            "--to slurm-yaml for the tree and the blocks\n"
            "BlockName=nvl72-1 Nodes=gb-[001-018]\n"
            "BlockName=nvl72-2 Nodes=gb-[019-036]\n"
            "BlockName=nvl72-3 Nodes=gb-[037-054]\n"
            "BlockName=nvl72-4 Nodes=gb-[055-072]\n"
            "BlockSizes=18,36,72\n");
  ASSERT_TRUE(b.from_conf);
  EXPECT_EQ(Domains(*b.from_conf).at("nvl72-3"), (Dom{"block", "cluster", "gb-[037-054]"}));
  EXPECT_EQ(Hosts(*b.from_conf), Hosts(t));
  // The default topology of the YAML is the tree alone: hosts straight under the leaves.
  auto tree_only = ReadSlurmTopologyYaml(b.yaml, "out.yaml");
  ASSERT_TRUE(tree_only);
  EXPECT_EQ(Domains(*tree_only).at("leaf2"), (Dom{"leaf", "spine0", "gb-[037-072]"}));
  EXPECT_TRUE(tree_only->domains_at(Level::kBlock).empty());
}

TEST(SlurmWriter, MixedDepthsRoundTrip) {
  // leaf3 hangs straight off the core, next to a spine.
  const Topology t = Tidal(R"(version: 1
root:
  level: core
  name: core0
  children:
    - level: spine
      name: spine1
      children:
        - level: leaf
          names: leaf[1-2]
          hosts: a[1-8]
    - level: leaf
      name: leaf3
      hosts: b[1-4]
)");
  Back b = RoundTrip(t);
  ExpectSame(t, b.from_conf, b.conf);
  ExpectSame(t, b.from_yaml, b.yaml);
  EXPECT_EQ(Domains(t).at("leaf3"), (Dom{"leaf", "core0", "b[1-4]"}));
}

TEST(SlurmWriter, DgxRailGroupsRoundTrip) {
  // A SuperPOD-style scalable unit: 8 rail leaves per 32 DGX hosts, GPU i on rail i.
  const Topology t = Tidal(R"(version: 1
host_types:
  dgx: {gpus: 8, gpu_model: H100, nvlink: true}
root:
  level: spine
  name: spine0
  switches: 2
  children:
    - level: leaf
      names: su[1-2]-rails
      rails: 8
      switches: 8
      hosts: dgx[001-064]
      host_type: dgx
)");
  Back b = RoundTrip(t);
  // A merged domain goes back as its member switches; names that are no
  // host list of them get -1..-k and so read back as "name-[1-k]".
  const std::map<std::string, Dom> want = {
      {"spine0-[1-2]", {"spine", "", "dgx[001-064]", 2, 0}},
      {"su1-rails-[1-8]", {"leaf", "spine0-[1-2]", "dgx[001-032]", 8, 8}},
      {"su2-rails-[1-8]", {"leaf", "spine0-[1-2]", "dgx[033-064]", 8, 8}},
  };
  for (const auto* back : {&b.from_conf, &b.from_yaml}) {
    ASSERT_TRUE(back->has_value());
    auto got = Domains(**back);
    for (const auto& [name, dom] : want) EXPECT_EQ(got.at(name), dom) << name;
    EXPECT_EQ(got.size(), want.size() + 64);
    EXPECT_EQ(Hosts(**back), Hosts(t));
  }
  EXPECT_NE(b.conf.find("# tidal: leaf 'su1-rails' of 8 parallel switches is written as su1-rails-[1-8] (they read back as one "
                        "domain named so)\n"), std::string::npos) << b.conf;
  EXPECT_NE(b.conf.find("SwitchName=su2-rails-8 Nodes=dgx[033-064]\nSwitchName=spine0-1 Switches=su1-rails-[1-8],su2-rails-[1-8]\n"
                        "SwitchName=spine0-2 Switches=su1-rails-[1-8],su2-rails-[1-8]\n"), std::string::npos) << b.conf;
  // Once named by the reader ("s[4-7]"), a merged domain round-trips exactly.
  ASSERT_TRUE(b.from_conf);
  Back again = RoundTrip(*b.from_conf);
  ExpectSame(*b.from_conf, again.from_conf, again.conf);
  ExpectSame(*b.from_conf, again.from_yaml, again.yaml);
}

TEST(SlurmWriter, HostsNextToSwitchesGetALeafOfTheirOwn) {
  // switch_record.c rejects a switch with both Nodes= and Switches=.
  const Topology t = Tidal(R"(version: 1
root:
  level: spine
  name: spine1
  children:
    - level: leaf
      name: leaf1
      hosts: a[1-4]
    - level: node
      names: c[1-2]
)");
  auto conf = WriteSlurmTopologyConf(t);
  ASSERT_TRUE(conf) << conf.error().message;
  EXPECT_EQ(*conf,
            "# topology.conf for TopologyPlugin=topology/tree, written by tidal from t.yaml\n"
            "# tidal: 'spine1-nodes' is a leaf switch tidal adds for the hosts directly under spine 'spine1': a Slurm switch holds "
            "either nodes or switches\n"
            "SwitchName=leaf1 Nodes=a[1-4]\n"
            "SwitchName=spine1-nodes Nodes=c[1-2]\n"
            "SwitchName=spine1 Switches=leaf1,spine1-nodes\n");
  auto back = ReadSlurmTopologyConf(*conf, "out.conf");
  ASSERT_TRUE(back) << back.error().message;
  auto want = Domains(t);
  want["spine1-nodes"] = {"leaf", "spine1", "c[1-2]"};
  want["c1"].parent = want["c2"].parent = "spine1-nodes";
  EXPECT_EQ(Domains(*back), want);
  EXPECT_EQ(Hosts(*back), Hosts(t));
}

TEST(SlurmWriter, OneHostAndEmptySwitches) {
  auto one = WriteSlurmTopologyConf(Tidal("version: 1\nroot: {level: node, name: h1}\n"));
  ASSERT_TRUE(one) << one.error().message;
  EXPECT_EQ(*one,
            "# topology.conf for TopologyPlugin=topology/tree, written by tidal from t.yaml\n"
            "# tidal: 'cluster' is a switch tidal adds: Slurm's tree needs one above the nodes\n"
            "SwitchName=cluster Nodes=h1\n");
  auto empty = WriteSlurmTopologyConf(Tidal(
      "version: 1\nroot:\n  level: spine\n  name: sp\n  children:\n    - {level: leaf, name: l1, hosts: 'n[1-2]'}\n    - {level: leaf, name: l2}\n"));
  ASSERT_TRUE(empty) << empty.error().message;
  EXPECT_EQ(*empty,
            "# topology.conf for TopologyPlugin=topology/tree, written by tidal from t.yaml\n"
            "# tidal: leaf 'l2' has no hosts under it and is left out (Slurm would take it for an empty leaf)\n"
            "SwitchName=l1 Nodes=n[1-2]\n"
            "SwitchName=sp Switches=l1\n");
}

TEST(SlurmWriter, WhatSlurmCannotSayIsAnError) {
  const Topology spaced = Tidal("version: 1\nroot: {level: leaf, name: l, hosts: ['a b', c]}\n");
  for (auto r : {WriteSlurmTopologyConf(spaced), WriteSlurmTopologyYaml(spaced)}) {
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message,
              "t.yaml: host name 'a b' contains the control or blank character 0x20; Slurm names have no blanks, quotes, '#', '=', "
              "'\\' or host-list punctuation ([ ] ,)");
  }
  const Topology long_name = Tidal("version: 1\nroot: {level: leaf, name: " + std::string(70, 's') + ", hosts: 'n[1-2]'}\n");
  auto l = WriteSlurmTopologyConf(long_name);
  ASSERT_FALSE(l);
  EXPECT_NE(l.error().message.find("t.yaml: switch name 'sss"), std::string::npos) << l.error().message;
  EXPECT_NE(l.error().message.find("has 70 characters; Slurm allows at most 64"), std::string::npos) << l.error().message;
  // topology/block leaves hosts outside blocks out of every allocation: the
  // block form would lose them, topology.yaml keeps them in its tree.
  const Topology partial = Tidal(R"(version: 1
root:
  level: leaf
  name: tor
  children:
    - {level: block, name: rack1, hosts: 'g[1-4]'}
    - {level: node, names: 'cpu[1-2]'}
)");
  auto c = WriteSlurmTopologyConf(partial);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().message.rfind("t.yaml: 2 host(s) are in no block (cpu[1-2]); topology/block leaves such nodes out", 0), 0u)
      << c.error().message;
  auto y = WriteSlurmTopologyYaml(partial);
  ASSERT_TRUE(y) << y.error().message;
  EXPECT_EQ(*y,
            "# topology.yaml written by tidal from t.yaml\n"
            "# tidal: 2 host(s) are in no block (cpu[1-2]); partitions on topology 'block' cannot use them\n"
            "- topology: tree\n"
            "  cluster_default: true\n"
            "  tree:\n"
            "    switches:\n"
            "      - switch: tor\n"
            "        nodes: g[1-4],cpu[1-2]\n"
            "- topology: block\n"
            "  cluster_default: false\n"
            "  block:\n"
            "    block_sizes: [4]\n"
            "    blocks:\n"
            "      - block: rack1\n"
            "        nodes: g[1-4]\n");
  auto back = ReadSlurmTopologyYaml(*y, "out.yaml", "tree+block");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(Domains(*back), Domains(partial));
}

// Whatever the reader accepts, the writers write, and it reads back the same:
// over thousands of mutated fixtures (odd names, merged switches, missing
// parents, moved nodes), not only over the shapes chosen above.
TEST(SlurmWriter, MutatedFixturesRoundTrip) {
  if (!slurm_test::HaveFixtures()) GTEST_SKIP() << "no fixtures at " << slurm_test::kDir;
  int round_trips = 0;
  for (const std::string& name : slurm_test::FixtureNames()) {
    const std::string text = Fixture(name);
    const bool yaml = name.ends_with(".yaml");
    std::mt19937_64 rng(slurm_test::Seed(name) + 1);
    for (int i = 0; i < 2000; ++i) {
      const std::string m = slurm_test::Mutate(text, rng);
      auto t = yaml ? ReadSlurmTopologyYaml(m, "fuzz.src", i % 2 ? "topo2" : "") : ReadSlurmTopologyConf(m, "fuzz.src");
      if (!t) continue;
      const bool blocks = !t->domains_at(Level::kBlock).empty();
      auto conf = WriteSlurmTopologyConf(*t);
      ASSERT_TRUE(conf) << conf.error().message << "\n--- from:\n" << m;
      auto back = ReadSlurmTopologyConf(*conf, "back.conf");
      ASSERT_TRUE(back) << back.error().message << "\n--- wrote:\n" << *conf << "--- from:\n" << m;
      ASSERT_EQ(Domains(*t), Domains(*back)) << *conf << "--- from:\n" << m;
      ASSERT_EQ(Hosts(*t), Hosts(*back));
      auto y = WriteSlurmTopologyYaml(*t);
      ASSERT_TRUE(y) << y.error().message;
      auto yback = ReadSlurmTopologyYaml(*y, "back.yaml", blocks ? "tree+block" : "");
      ASSERT_TRUE(yback) << yback.error().message << "\n--- wrote:\n" << *y << "--- from:\n" << m;
      auto want = Domains(*t);
      if (t->level(t->root()) == Level::kBlock) {
        // One block: topology.yaml's tree needs a switch above it, which reads back.
        want[t->domain(t->root()).name].parent = "cluster";
        want["cluster"] = {"leaf", "", want[t->domain(t->root()).name].hosts};
      }
      ASSERT_EQ(want, Domains(*yback)) << *y << "--- from:\n" << m;
      ASSERT_EQ(Hosts(*t), Hosts(*yback));
      ++round_trips;
    }
  }
  EXPECT_GT(round_trips, 2000);
}

TEST(SlurmWriter, CliShapedDispatch) {
  const Topology t = Tidal("version: 1\nroot: {level: leaf, name: l, hosts: 'n[1-2]'}\n");
  auto conf = WriteTopology(t, ExportFormat::kSlurmConf);
  auto yaml = WriteTopology(t, ExportFormat::kSlurmYaml);
  ASSERT_TRUE(conf && yaml);
  EXPECT_EQ(*conf, "# topology.conf for TopologyPlugin=topology/tree, written by tidal from t.yaml\nSwitchName=l Nodes=n[1-2]\n");
  auto back = ParseTopology(*yaml, "y");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(Domains(*back), Domains(t));
}

}  // namespace
}  // namespace tidal::topo

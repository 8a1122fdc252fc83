// Slurm topology.conf / topology.yaml reader: every fixture of
// shared/fixtures/slurm with its exact structure, the syntax rules of Slurm's
// parser, a table of bad inputs (file, line, problem), and mutated fixtures
// that must never crash the reader.
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

namespace tidal::topo {
namespace {

using slurm_test::Dom;
using slurm_test::Domains;
using slurm_test::Fixture;
using slurm_test::Hosts;

#define NEED_FIXTURES() \
  if (!slurm_test::HaveFixtures()) GTEST_SKIP() << "no fixtures at " << slurm_test::kDir

std::string Notes(const Topology& t) {
  std::string s;
  for (const auto& n : t.notes()) s += n + "\n";
  return s;
}

std::vector<Level> Levels(std::initializer_list<Level> l) { return l; }

TEST(SlurmReader, ManPageTree) {
  NEED_FIXTURES();
  auto t = ReadSlurmTopologyConf(Fixture("slurm-man5-topology-tree.conf"), "tree.conf");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(Hosts(*t), *ExpandHostlist("dev[0-17]"));
  EXPECT_EQ(Domains(*t), (std::map<std::string, Dom>{{"s3", {"spine", "", "dev[0-17]"}},
                                                     {"s0", {"leaf", "s3", "dev[0-5]"}},
                                                     {"s1", {"leaf", "s3", "dev[6-11]"}},
                                                     {"s2", {"leaf", "s3", "dev[12-17]"}}}));
  EXPECT_EQ(t->levels(), Levels({Level::kNode, Level::kLeaf, Level::kSpine}));
  EXPECT_EQ(t->domain(t->root()).name, "s3");
  EXPECT_FALSE(t->gpus_known());
  for (int32_t h = 0; h < t->num_hosts(); ++h) EXPECT_EQ(t->layout(h).gpus, -1);
  EXPECT_EQ(t->total_gpus(), 0);
}

TEST(SlurmReader, GuideThreeLevels) {
  NEED_FIXTURES();
  auto t = ReadSlurmTopologyConf(Fixture("slurm-topology-guide-ex1-three-level.conf"), "ex1.conf");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(Hosts(*t), *ExpandHostlist("tux[0-7]"));
  EXPECT_EQ(Domains(*t), (std::map<std::string, Dom>{{"s6", {"core", "", "tux[0-7]"}},
                                                     {"s4", {"spine", "s6", "tux[0-3]"}},
                                                     {"s5", {"spine", "s6", "tux[4-7]"}},
                                                     {"s0", {"leaf", "s4", "tux[0-1]"}},
                                                     {"s1", {"leaf", "s4", "tux[2-3]"}},
                                                     {"s2", {"leaf", "s5", "tux[4-5]"}},
                                                     {"s3", {"leaf", "s5", "tux[6-7]"}}}));
  EXPECT_EQ(t->levels(), Levels({Level::kNode, Level::kLeaf, Level::kSpine, Level::kCore}));
}

TEST(SlurmReader, GuideLinkSpeedAndSpinePlanesMerge) {
  NEED_FIXTURES();
  auto t = ReadSlurmTopologyConf(Fixture("slurm-topology-guide-ex2-two-level-linkspeed.conf"), "ex2.conf");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(Hosts(*t), *ExpandHostlist("tux[0-15]"));
  // s4..s7 all connect s[0-3]: one spine domain of four parallel switches.
  EXPECT_EQ(Domains(*t), (std::map<std::string, Dom>{{"s[4-7]", {"spine", "", "tux[0-15]", 4, 0}},
                                                     {"s0", {"leaf", "s[4-7]", "tux[0-3]"}},
                                                     {"s1", {"leaf", "s[4-7]", "tux[4-7]"}},
                                                     {"s2", {"leaf", "s[4-7]", "tux[8-11]"}},
                                                     {"s3", {"leaf", "s[4-7]", "tux[12-15]"}}}));
  ASSERT_EQ(t->domains_at(Level::kSpine).size(), 1u);
  // LinkSpeed is relative and unused by Slurm: tidal's default bandwidths stay, the values go to a note.
  const Domain& spine = t->domain(t->domains_at(Level::kSpine)[0]);
  EXPECT_EQ(spine.link, DefaultLink(Level::kSpine, false));
  EXPECT_EQ(t->domain(t->domains_at(Level::kLeaf)[3]).link, DefaultLink(Level::kLeaf, false));
  const std::string notes = Notes(*t);
  EXPECT_NE(notes.find("LinkSpeed is in arbitrary units and unused by Slurm (topology.conf(5)): s[0-2] 900; s[3-7] 1800; "
                       "fastest/slowest = 2; tidal keeps its default link bandwidths"),
            std::string::npos)
      << notes;
  EXPECT_NE(notes.find("switches s[4-7] have the same child switches (s[0-3]): one domain with 4 parallel switches"), std::string::npos)
      << notes;
}

TEST(SlurmReader, GuideLeafPlusTop) {
  NEED_FIXTURES();
  auto t = ReadSlurmTopologyConf(Fixture("slurm-topology-guide-ex3-leaf-plus-top.conf"), "ex3.conf");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(Hosts(*t), *ExpandHostlist("tux[0-15]"));
  EXPECT_EQ(Domains(*t), (std::map<std::string, Dom>{{"s4", {"spine", "", "tux[0-15]"}},
                                                     {"s0", {"leaf", "s4", "tux[0-3]"}},
                                                     {"s1", {"leaf", "s4", "tux[4-7]"}},
                                                     {"s2", {"leaf", "s4", "tux[8-11]"}},
                                                     {"s3", {"leaf", "s4", "tux[12-15]"}}}));
  // No LinkSpeed, no merged or parentless switches: only the builder's default-bandwidth notes.
  EXPECT_EQ(Notes(*t),
            "node links: the input gives no bandwidth; using tidal's default 20 GB/s per GPU\n"
            "leaf links: the input gives no bandwidth; using tidal's default 50 GB/s per GPU\n"
            "spine links: the input gives no bandwidth; using tidal's default 50 GB/s per GPU\n");
}

TEST(SlurmReader, ManPageBlocksWithBlockSizesBelowTheBlocks) {
  NEED_FIXTURES();
  auto t = ReadSlurmTopologyConf(Fixture("slurm-man5-topology-block.conf"), "block.conf");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(Hosts(*t), *ExpandHostlist("node[1-128]"));
  EXPECT_EQ(Domains(*t), (std::map<std::string, Dom>{{"cluster", {"leaf", "", "node[1-128]"}},
                                                     {"block1", {"block", "cluster", "node[1-32]"}},
                                                     {"block2", {"block", "cluster", "node[33-64]"}},
                                                     {"block3", {"block", "cluster", "node[65-96]"}},
                                                     {"block4", {"block", "cluster", "node[97-128]"}}}));
  for (DomainId b : t->domains_at(Level::kBlock)) EXPECT_FALSE(t->domain(b).nvlink);
  // BlockSizes=30,120 with 32-node blocks: Slurm accepts it (120 = 30 x 2^2); 2 nodes a block are spares.
  const std::string notes = Notes(*t);
  EXPECT_NE(notes.find("BlockSizes: the base block is 30 nodes; Slurm also places jobs in aggregates of 4 blocks (120 nodes)"),
            std::string::npos) << notes;
  EXPECT_NE(notes.find("blocks block[1-4] have 32 nodes, more than the base block size 30: Slurm plans 30 nodes per block and "
                       "keeps 2 as spares"), std::string::npos) << notes;
  EXPECT_NE(notes.find("NVL72"), std::string::npos) << notes;
}

TEST(SlurmReader, ManPageRingsBecomeBlocks) {
  NEED_FIXTURES();
  auto t = ReadSlurmTopologyConf(Fixture("slurm-man5-topology-ring.conf"), "ring.conf");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(Hosts(*t), *ExpandHostlist("node[01-16]"));
  EXPECT_EQ(Domains(*t), (std::map<std::string, Dom>{{"cluster", {"leaf", "", "node[01-16]"}},
                                                     {"ring0", {"block", "cluster", "node[01-08]"}},
                                                     {"ring1", {"block", "cluster", "node[09-16]"}}}));
  EXPECT_NE(Notes(*t).find("topology/ring: each ring is a block-level domain with its hosts in ring order"), std::string::npos);
}

TEST(SlurmReader, RingOrderIsKept) {
  auto t = ReadSlurmTopologyConf("RingName=r Nodes=n3,n1,n2\n", "r.conf");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(Hosts(*t), (std::vector<std::string>{"n3", "n1", "n2"}));
  EXPECT_EQ(t->domain(t->root()).name, "r");  // one ring: no synthetic root
}

TEST(SlurmReader, ManPageYamlDefaultNamedAndFlat) {
  NEED_FIXTURES();
  const std::string text = Fixture("slurm-man5-topology.yaml");
  auto t = ReadSlurmTopologyYaml(text, "topology.yaml");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(Hosts(*t), *ExpandHostlist("node[01-04]"));
  EXPECT_EQ(Domains(*t), (std::map<std::string, Dom>{{"sw_root", {"leaf", "", "node[01-04]"}}}));
  EXPECT_NE(Notes(*t).find("read topology 'topo1' (cluster_default) of 3; the file also has topo2 (block), topo3 (flat)"),
            std::string::npos) << Notes(*t);

  auto b = ReadSlurmTopologyYaml(text, "topology.yaml", "topo2");
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_EQ(Hosts(*b), *ExpandHostlist("node[01-16]"));
  EXPECT_EQ(Domains(*b), (std::map<std::string, Dom>{{"cluster", {"leaf", "", "node[01-16]"}},
                                                     {"b1", {"block", "cluster", "node[01-04]"}},
                                                     {"b2", {"block", "cluster", "node[05-08]"}},
                                                     {"b3", {"block", "cluster", "node[09-12]"}},
                                                     {"b4", {"block", "cluster", "node[13-16]"}}}));
  EXPECT_NE(Notes(*b).find("the base block is 4 nodes; Slurm also places jobs in aggregates of 4 blocks (16 nodes)"),
            std::string::npos) << Notes(*b);

  auto f = ReadSlurmTopologyYaml(text, "topology.yaml", "topo3");
  ASSERT_FALSE(f);
  EXPECT_NE(f.error().message.find("topology.yaml:22: topology 'topo3' is flat (topology/flat)"), std::string::npos)
      << f.error().message;

  auto n = ReadSlurmTopologyYaml(text, "topology.yaml", "topo9");
  ASSERT_FALSE(n);
  EXPECT_EQ(n.error().message, "topology.yaml: no topology named 'topo9'; the file has topo1 (tree), topo2 (block), topo3 (flat)");

  // topo1's one switch holds node[01-04] only, so topo2's blocks cannot sit inside it.
  auto c = ReadSlurmTopologyYaml(text, "topology.yaml", "topo1+topo2");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("topology.yaml:16: host 'node05' of block 'b2' is on no switch of tree topology 'topo1'"),
            std::string::npos) << c.error().message;
}

TEST(SlurmReader, FixturesAreDetectedAndDispatched) {
  NEED_FIXTURES();
  ASSERT_EQ(slurm_test::FixtureNames().size(), 7u);
  for (const std::string& name : slurm_test::FixtureNames()) {
    const std::string text = Fixture(name);
    auto f = DetectFormat(text, name);
    ASSERT_TRUE(f) << name << ": " << f.error().message;
    EXPECT_EQ(*f, name.ends_with(".yaml") ? Format::kSlurmYaml : Format::kSlurmConf) << name;
    auto t = ParseTopology(text, name);
    EXPECT_TRUE(t) << name << ": " << t.error().message;
  }
}

TEST(SlurmReader, ConfSyntaxCaseCommentsContinuationQuotesEscapes) {
  // parse_config.c: keys in any case, '#' comments, '\' continues a line,
  // "quoted" values, blanks around '=', "\#" is a literal '#', CRLF.
  const std::string text =
      "switchname=s0 NODES=tux[0-1]   # leaf\r\n"
      "\r\n"
      "  SWITCHNAME = s1 \\\n"
      "      nodes=\"tux[2-3]\"\n"
      "SwitchName=s2 Switches=s[0-1] linkspeed=10 # top\n"
      "# SwitchName=s9 Nodes=ignored\n";
  auto t = ReadSlurmTopologyConf(text, "syntax.conf");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(Hosts(*t), *ExpandHostlist("tux[0-3]"));
  EXPECT_EQ(Domains(*t), (std::map<std::string, Dom>{{"s2", {"spine", "", "tux[0-3]"}},
                                                     {"s0", {"leaf", "s2", "tux[0-1]"}},
                                                     {"s1", {"leaf", "s2", "tux[2-3]"}}}));
  auto nt = ReadSlurmTopologyConf("SwitchName=s0 Nodes=a,\\\nb,c\n", "cont.conf");
  ASSERT_TRUE(nt) << nt.error().message;
  EXPECT_EQ(Hosts(*nt), (std::vector<std::string>{"a", "b", "c"}));
}

TEST(SlurmReader, ParallelLeavesAreARailGroup) {
  auto t = ReadSlurmTopologyConf("SwitchName=r1 Nodes=n[1-4]\nSwitchName=r2 Nodes=n[1-4]\nSwitchName=top Switches=r[1-2]\n", "r.conf");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(Domains(*t), (std::map<std::string, Dom>{{"top", {"spine", "", "n[1-4]"}}, {"r[1-2]", {"leaf", "top", "n[1-4]", 2, 2}}}));
  EXPECT_NE(Notes(*t).find("switches r[1-2] list the same nodes: one leaf domain with 2 parallel switches, a rail group of 2 rails"),
            std::string::npos) << Notes(*t);
}

TEST(SlurmReader, LeavesWithoutCommonParentGetASyntheticRoot) {
  // Topology Guide: removing "SwitchName=s4 Switches=s[0-3]" is legal.
  auto t = ReadSlurmTopologyConf("SwitchName=s0 Nodes=tux[0-3]\nSwitchName=s1 Nodes=tux[4-7]\n", "two.conf");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(Domains(*t), (std::map<std::string, Dom>{{"cluster", {"spine", "", "tux[0-7]"}},
                                                     {"s0", {"leaf", "cluster", "tux[0-3]"}},
                                                     {"s1", {"leaf", "cluster", "tux[4-7]"}}}));
  EXPECT_NE(Notes(*t).find("s[0-1] have no common parent switch: Slurm runs no job across them unless TopologyParam=TopoOptional"),
            std::string::npos) << Notes(*t);
}

TEST(SlurmReader, SyntheticRootNeverTakesAFileName) {
  // Switches "cluster" and "cluster-root" and no common parent: the root tidal adds is a third name.
  auto t = ReadSlurmTopologyConf("SwitchName=cluster Nodes=a\nSwitchName=cluster-root Nodes=b\n", "cr.conf");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(Domains(*t), (std::map<std::string, Dom>{{"cluster-root2", {"spine", "", "a,b"}},
                                                     {"cluster", {"leaf", "cluster-root2", "a"}},
                                                     {"cluster-root", {"leaf", "cluster-root2", "b"}}}));
  auto b = ReadSlurmTopologyConf("BlockName=b1 Nodes=cluster\nBlockName=b2 Nodes=n1\n", "cb.conf");
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_EQ(Domains(*b), (std::map<std::string, Dom>{{"cluster-root", {"leaf", "", "cluster,n1"}},
                                                     {"b1", {"block", "cluster-root", "cluster"}},
                                                     {"b2", {"block", "cluster-root", "n1"}}}));
}

TEST(SlurmReader, BlocksWithoutBlockSizesAndSmallBlocks) {
  auto t = ReadSlurmTopologyConf("BlockName=b1 Nodes=n[1-18]\nBlockName=b2 Nodes=n[19-36]\nBlockName=b3 Nodes=n[37-52]\n", "b.conf");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->domains_at(Level::kBlock).size(), 3u);
  EXPECT_EQ(t->num_hosts(), 52);
  const std::string notes = Notes(*t);
  EXPECT_NE(notes.find("no BlockSizes: Slurm takes the first block's 18 nodes as the base block size"), std::string::npos) << notes;
  EXPECT_NE(notes.find("block b3 has only 16 nodes, fewer than the base block size 18"), std::string::npos) << notes;
  auto s = ReadSlurmTopologyConf("BlockSizes=18,36,144\nBlockName=b1 Nodes=n[1-18]\n", "s.conf");  // 144 = 18 x 8: valid
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->domain(s->root()).name, "b1");
}

TEST(SlurmReader, YamlTreeWithBlocksCombined) {
  const std::string text =
      "---\n"
      "- topology: fabric\n"
      "  cluster_default: true\n"
      "  tree:\n"
      "    switches:\n"
      "      - switch: leaf1\n"
      "        nodes: gb[01-08]\n"
      "      - switch: leaf2\n"
      "        nodes: gb[09-16]\n"
      "      - switch: spine\n"
      "        children: leaf[1-2]\n"
      "- topology: racks\n"
      "  block:\n"
      "    block_sizes: [4]\n"
      "    blocks:\n"
      "      - {block: r1, nodes: 'gb[01-04]'}\n"
      "      - {block: r2, nodes: 'gb[05-08]'}\n"
      "      - {block: r3, nodes: 'gb[09-16]'}\n"
      "- topology: rings\n"
      "  ring: {rings: [{ring: x, nodes: 'gb[01-16]'}]}\n"
      "- topology: torus\n"
      "  torus3d: {toruses: []}\n"
      "- topology: plain\n"
      "  flat: {alpha_step_rank: true}\n";
  auto t = ReadSlurmTopologyYaml(text, "c.yaml", "fabric+racks");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(Domains(*t), (std::map<std::string, Dom>{{"spine", {"spine", "", "gb[01-16]"}},
                                                     {"leaf1", {"leaf", "spine", "gb[01-08]"}},
                                                     {"leaf2", {"leaf", "spine", "gb[09-16]"}},
                                                     {"r1", {"block", "leaf1", "gb[01-04]"}},
                                                     {"r2", {"block", "leaf1", "gb[05-08]"}},
                                                     {"r3", {"block", "leaf2", "gb[09-16]"}}}));
  EXPECT_EQ(Hosts(*t), *ExpandHostlist("gb[01-16]"));
  auto r = ReadSlurmTopologyYaml(text, "c.yaml", "racks+fabric");  // either order
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(Domains(*r), Domains(*t));
  auto ring = ReadSlurmTopologyYaml(text, "c.yaml", "rings");
  ASSERT_TRUE(ring) << ring.error().message;
  EXPECT_EQ(Domains(*ring), (std::map<std::string, Dom>{{"x", {"block", "", "gb[01-16]"}}}));
  auto torus = ReadSlurmTopologyYaml(text, "c.yaml", "torus");
  ASSERT_FALSE(torus);
  EXPECT_NE(torus.error().message.find("c.yaml:21: topology 'torus' is a 3D torus"), std::string::npos) << torus.error().message;
  auto bad = ReadSlurmTopologyYaml(text, "c.yaml", "racks+rings");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("only a tree topology and a block (or ring) topology combine"), std::string::npos);
}

TEST(SlurmReader, YamlWithoutClusterDefaultReadsTheFirst) {
  auto t = ReadSlurmTopologyYaml("- topology: a\n  block:\n    blocks:\n      - block: b\n        nodes: n[1-2]\n"
                                 "- topology: b\n  tree:\n    switches:\n      - switch: s\n        nodes: m1\n",
                                 "d.yaml");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(Domains(*t), (std::map<std::string, Dom>{{"b", {"block", "", "n[1-2]"}}}));
  EXPECT_NE(Notes(*t).find("read topology 'a' (the first; none has cluster_default: true) of 2"), std::string::npos) << Notes(*t);
}

// --- bad inputs --------------------------------------------------------------

struct Bad {
  const char* what;
  bool yaml;
  std::string text;
  std::string topology;  // yaml: which topology to read
  std::string where;     // "file:line" the message must name
  std::string problem;   // and this
};

const std::vector<Bad>& BadInputs() {
  static const std::vector<Bad> k = {
      {"unknown switch", false, "SwitchName=s0 Nodes=a[1-2]\nSwitchName=s1 Switches=s0,s9\n", "", "bad.conf:2",
       "switch 's1' lists 's9' in Switches=, but no switch of that name is defined"},
      {"node in two leaves", false, "SwitchName=s0 Nodes=n[1-4]\nSwitchName=s1 Nodes=n[4-6]\nSwitchName=s2 Switches=s[0-1]\n", "",
       "bad.conf:2", "host 'n4' is under both 's0' (bad.conf:1) and 's1' (bad.conf:2)"},
      {"cycle", false, "SwitchName=s0 Switches=s1\nSwitchName=s1 Switches=s0\nSwitchName=s2 Nodes=n1\n", "", "bad.conf:",
       "the switches form a cycle (s0 -> s1 -> s0)"},
      {"self cycle", false, "SwitchName=s0 Switches=s0\n", "", "bad.conf:1", "switch 's0' lists itself in Switches="},
      {"duplicate switch", false, "SwitchName=s0 Nodes=n1\nSwitchName=s1 Nodes=n2\nSwitchName=s0 Nodes=n3\n", "", "bad.conf:3",
       "switch 's0' is declared twice (first at bad.conf:1)"},
      {"reversed range", false, "SwitchName=s0 Nodes=node[3-1]\n", "", "bad.conf:1", "range '3-1' runs backwards"},
      {"unclosed bracket", false, "# c\nSwitchName=s0 Nodes=node[1-3\n", "", "bad.conf:2", "'[' is never closed"},
      {"unknown key", false, "SwitchName=s0 Nodes=n1 Speed=5\n", "", "bad.conf:1",
       "unknown key 'Speed' on a SwitchName line (SwitchName takes Switches=, Nodes= and LinkSpeed=)"},
      {"unknown first key", false, "SwitchName=s0 Nodes=n1\nNodeName=n1\n", "", "bad.conf:2", "unknown key 'NodeName'"},
      {"missing Nodes and Switches", false, "SwitchName=s0 Nodes=n1\nSwitchName=s1\n", "", "bad.conf:2",
       "switch 's1' has neither Nodes= nor Switches="},
      {"both Nodes and Switches", false, "SwitchName=s0 Nodes=n1\nSwitchName=s1 Nodes=n2 Switches=s0\n", "", "bad.conf:2",
       "switch 's1' has both Nodes= and Switches="},
      {"truncated line", false, "SwitchName=s0 Nodes=n[1-2]\nSwitchName=s1 Nodes=", "", "bad.conf:2",
       "Nodes= has no value; the line looks truncated"},
      {"truncated before next key", false, "SwitchName=s0 Nodes= LinkSpeed=5\n", "", "bad.conf:1", "Nodes= has no value"},
      {"no '='", false, "SwitchName=s0 Nodes\n", "", "bad.conf:1", "'Nodes' is not followed by '='"},
      {"block mixed with switch", false, "SwitchName=s0 Nodes=n1\nBlockName=b1 Nodes=n2\n", "", "bad.conf:2",
       "BlockName= in a file of tree lines (since line 1); topology.conf holds one plugin's lines"},
      {"BlockSizes in a tree", false, "SwitchName=s0 Nodes=n1\nBlockSizes=4\n", "", "bad.conf:2", "BlockSizes= in a file of tree lines"},
      {"switches as a node", false, "SwitchName=s0 Nodes=n1\nSwitchName=s1 Switches=n1\n", "", "bad.conf:2",
       "'n1' is a node; nodes go in Nodes="},
      {"node is a switch", false, "SwitchName=s0 Nodes=n1\nSwitchName=s1 Nodes=s0\n", "", "bad.conf:2", "'s0' is both a host and a switch"},
      {"operator", false, "SwitchName=s0 Nodes+=n1\n", "", "bad.conf:1", "topology.conf takes no operators"},
      {"key twice", false, "SwitchName=s0 Nodes=n1 Nodes=n2\n", "", "bad.conf:1", "Nodes= is given twice on one line"},
      {"bad LinkSpeed", false, "SwitchName=s0 Nodes=n1 LinkSpeed=fast\n", "", "bad.conf:1", "LinkSpeed=fast is not a whole number"},
      {"long switch name", false, "SwitchName=" + std::string(65, 'x') + " Nodes=n1\n", "", "bad.conf:1", "has 65 characters; Slurm allows at most 64"},
      {"bad BlockSizes", false, "BlockName=b1 Nodes=n[1-4]\nBlockSizes=4,12\n", "", "bad.conf:2",
       "BlockSizes value 12 is not the base block size 4 times a power of two"},
      {"BlockSizes not a number", false, "BlockName=b1 Nodes=n[1-4]\nBlockSizes=4,x\n", "", "bad.conf:2", "BlockSizes value 'x' is not a whole number"},
      {"node in two blocks", false, "BlockName=b1 Nodes=n[1-4]\nBlockName=b2 Nodes=n[4-8]\n", "", "bad.conf:2",
       "node 'n4' is in block 'b1' and in block 'b2' (bad.conf:1)"},
      {"duplicate block", false, "BlockName=b1 Nodes=n[1-4]\nBlockName=b1 Nodes=n[5-8]\n", "", "bad.conf:2",
       "block 'b1' is defined twice (first at bad.conf:1)"},
      {"block without nodes", false, "BlockName=b1\n", "", "bad.conf:1", "block 'b1' names no nodes"},
      {"ring too big", false, "RingName=r0 Nodes=n[1-17]\n", "", "bad.conf:1", "ring 'r0' has 17 nodes; Slurm allows at most 16"},
      {"ends in continuation", false, "SwitchName=s0 Nodes=n1\nSwitchName=s1 \\", "", "bad.conf:2", "ends inside a line continued"},
      {"huge range", false, "SwitchName=s0 Nodes=n[1-99999999]\n", "", "bad.conf:1", "names more than 65536 hosts in one bracket"},
      {"blank in a name", false, "SwitchName=\"s 0\" Nodes=n1\n", "", "bad.conf:1", "SwitchName 's 0' contains the control or blank character 0x20"},
      {"Include", false, "Include other.conf\n", "", "bad.conf:1", "Include is not supported"},
      {"comments only", false, "# nothing here\n\n", "", "bad.conf", "no SwitchName=, BlockName= or RingName= lines"},
      {"yaml syntax", true, "- topology: t\n  tree:\n    switches: [\n", "", "bad.yaml:4", "not valid YAML"},
      {"yaml unknown key", true, "- topology: t\n  tree:\n    switches:\n    - switch: s0\n      Nodes: n1\n", "", "bad.yaml:5",
       "unknown key 'Nodes' in a switch (topology.yaml(5) keys are lower case: switch, children, nodes)"},
      {"yaml unknown topology", true, "- topology: t\n  tree: {switches: [{switch: s, nodes: n1}]}\n", "other", "bad.yaml",
       "no topology named 'other'; the file has t (tree)"},
      {"yaml flat chosen", true, "- topology: a\n  cluster_default: true\n  flat: true\n- topology: b\n  tree: {switches: [{switch: s, nodes: n1}]}\n",
       "", "bad.yaml:1", "topology 'a' is flat (topology/flat)"},
      {"yaml two types", true, "- topology: t\n  flat: true\n  tree: {switches: [{switch: s, nodes: n1}]}\n", "", "bad.yaml:1",
       "topology 't' has both flat and tree"},
      {"yaml no type", true, "- topology: t\n  cluster_default: true\n", "", "bad.yaml:1", "topology 't' has no type"},
      {"yaml duplicate topology", true, "- topology: t\n  flat: true\n- topology: t\n  flat: true\n", "", "bad.yaml:3",
       "topology 't' is defined twice (first at bad.yaml:1)"},
      {"yaml bad host list", true, "- topology: t\n  tree:\n    switches:\n      - switch: s\n        nodes: n[5-2]\n", "", "bad.yaml:5",
       "range '5-2' runs backwards"},
      {"yaml unknown child", true, "- topology: t\n  tree:\n    switches:\n      - switch: s\n        nodes: n1\n      - switch: u\n        children: s,x\n",
       "", "bad.yaml:6", "switch 'u' lists 'x' in children:, but no switch of that name is defined; add '- switch: x'"},
      {"yaml nodes and children", true, "- topology: t\n  tree:\n    switches:\n      - switch: s\n        nodes: n1\n        children: s\n",
       "", "bad.yaml:4", "switch 's' has both nodes: and children:"},
      {"yaml switch without members", true, "- topology: t\n  tree:\n    switches:\n      - switch: s\n      - {switch: u, nodes: n1}\n",
       "", "bad.yaml:4", "switch 's' has neither nodes: nor children:"},
      {"yaml empty nodes", true, "- topology: t\n  block:\n    blocks:\n      - block: b\n        nodes: ''\n", "", "bad.yaml:5",
       "nodes: is empty; give a host list"},
      {"yaml not a list", true, "topology: t\nflat: true\n", "", "bad.yaml:1", "topology.yaml is a list of topologies"},
      {"yaml empty", true, "# nothing\n", "", "bad.yaml", "the file holds no topologies"},
      {"yaml nodes as a list", true, "- topology: t\n  tree:\n    switches:\n      - switch: s\n        nodes: [a, b]\n", "", "bad.yaml:5",
       "nodes must be a single value, like node[01-04]"},
      {"yaml bad block_sizes", true, "- topology: t\n  block:\n    block_sizes: [4, many]\n    blocks: [{block: b, nodes: 'n[1-4]'}]\n", "",
       "bad.yaml:3", "block_sizes value 'many' is not a whole number"},
      {"yaml error in another topology", true,
       "- topology: a\n  cluster_default: true\n  tree: {switches: [{switch: s, nodes: n1}]}\n- topology: b\n  block:\n    blocks:\n"
       "      - {block: x, nodes: n1}\n      - {block: x, nodes: n2}\n",
       "", "bad.yaml:8", "block 'x' is defined twice (first at bad.yaml:7)"},
  };
  return k;
}

TEST(SlurmReader, BadInputsNameFileLineAndProblem) {
  ASSERT_GE(BadInputs().size(), 12u);
  for (const Bad& b : BadInputs()) {
    SCOPED_TRACE(b.what);
    auto t = b.yaml ? ReadSlurmTopologyYaml(b.text, "bad.yaml", b.topology) : ReadSlurmTopologyConf(b.text, "bad.conf");
    ASSERT_FALSE(t) << "accepted: " << b.text;
    const std::string& m = t.error().message;
    EXPECT_EQ(m.rfind(b.where, 0), 0u) << m;  // the message starts with file:line
    EXPECT_NE(m.find(b.problem), std::string::npos) << m;
  }
}

// --- robustness ---------------------------------------------------------------

TEST(SlurmReader, MutatedFixturesNeverCrash) {
  NEED_FIXTURES();
  int accepted = 0, rejected = 0;
  for (const std::string& name : slurm_test::FixtureNames()) {
    const std::string text = Fixture(name);
    const bool yaml = name.ends_with(".yaml");
    std::mt19937_64 rng(slurm_test::Seed(name));
    for (int i = 0; i < 3000; ++i) {
      const std::string m = slurm_test::Mutate(text, rng);
      auto t = yaml ? ReadSlurmTopologyYaml(m, "fuzz.src", i % 3 == 0 ? "topo2" : "") : ReadSlurmTopologyConf(m, "fuzz.src");
      if (t) {
        ++accepted;
        ASSERT_GT(t->num_hosts(), 0) << m;
      } else {
        ++rejected;
        ASSERT_NE(t.error().message.find("fuzz.src"), std::string::npos) << t.error().message << "\n--- input:\n" << m;
      }
      // Detection and dispatch too, where the mutant still looks like a Slurm file.
      auto f = DetectFormat(m, "fuzz.src");
      if (f && (*f == Format::kSlurmConf || *f == Format::kSlurmYaml)) {
        auto any = ParseTopology(m, "fuzz.src", *f);
        if (!any) {
          ASSERT_NE(any.error().message.find("fuzz.src"), std::string::npos) << any.error().message;
        }
      }
    }
  }
  EXPECT_GT(accepted, 1000);
  EXPECT_GT(rejected, 1000);
}

TEST(SlurmReader, HostileInputs) {
  EXPECT_FALSE(ReadSlurmTopologyYaml(std::string(20000, '[') , "deep.yaml"));
  EXPECT_FALSE(ReadSlurmTopologyYaml("- topology: t\n  tree: {switches: [{switch: s, nodes: 'n[1-60000]x[1-60000]'}]}\n", "prod.yaml"));
  EXPECT_FALSE(ReadSlurmTopologyConf(std::string(1 << 20, '\\'), "bs.conf"));
  EXPECT_FALSE(ReadSlurmTopologyConf(std::string("SwitchName=s0 Nodes=a\0b\n", 24), "nul.conf"));
  auto big = ReadSlurmTopologyConf("SwitchName=s0 Nodes=n[1-65536]\n", "big.conf");  // Slurm's limit itself is fine
  ASSERT_TRUE(big) << big.error().message;
  EXPECT_EQ(big->num_hosts(), 65536);
}

}  // namespace
}  // namespace tidal::topo

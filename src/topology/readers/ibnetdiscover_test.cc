// InfiniBand reader: every fixture in shared/fixtures/ibnetdiscover with
// exact trees and rates, the qdr-single-switch set read by four tools,
// synthetic fabrics (rails, three tiers, triangles), the rate table, bad
// inputs, and random damage that must never crash.
//
// The TRUNCATED EDR fat tree keeps only its six Switch blocks. Its hosts are
// taken from the switch port lines (named by the descriptions there), with a
// note counting the CAs that had no Ca block: the switch blocks are whole, so
// nothing is lost, and no host is dropped.
#include "topology/readers/ibnetdiscover.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <random>

#include "topology/builder.h"
#include "topology/formats.h"
#include "topology/readers/ibnetdiscover_fabric.h"
#include "topology/readers/reader_test_util.h"

namespace tidal::topo {
namespace {

using testing::FixtureDir;
using testing::FixtureFiles;
using testing::Slurp;

const std::string kDir = FixtureDir("ibnetdiscover");

Result<Topology> ReadFixture(const std::string& file) { return ReadIbnetdiscover(Slurp(kDir + file), file); }

bool HasNote(const Topology& t, std::string_view part) {
  for (const auto& n : t.notes())
    if (n.find(part) != std::string::npos) return true;
  return false;
}

std::vector<std::string> HostsUnder(const Topology& t, DomainId d) {
  std::vector<std::string> out;
  for (int32_t h = t.first_host(d); h < t.first_host(d) + t.hosts_under(d); ++h) out.push_back(t.domain(t.host(h)).name);
  return out;
}

std::vector<std::string> ChildHosts(const Topology& t, DomainId d) {
  std::vector<std::string> out;
  for (DomainId k : t.children(d))
    if (t.level(k) == Level::kNode) out.push_back(t.domain(k).name);
  return out;
}

// Everything about the tree but where it came from: for comparing two readings.
std::string Describe(const Topology& t) {
  std::string s;
  for (DomainId d = 0; d < t.num_domains(); ++d) {
    const Domain& x = t.domain(d);
    s += fmt::format("{} {} parent={} link={}/{}/{}/{} nv={} rails={} sw={}\n", LevelName(x.level), x.name,
                     x.parent == kNoDomain ? "-" : t.domain(x.parent).name, x.link.gbps, x.link.latency_us, x.link.hops,
                     x.link.oversubscription, x.nvlink, x.rails, x.switches);
  }
  return s;
}

LinkSpec Rated(Level l, double gbps, double over = 1) {
  LinkSpec s = DefaultLink(l, false);
  s.gbps = gbps;
  s.oversubscription = over;
  return s;
}

const double kSdr4 = 1.0, kQdr4 = 4.0, kEdr4 = 12.5, kFdr4 = 4 * (14.0625 * 64 / 66) / 8;

TEST(IbFixtures, EveryFixtureIsCovered) {
  TIDAL_REQUIRE_DIR(kDir);
  EXPECT_EQ(FixtureFiles(kDir), (std::vector<std::string>{
                                    "edr-fattree-6switch-switches-only-TRUNCATED.topo",
                                    "ibm-platform-cluster-manager-sdr-2hca.topo",
                                    "nvidia-ibdiagpath-article-switchib-edr-mixed.topo",
                                    "oracle-sun-dcs36-qdr.topo",
                                    "qdr-single-switch-ibhosts.txt",
                                    "qdr-single-switch-iblinkinfo.txt",
                                    "qdr-single-switch-ibswitches.txt",
                                    "qdr-single-switch.topo",
                                    "rdma-core-manpage-example.topo",
                                })) << "a fixture was added or removed: give it exact expectations below";
}

TEST(IbFixtures, DetectFormatSaysIbnetdiscoverForEveryFixture) {
  TIDAL_REQUIRE_DIR(kDir);
  for (const auto& f : FixtureFiles(kDir)) {
    auto r = DetectFormat(Slurp(kDir + f), f);
    ASSERT_TRUE(r) << f << ": " << r.error().message;
    EXPECT_EQ(*r, Format::kIbnetdiscover) << f;
  }
}

TEST(IbFixtures, EdrFatTreeTruncatedToSwitchBlocks) {
  TIDAL_REQUIRE_DIR(kDir);
  auto t = ReadFixture("edr-fattree-6switch-switches-only-TRUNCATED.topo");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->num_hosts(), 96);
  EXPECT_EQ(t->levels(), (std::vector<Level>{Level::kNode, Level::kLeaf, Level::kSpine}));
  ASSERT_EQ(t->domains_at(Level::kSpine).size(), 1u);
  ASSERT_EQ(t->domains_at(Level::kLeaf).size(), 4u);
  const DomainId spine = t->domains_at(Level::kSpine)[0];
  EXPECT_EQ(t->root(), spine);
  EXPECT_EQ(t->domain(spine).switches, 2);  // the two spine planes, merged
  EXPECT_EQ(t->domain(spine).rails, 0);
  EXPECT_EQ(t->domain(spine).name, "S-ec0d9a0300ec8200,S-ec0d9a0300ec81e0");
  EXPECT_EQ(t->domain(spine).link, Rated(Level::kSpine, kEdr4));
  const std::vector<std::string> leaves = {"S-ec0d9a0300ec8240", "S-ec0d9a0300ec8480", "S-ec0d9a0300f548e0", "S-ec0d9a0300f548c0"};
  // 24 EDR host ports over 12 uplinks; ec8480 has one uplink degraded to DDR (11 x 12.5 + 2 GB/s).
  const std::vector<double> over = {2.0, 300.0 / 139.5, 2.0, 2.0};
  for (size_t i = 0; i < 4; ++i) {
    const DomainId l = t->domains_at(Level::kLeaf)[i];
    EXPECT_EQ(t->domain(l).name, leaves[i]);
    EXPECT_EQ(t->parent(l), spine);
    EXPECT_EQ(t->hosts_under(l), 24);
    EXPECT_EQ(t->domain(l).switches, 1);
    EXPECT_DOUBLE_EQ(t->domain(l).link.gbps, kEdr4);
    EXPECT_DOUBLE_EQ(t->domain(l).link.oversubscription, over[i]);
    EXPECT_EQ(t->domain(l).link.hops, DefaultLink(Level::kLeaf, false).hops);
  }
  EXPECT_EQ(HostsUnder(*t, t->domains_at(Level::kLeaf)[0]).front(), "node018");
  EXPECT_EQ(HostsUnder(*t, t->domains_at(Level::kLeaf)[3]).back(), "node039");
  for (const char* h : {"bee01", "bee02", "controller", "login01", "gpu001", "gpu045", "node046"}) EXPECT_TRUE(t->FindHost(h)) << h;
  EXPECT_TRUE(HasNote(*t, "96 CA(s) have no Ca block (the dump seems cut after the switch blocks)"));
  EXPECT_TRUE(HasNote(*t, "1 switch link(s) run below the 12.5 GB/s of most switch links (S-ec0d9a0300ec8200[11] - "
                          "S-ec0d9a0300ec8480[11] at 4xDDR)"));
  // With 8 GPUs a host: across leaves, EDR over the worse of the two uplinks' oversubscription.
  std::vector<NodeGpus> nodes;
  for (int32_t h = 0; h < t->num_hosts(); ++h) nodes.push_back({t->domain(t->host(h)).name, 8, ""});
  auto m = Materialize(*t, nodes);
  ASSERT_TRUE(m) << m.error().message;
  const int32_t a = *m->FindHost("node018"), b = *m->FindHost("gpu045"), c = *m->FindHost("node020");
  EXPECT_DOUBLE_EQ(m->Between(m->host_gpu(a, 0), m->host_gpu(b, 0)).gbps, kEdr4 / (300.0 / 139.5));
  EXPECT_DOUBLE_EQ(m->Between(m->host_gpu(a, 0), m->host_gpu(c, 0)).gbps, kEdr4);
}

TEST(IbFixtures, ManpageExampleHasDefaultDescriptionsAndTwoTiers) {
  TIDAL_REQUIRE_DIR(kDir);
  auto t = ReadFixture("rdma-core-manpage-example.topo");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->num_hosts(), 4);
  EXPECT_EQ(t->levels(), (std::vector<Level>{Level::kNode, Level::kLeaf, Level::kSpine}));
  const DomainId top = t->root(), leaf = t->domains_at(Level::kLeaf)[0];
  // Both switches have hosts; the 24-port ISR9024 is above the 8-port SW-6IB4.
  EXPECT_EQ(t->domain(top).name, "S-005442ba00003080");
  EXPECT_EQ(t->domain(leaf).name, "S-0008f10400410015");
  EXPECT_EQ(ChildHosts(*t, top), (std::vector<std::string>{"H-0008f10403960558", "H-0008f10403961354"}));
  EXPECT_EQ(ChildHosts(*t, leaf), (std::vector<std::string>{"H-005442b100004900", "H-0008f10403960984"}));
  // Uplinks 1xSDR (one end says 4xSDR: the slower wins) + 4xSDR = 1.25 GB/s under 2 GB/s of hosts.
  EXPECT_EQ(t->domain(leaf).link, Rated(Level::kLeaf, kSdr4, 1.6));
  EXPECT_EQ(t->domain(top).link, Rated(Level::kSpine, kSdr4));
  EXPECT_TRUE(HasNote(*t, "4 CA(s) keep the adapter's default node description"));
  EXPECT_TRUE(HasNote(*t, "the two ends of 2 link(s) give different rates (line 15 says 4xSDR, line 26 says 1xSDR"));
}

TEST(IbFixtures, SmallSingleSwitchFabrics) {
  TIDAL_REQUIRE_DIR(kDir);
  struct One {
    std::string file, sw;
    std::vector<std::string> hosts;
    double gbps;
  };
  for (const One& o : std::vector<One>{
           {"ibm-platform-cluster-manager-sdr-2hca.topo", "S-000b8cffff0053ee", {"compute-00-01", "compute-00-00"}, kSdr4},
           {"oracle-sun-dcs36-qdr.topo", "S-0021283a8389a0a0", {"nsn33-43"}, kQdr4},
           {"qdr-single-switch.topo", "S-0002c9020046c588", {"ip-211", "ip-212", "ip-213", "ip-160", "ip-210"}, kQdr4},
           {"qdr-single-switch-iblinkinfo.txt", "S-0002c9020046c588", {"ip-211", "ip-212", "ip-213", "ip-160", "ip-210"}, kQdr4},
       }) {
    SCOPED_TRACE(o.file);
    auto t = ReadFixture(o.file);
    ASSERT_TRUE(t) << t.error().message;
    EXPECT_EQ(t->levels(), (std::vector<Level>{Level::kNode, Level::kLeaf}));
    EXPECT_EQ(t->num_domains(), 1 + static_cast<int32_t>(o.hosts.size()));
    EXPECT_EQ(t->domain(t->root()).name, o.sw);
    EXPECT_EQ(t->domain(t->root()).link, Rated(Level::kLeaf, o.gbps));
    EXPECT_EQ(ChildHosts(*t, t->root()), o.hosts);
    EXPECT_FALSE(t->gpus_known());
  }
}

TEST(IbFixtures, SwitchIbMixedRatesLoopbacksAndAStderrLine) {
  TIDAL_REQUIRE_DIR(kDir);
  auto t = ReadFixture("nvidia-ibdiagpath-article-switchib-edr-mixed.topo");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->num_hosts(), 5);
  EXPECT_EQ(t->levels(), (std::vector<Level>{Level::kNode, Level::kLeaf, Level::kSpine}));
  const DomainId top = t->root(), leaf = t->domains_at(Level::kLeaf)[0];
  EXPECT_EQ(t->domain(top).name, "S-e41d2d030003e470");  // 36 ports over the 12-port SX6012
  EXPECT_EQ(t->domain(leaf).name, "S-f4521403005764b0");
  EXPECT_EQ(ChildHosts(*t, top), (std::vector<std::string>{"r-ufm216", "r-ufm111"}));
  EXPECT_EQ(ChildHosts(*t, leaf), (std::vector<std::string>{"r-ufm101", "r-ufm100", "r-ufm96"}));  // r-ufm101: two CAs
  // SX6012: hosts at QDR, QDR, FDR, SDR under one FDR uplink.
  EXPECT_EQ(t->domain(leaf).link, Rated(Level::kLeaf, kQdr4, (2 * kQdr4 + kFdr4 + 1.0) / kFdr4));
  EXPECT_EQ(t->domain(top).link, Rated(Level::kSpine, kQdr4));  // QDR and FDR two each: the slower
  EXPECT_TRUE(HasNote(*t, "1 line(s) of no ibnetdiscover shape are ignored (line 1 'src/query_smp.c:195"));
  EXPECT_TRUE(HasNote(*t, "3 switch port pair(s) are cabled to the same switch (S-e41d2d030003e470[1]-[2], "
                          "S-e41d2d030003e470[19]-[21], S-e41d2d030003e470[29]-[30])"));
  EXPECT_TRUE(HasNote(*t, "host ports run at several rates (4xEDR x1, 4xFDR x2, 4xQDR x2, 4xSDR x1)"));
}

TEST(IbFixtures, QdrSetTopoAndIblinkinfoAgreeAndListsAreRefused) {
  TIDAL_REQUIRE_DIR(kDir);
  auto topo = ReadFixture("qdr-single-switch.topo");
  auto link = ReadFixture("qdr-single-switch-iblinkinfo.txt");
  ASSERT_TRUE(topo) << topo.error().message;
  ASSERT_TRUE(link) << link.error().message;
  EXPECT_EQ(Describe(*topo), Describe(*link));
  ASSERT_EQ(topo->num_hosts(), link->num_hosts());
  for (int32_t h = 0; h < topo->num_hosts(); ++h) EXPECT_EQ(topo->domain(topo->host(h)).name, link->domain(link->host(h)).name);
  for (const char* f : {"qdr-single-switch-ibhosts.txt", "qdr-single-switch-ibswitches.txt"}) {
    auto t = ReadFixture(f);
    ASSERT_FALSE(t) << f;
    const std::string& m = t.error().message;
    EXPECT_NE(m.find(std::string(f) + ":1: this is `" + (std::string(f).find("ibhosts") != std::string::npos ? "ibhosts" : "ibswitches") +
                     "` output"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("not a whole fabric"), std::string::npos) << m;
    EXPECT_NE(m.find("run `ibnetdiscover > fabric.topo` (or `iblinkinfo`)"), std::string::npos) << m;
  }
}

// --- synthetic fabrics --------------------------------------------------------

struct L {
  int port;
  std::string peer;
  int peer_port;
  std::string desc;
  std::string rate = "4xEDR";
};

std::string Block(std::string_view kind, int radix, const std::string& id, const std::string& desc, const std::vector<L>& links) {
  std::string s = fmt::format("{}guid=0x{}\n{} {} \"{}\"  # \"{}\" base port 0 lid 1 lmc 0\n", kind == "Ca" ? "ca" : "switch",
                              id.substr(2), kind, radix, id, desc);
  for (const L& l : links) s += fmt::format("[{}]\t\"{}\"[{}]\t\t# \"{}\" lid 2 {}\n", l.port, l.peer, l.peer_port, l.desc, l.rate);
  return s + "\n";
}

const std::string kA = "S-00000000000000a1", kB = "S-00000000000000a2", kC = "S-00000000000000a3", kD = "S-00000000000000a4";
std::string H(int i) { return fmt::format("H-00000000000000b{}", i); }

TEST(IbSynthetic, RailOptimisedLeavesMergeIntoOneRailGroup) {
  const std::string text = Block("Switch", 8, kA, "rail0", {{1, H(1), 1, "n1 HCA-1"}, {2, H(3), 1, "n2 HCA-1"}}) +
                           Block("Switch", 8, kB, "rail1", {{1, H(2), 1, "n1 HCA-2"}, {2, H(4), 1, "n2 HCA-2"}});
  auto t = ReadIbnetdiscover(text, "rails.topo");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->num_hosts(), 2);
  ASSERT_EQ(t->domains_at(Level::kLeaf).size(), 1u);
  const Domain& leaf = t->domain(t->domains_at(Level::kLeaf)[0]);
  EXPECT_EQ(leaf.rails, 2);
  EXPECT_EQ(leaf.switches, 2);
  EXPECT_EQ(ChildHosts(*t, t->root()), (std::vector<std::string>{"n1", "n2"}));
  EXPECT_TRUE(HasNote(*t, "4 CA(s) have no Ca block"));
}

TEST(IbSynthetic, ThreeTiersAndALonelyCa) {
  const std::string text =
      Block("Switch", 8, kA, "leaf1", {{1, H(1), 1, "h1 HCA-1"}, {2, kC, 1, "spine1"}}) +
      Block("Switch", 8, kB, "leaf2", {{1, H(2), 1, "h2 HCA-1"}, {2, kD, 1, "spine2"}}) +
      Block("Switch", 8, kC, "spine1", {{1, kA, 2, "leaf1"}, {2, "S-00000000000000c1", 1, "core"}}) +
      Block("Switch", 8, kD, "spine2", {{1, kB, 2, "leaf2"}, {2, "S-00000000000000c1", 2, "core"}}) +
      Block("Switch", 8, "S-00000000000000c1", "core", {{1, kC, 2, "spine1"}, {2, kD, 2, "spine2"}});
  auto t = ReadIbnetdiscover(text, "tiers.topo");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->levels(), (std::vector<Level>{Level::kNode, Level::kLeaf, Level::kSpine, Level::kCore}));
  EXPECT_EQ(t->domains_at(Level::kLeaf).size(), 2u);
  EXPECT_EQ(t->domains_at(Level::kSpine).size(), 2u);
  ASSERT_EQ(t->domains_at(Level::kCore).size(), 1u);
  EXPECT_EQ(t->root(), t->domains_at(Level::kCore)[0]);
  EXPECT_EQ(t->domain(t->root()).name, "S-00000000000000c1");
  EXPECT_EQ(t->domain(t->root()).link, Rated(Level::kCore, kEdr4));
  EXPECT_EQ(t->domain(t->domains_at(Level::kLeaf)[0]).link, Rated(Level::kLeaf, kEdr4));  // 1 host port, 1 uplink
  // A CA with no link is kept: the builder puts it beside the fabric under a common root.
  auto u = ReadIbnetdiscover(text + Block("Ca", 2, H(9), "spare HCA-1", {}), "tiers.topo");
  ASSERT_TRUE(u) << u.error().message;
  EXPECT_EQ(u->num_hosts(), 3);
  EXPECT_EQ(u->domain(u->root()).name, "cluster");
  EXPECT_EQ(u->level(u->root()), Level::kZone);
  EXPECT_EQ(ChildHosts(*u, u->root()), (std::vector<std::string>{"spare"}));
  EXPECT_TRUE(HasNote(*u, "1 host(s) are connected to no switch"));
}

TEST(IbSynthetic, CrlfAndRoutersAndIblinkinfoWithTwoPortCa) {
  std::string text = Block("Switch", 8, kA, "sw", {{1, H(1), 1, "n1 HCA-1", "4xHDR"}, {2, "R-00000000000000d1", 1, "rt"}}) +
                     "Rt 2 \"R-00000000000000d1\" # \"router\"\n[1] \"S-00000000000000a1\"[2] # \"sw\" lid 1 4xHDR\n";
  std::string crlf;
  for (char c : text) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  auto t = ReadIbnetdiscover(crlf, "crlf.topo");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->num_hosts(), 1);
  EXPECT_TRUE(HasNote(*t, "routers (Rt blocks) are modelled as switches"));
  EXPECT_DOUBLE_EQ(t->domain(t->domains_at(Level::kLeaf)[0]).link.gbps, 25);
  const std::string li =
      "CA: n1 HCA-1:\n"
      "      0x00000000000000b1      5    1[  ] ==( 4X        53.125 Gbps Active/  LinkUp)==>       2    1[  ] \"sw\" ( )\n"
      "      0x00000000000000b2      6    2[  ] ==( 4X        53.125 Gbps Active/  LinkUp)==>       2    2[  ] \"sw\" ( )\n"
      "Switch: 0x00000000000000a1 sw:\n"
      "           2    1[  ] ==( 4X        53.125 Gbps Active/  LinkUp)==>       5    1[  ] \"n1 HCA-1\" ( )\n"
      "           2    2[  ] ==( 4X        53.125 Gbps Active/  LinkUp)==>       6    2[  ] \"n1 HCA-1\" ( )\n"
      "           2    3[  ] ==(                Down/ Polling)==>             [  ] \"\" ( )\n"
      "           2    4[  ] ==( 4X        53.125 Gbps Active/  LinkUp)==>       9    1[  ] \"n2 HCA-1\" ( )\n";
  auto l = ReadIbnetdiscover(li, "li.txt");
  ASSERT_TRUE(l) << l.error().message;
  EXPECT_EQ(ChildHosts(*l, l->root()), (std::vector<std::string>{"n1", "n2"}));
  EXPECT_EQ(l->domain(l->root()).name, "S-00000000000000a1");
  EXPECT_EQ(l->domain(l->root()).link, Rated(Level::kLeaf, 25));
  EXPECT_TRUE(HasNote(*l, "1 CA(s) have no Ca block"));  // LID 9 has no block of its own
}

TEST(IbRates, TableAndLanes) {
  struct R {
    const char* text;
    double gbps;
  };
  for (const R& r : std::vector<R>{{"4xSDR", 1}, {"1xSDR", 0.25}, {"4xDDR", 2}, {"4xQDR", 4}, {"12xQDR", 12}, {"4xFDR10", 5},
                                   {"4xFDR", kFdr4}, {"4xEDR", 12.5}, {"4xHDR", 25}, {"2xHDR", 12.5}, {"4xNDR", 50}, {"4xXDR", 100}}) {
    ASSERT_TRUE(ib::RateFromName(r.text)) << r.text;
    EXPECT_DOUBLE_EQ(*ib::RateFromName(r.text), r.gbps) << r.text;
  }
  for (const char* bad : {"EDR", "0xEDR", "4xFOO", "4x", "x4EDR", "99xEDR", ""}) EXPECT_FALSE(ib::RateFromName(bad)) << bad;
  EXPECT_DOUBLE_EQ(*ib::RateFromLanes("4X", "10.0"), 4);
  EXPECT_DOUBLE_EQ(*ib::RateFromLanes("1X", "2.5"), 0.25);
  EXPECT_DOUBLE_EQ(*ib::RateFromLanes("4X", "14.0625"), kFdr4);
  EXPECT_DOUBLE_EQ(*ib::RateFromLanes("4X", "25.78125"), 12.5);
  EXPECT_DOUBLE_EQ(*ib::RateFromLanes("4X", "106.25"), 50);
  EXPECT_DOUBLE_EQ(*ib::RateFromLanes("4X", "20.0"), 4 * 20.0 * 64 / 66 / 8);  // not in the table: 64b/66b
  EXPECT_FALSE(ib::RateFromLanes("4X", "abc"));
  EXPECT_FALSE(ib::RateFromLanes("4", "10.0"));
}

// --- bad input ----------------------------------------------------------------

struct Bad {
  std::string name, text;
  int line;
  std::string problem;
};

TEST(IbBadInput, EachSaysFileLineAndProblem) {
  const std::string sw = "Switch 8 \"" + kA + "\" # \"sw\"\n";
  const std::string ca = "Ca 2 \"" + H(1) + "\" # \"n1 HCA-1\"\n";
  const std::string ok_port = "[1] \"" + H(1) + "\"[1] # \"n1 HCA-1\" lid 2 4xEDR\n";
  const std::vector<Bad> cases = {
      {"empty", "", 1, "no Switch or Ca block (the file is empty)"},
      {"comments only", "#\n# Topology file\n#\n", 3, "no Switch or Ca block"},
      {"port before any block", "#\n" + ok_port, 2, "a port line outside any Switch or Ca block"},
      {"port after a damaged header", "Swich 8 \"" + kA + "\"\n" + ok_port, 2,
       "outside any Switch or Ca block (line 1 before it is not a block header: 'Swich 8"},
      {"port after a key=value line", sw + ok_port + "vendid=0x2c9\n" + ok_port, 4, "a port line outside any Switch or Ca block"},
      {"bad guid in a port line", sw + "[1] \"H-00zz\"[1]\n", 2, "malformed node id 'H-00zz'"},
      {"guid too long", sw + "[1] \"H-0123456789abcdef0\"[1]\n", 2, "malformed node id 'H-0123456789abcdef0'"},
      {"bad guid in a header", "Switch 8 \"S-xyz\"\n", 1, "malformed node id 'S-xyz'"},
      {"wrong id kind", "Ca 2 \"" + kA + "\"\n", 1, "a Ca block has the id 'S-00000000000000a1'; Ca ids start with H-"},
      {"header without id", "Switch 8 # \"sw\"\n", 1, "malformed Switch header"},
      {"bad port number", sw + "[x] \"" + H(1) + "\"[1]\n", 2, "the local port number"},
      {"no peer port", sw + "[1] \"" + H(1) + "\"\n", 2, "the peer's port number"},
      {"unclosed id", sw + "[1] \"" + H(1) + "[1]\n", 2, "the peer's quoted id is not closed"},
      {"text after the link", sw + "[1] \"" + H(1) + "\"[1] lid 2\n", 2, "unexpected 'lid 2' after the link"},
      {"port out of range", sw + "[9] \"" + H(1) + "\"[1]\n", 2, "port 9 is outside 1..8, the ports of the Switch block at line 1"},
      {"port twice", sw + ok_port + ok_port, 3, "port 1 is listed twice in the Switch block at line 1 (first at line 2)"},
      {"block twice", sw + ok_port + "\n" + sw, 4, "has a second block (the first is at line 1)"},
      {"link names a CA as a switch", sw + "[1] \"S-00000000000000b1\"[1]\n\n" + ca + "[1] \"" + kA + "\"[1]\n", 2,
       "names S-00000000000000b1 as a switch, but its Ca block at line 4 says otherwise"},
      {"back link disagrees", sw + ok_port + "\n" + ca + "[1] \"" + kA + "\"[2]\n", 2,
       "port 1 links to H-00000000000000b1[1], but that port's own line (bad.topo:5) links to S-00000000000000a1[2]"},
      {"switch without a block", sw + ok_port + "[2] \"" + kB + "\"[1]\n", 3, "links to switch S-00000000000000a2, which has no block"},
      {"no hosts", sw, 1, "no CA (host adapter) on any of them"},
      {"ibswitches", "Switch  : 0x0002c9020046c588 ports 36 \"x\" base port 0 lid 2 lmc 0\n", 1, "this is `ibswitches` output"},
      {"ibhosts after comments", "# hosts\nCa  : 0x0002c903000d7aac ports 1 \"ip-160 HCA-1\"\n", 2, "this is `ibhosts` output"},
      {"iblinkinfo port outside a block", "      2    1[  ] ==( 4X 10.0 Gbps Active/ LinkUp)==>  5 1[ ] \"x\" ( )\n", 1,
       "a port line outside any CA: or Switch: block"},
      {"iblinkinfo bad switch guid", "Switch: 0xZZ sw:\n  2 1[ ] ==( 4X 10.0 Gbps Active/ LinkUp)==> 5 1[ ] \"x\" ( )\n", 1,
       "malformed switch GUID '0xZZ'"},
      {"iblinkinfo no arrow", "Switch: 0x00000000000000a1 sw:\n  2 1[ ] ==( 4X 10.0 Gbps Active/ LinkUp) 5 1[ ] \"x\"\n", 2,
       "no )==> after ==("},
      {"iblinkinfo peer", "Switch: 0x00000000000000a1 sw:\n  2 1[ ] ==( 4X 10.0 Gbps Active/ LinkUp)==> five 1[ ] \"x\" ( )\n", 2,
       "expected the peer's LID and port after )==>"},
  };
  for (const Bad& b : cases) {
    SCOPED_TRACE(b.name);
    auto t = ReadIbnetdiscover(b.text, "bad.topo");
    ASSERT_FALSE(t) << Describe(*t);
    EXPECT_EQ(t.error().code, ErrorCode::kParse);
    const std::string& m = t.error().message;
    EXPECT_NE(m.find("bad.topo:" + std::to_string(b.line) + ":"), std::string::npos) << m;
    EXPECT_NE(m.find(b.problem), std::string::npos) << m;
  }
}

TEST(IbBadInput, LinksThatBreakTheTreeNameBothPlaces) {
  // Three leaves cabled in a triangle: orientation by (distance, ports,
  // neighbours, GUID) makes no cycle, so a3 ends up under a1 and a2.
  const std::string tri = Block("Switch", 8, kA, "a1", {{1, H(1), 1, "h1 x"}, {2, kB, 2, "a2"}, {3, kC, 3, "a3"}}) +
                          Block("Switch", 8, kB, "a2", {{1, H(2), 1, "h2 x"}, {2, kA, 2, "a1"}, {4, kC, 4, "a3"}}) +
                          Block("Switch", 8, kC, "a3", {{1, H(3), 1, "h3 x"}, {3, kA, 3, "a1"}, {4, kB, 4, "a2"}});
  auto t = ReadIbnetdiscover(tri, "tri.topo");
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message.find("tri.topo:11: switch 'S-00000000000000a3' is under both 'S-00000000000000a1' (tri.topo:5) "
                                   "and 'S-00000000000000a2' (tri.topo:11)"),
            std::string::npos)
      << t.error().message;
  // One host's two CAs on leaves that are not parallel (a1 has another host).
  const std::string two = Block("Switch", 8, kA, "a1", {{1, H(1), 1, "n1 HCA-1"}, {2, H(3), 1, "n2 HCA-1"}}) +
                          Block("Switch", 8, kB, "a2", {{1, H(2), 1, "n1 HCA-2"}});
  auto u = ReadIbnetdiscover(two, "two.topo");
  ASSERT_FALSE(u);
  EXPECT_NE(u.error().message.find("two.topo:8: host 'n1' is under both"), std::string::npos) << u.error().message;
}

TEST(IbBadInput, AChainOfSwitchesIsAnErrorNotADeepRecursion) {
  // 20000 switches in a line with one host at the end: 20000 tiers.
  std::string text;
  const int n = 20000;
  auto id = [](int i) { return fmt::format("S-{:016x}", 0x100000 + i); };
  for (int i = 0; i < n; ++i) {
    std::vector<L> links;
    if (i == 0) links.push_back({3, H(1), 1, "h1 x"});
    if (i > 0) links.push_back({1, id(i - 1), 2, "sw"});
    if (i + 1 < n) links.push_back({2, id(i + 1), 1, "sw"});
    text += Block("Switch", 8, id(i), "sw", links);
  }
  auto t = ReadIbnetdiscover(text, "chain.topo");
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message.find("chain.topo:22: switch S-0000000000100004 sits 5 switch tiers above the hosts"),
            std::string::npos)
      << t.error().message;
}

// --- robustness ---------------------------------------------------------------

TEST(IbRobustness, ThousandsOfDamagedFixturesNeverCrash) {
  TIDAL_REQUIRE_DIR(kDir);
  std::mt19937 rng(20240612);
  int parsed = 0, failed = 0;
  for (const auto& f : FixtureFiles(kDir)) {
    const std::string text = Slurp(kDir + f);
    for (int i = 0; i < 2000; ++i) {
      const std::string damaged = testing::Mutate(text, rng);
      (void)DetectFormat(damaged, "damaged.topo");
      auto t = ReadIbnetdiscover(damaged, "damaged.topo");
      if (!t) {
        ++failed;
        ASSERT_NE(t.error().message.find("damaged.topo"), std::string::npos) << t.error().message;
        continue;
      }
      ++parsed;
      ASSERT_GE(t->num_hosts(), 1);
    }
  }
  EXPECT_GT(parsed, 1000);
  EXPECT_GT(failed, 1000);
}

RC_GTEST_PROP(IbRobustness, NoiseNeverCrashes, (const std::string& noise)) {
  auto t = ReadIbnetdiscover("Switch 8 \"S-00000000000000a1\"\n" + noise, "noise.topo");
  if (!t) RC_ASSERT(t.error().message.find("noise.topo") != std::string::npos);
}

}  // namespace
}  // namespace tidal::topo

#include "topology/readers/lingjun.h"

#include <filesystem>
#include <map>

#include <gtest/gtest.h>

#include "common/csv.h"
#include "common/rng.h"
#include "topology/formats.h"
#include "topology/topology_test_util.h"

namespace tidal::topo {
namespace {

const std::string kTopo = std::string(TIDAL_SHARED_DIR) + "/traces/alibaba-lingjun-2023/topo.csv";

std::string ReadTopo() {
  auto text = ReadFileToString(kTopo);
  return text ? *text : std::string();
}

TEST(Lingjun, RealTraceIsTheStrictTree) {
  if (!std::filesystem::exists(kTopo)) GTEST_SKIP() << kTopo << " is not here";
  auto t = ReadLingjunCsv(ReadTopo(), "topo.csv");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->num_hosts(), 847);
  EXPECT_EQ(t->total_gpus(), 6776);
  EXPECT_EQ(t->domains_at(Level::kCore).size(), 1u);
  EXPECT_EQ(t->domains_at(Level::kSpine).size(), 3u);
  EXPECT_EQ(t->domains_at(Level::kLeaf).size(), 119u);
  EXPECT_EQ(t->domains_at(Level::kNode).size(), 847u);
  EXPECT_EQ((std::vector<Level>{Level::kGpu, Level::kNode, Level::kLeaf, Level::kSpine, Level::kCore}), t->levels());
  const DomainId root = t->root();
  EXPECT_EQ(t->domain(root).name, "G6");
  EXPECT_EQ(t->level(root), Level::kCore);
  // Per PSW: ToRs and hosts, as the dataset README counts them.
  std::map<std::string, std::pair<size_t, int32_t>> per_spine;
  for (DomainId s : t->domains_at(Level::kSpine)) {
    EXPECT_EQ(t->parent(s), root);
    per_spine[t->domain(s).name] = {t->children(s).size(), t->hosts_under(s)};
  }
  const std::map<std::string, std::pair<size_t, int32_t>> want = {{"P10", {48, 362}}, {"P12", {42, 306}}, {"P8", {29, 179}}};
  EXPECT_EQ(per_spine, want);
  // Every ToR is named PSW/ASW and sits under its PSW; hosts per ToR 2..8 (README histogram).
  std::map<int32_t, int> hist;
  for (DomainId l : t->domains_at(Level::kLeaf)) {
    const std::string& name = t->domain(l).name;
    const std::string& psw = t->domain(t->parent(l)).name;
    EXPECT_EQ(name.substr(0, name.find('/')), psw);
    ++hist[t->hosts_under(l)];
  }
  const std::map<int32_t, int> want_hist = {{2, 3}, {3, 1}, {4, 2}, {5, 7}, {6, 15}, {7, 23}, {8, 68}};
  EXPECT_EQ(hist, want_hist);
  // Hosts: 8 H800 GPUs on one NVSwitch, and a note that says this is assumed.
  for (int32_t h = 0; h < t->num_hosts(); ++h) {
    ASSERT_EQ(t->host_gpus(h), 8);
    ASSERT_TRUE(t->layout(h).nvlink);
    ASSERT_EQ(t->layout(h).gpu_model, "H800");
  }
  ASSERT_TRUE(t->FindHost("0c9d9de1b19e7f39b08f49ddfa26744ae26d3adf8bd59af1b16e203b6fa5fe4b"));
  const DomainId first = t->host(*t->FindHost("0c9d9de1b19e7f39b08f49ddfa26744ae26d3adf8bd59af1b16e203b6fa5fe4b"));
  EXPECT_EQ(t->domain(t->parent(first)).name, "P10/S14");
  // Hosts under one ToR meet at the leaf: one hop less than across PSWs.
  const DomainId g0 = t->host_gpu(0, 0);
  EXPECT_EQ(t->level(t->NvlinkDomain(g0)), Level::kNode);
  bool note = false;
  for (const auto& n : t->notes()) note = note || n.find("8 H800 GPUs on one NVSwitch") != std::string::npos;
  EXPECT_TRUE(note);
}

TEST(Lingjun, OptionsAndDetection) {
  if (!std::filesystem::exists(kTopo)) GTEST_SKIP() << kTopo << " is not here";
  auto t = ReadLingjunCsv(ReadTopo(), "topo.csv", {4, "A100"});
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->total_gpus(), 847 * 4);
  EXPECT_EQ(t->layout(0).gpu_model, "A100");
  auto f = DetectFormat(ReadTopo(), kTopo);
  ASSERT_TRUE(f);
  EXPECT_EQ(*f, Format::kLingjunCsv);
  auto viaFile = ReadTopology(kTopo);
  ASSERT_TRUE(viaFile) << viaFile.error().message;
  EXPECT_EQ(viaFile->num_hosts(), 847);
}

TEST(Lingjun, SmallTreeExactly) {
  const std::string csv =
      "ip,DSW,PSW,ASW\n"
      "h1,G1,P1,S1\n"
      "h2,G1,P1,S1\n"
      "h3,G1,P2,S1\n"  // same ASW label under another PSW: another ToR
      "h4,G1,P2,S2\n";
  auto t = ReadLingjunCsv(csv, "small.csv", {2, "X"});
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->num_hosts(), 4);
  EXPECT_EQ(t->total_gpus(), 8);
  std::vector<std::string> leaves;
  for (DomainId l : t->domains_at(Level::kLeaf)) leaves.push_back(t->domain(l).name + "=" + std::to_string(t->hosts_under(l)));
  EXPECT_EQ(leaves, (std::vector<std::string>{"P1/S1=2", "P2/S1=1", "P2/S2=1"}));
  // h1,h2 share a ToR (1 hop); h1,h3 meet at the DSW (5 hops by default).
  const auto h1 = *t->FindHost("h1"), h2 = *t->FindHost("h2"), h3 = *t->FindHost("h3");
  EXPECT_EQ(t->level(t->Between(t->host_gpu(h1, 0), t->host_gpu(h2, 0)).common), Level::kLeaf);
  EXPECT_EQ(t->level(t->Between(t->host_gpu(h1, 0), t->host_gpu(h3, 0)).common), Level::kCore);
}

struct Bad {
  const char* name;
  std::string csv;
  std::vector<std::string> want;  // substrings of the message
};

TEST(Lingjun, BadInputsSayWhereAndWhat) {
  const std::string h = "ip,DSW,PSW,ASW\n";
  const std::vector<Bad> cases = {
      {"wrong header", "ip,DSW,PSW\nh1,G1,P1\n", {"bad.csv:1:", "ip,DSW,PSW,ASW", "'ip,DSW,PSW'"}},
      {"renamed column", "ip,DSW,PSW,TOR\nh1,G1,P1,S1\n", {"bad.csv:1:", "'ip,DSW,PSW,TOR'"}},
      {"columns swapped", "ip,PSW,DSW,ASW\nh1,P1,G1,S1\n", {"bad.csv:1:", "starts with 'ip,DSW,PSW,ASW'"}},
      {"duplicate ip", h + "h1,G1,P1,S1\nh2,G1,P1,S1\nh1,G1,P1,S1\n", {"bad.csv:4:", "h1 is listed twice", "line 2"}},
      {"disagreeing row", h + "h1,G1,P1,S1\nh1,G1,P2,S3\n", {"bad.csv:3:", "h1 is at G1/P2/S3 here but at G1/P1/S1 on line 2"}},
      {"empty ip", h + "h1,G1,P1,S1\n,G1,P1,S1\n", {"bad.csv:3: column 'ip'", "empty"}},
      {"empty DSW", h + "h1,,P1,S1\n", {"bad.csv:2: column 'DSW'", "empty"}},
      {"empty PSW", h + "h1,G1,,S1\n", {"bad.csv:2: column 'PSW'", "empty"}},
      {"empty ASW", h + "h1,G1,P1,\n", {"bad.csv:2: column 'ASW'", "empty"}},
      {"truncated row", h + "h1,G1,P1,S1\nh2,G1,P1\n", {"bad.csv:3:", "expected 4 fields", "found 3"}},
      {"too many fields", h + "h1,G1,P1,S1,x\n", {"bad.csv:2:", "expected 4 fields", "found 5"}},
      {"PSW under two DSWs", h + "h1,G1,P1,S1\nh2,G2,P1,S2\n", {"bad.csv:3:", "PSW P1 is under DSW G2 here but under DSW G1 on line 2"}},
      {"header only", h, {"bad.csv", "no hosts"}},
      {"empty file", "", {"bad.csv", "empty"}},
      {"unterminated quote", h + "h1,G1,\"P1,S1\n", {"bad.csv:2:", "unterminated quoted field"}},
      {"host named like a switch", h + "P1,G1,P1,S1\n", {"bad.csv", "'P1' is used twice"}},
  };
  for (const Bad& c : cases) {
    auto t = ReadLingjunCsv(c.csv, "bad.csv");
    ASSERT_FALSE(t) << c.name;
    for (const auto& w : c.want) EXPECT_NE(t.error().message.find(w), std::string::npos) << c.name << ": " << t.error().message;
  }
  auto neg = ReadLingjunCsv(h + "h1,G1,P1,S1\n", "opt.csv", {-1, "X"});
  ASSERT_FALSE(neg);
  EXPECT_NE(neg.error().message.find("-1 GPUs per host"), std::string::npos);
}

TEST(Lingjun, CrlfBomAndBlankLinesAreFine) {
  auto t = ReadLingjunCsv("\xEF\xBB\xBFip,DSW,PSW,ASW\r\nh1,G1,P1,S1\r\n\r\nh2,G1,P1,S2\r\n", "crlf.csv");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->num_hosts(), 2);
  EXPECT_EQ(t->domains_at(Level::kLeaf).size(), 2u);
}

// Deterministic fuzzing: the real file's head with bytes replaced, lines cut
// and rows duplicated either reads or fails with a message naming the file.
TEST(Lingjun, MutationsNeverCrash) {
  std::string base = std::filesystem::exists(kTopo) ? ReadTopo().substr(0, 4000) : "ip,DSW,PSW,ASW\nh1,G1,P1,S1\nh2,G1,P2,S1\n";
  const std::string alphabet(",\n\r\"ab1/ \xEF\0", 11);
  Rng rng(20230817);
  int ok = 0, failed = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::string s = base;
    s = testing::Damage(std::move(s), rng, alphabet, 6, 80, 40);
    auto t = ReadLingjunCsv(s, "fuzz.csv");
    if (t) {
      ++ok;
      EXPECT_GT(t->num_hosts(), 0);
    } else {
      ++failed;
      ASSERT_NE(t.error().message.find("fuzz.csv"), std::string::npos) << t.error().message;
    }
  }
  EXPECT_GT(ok, 0);
  EXPECT_GT(failed, 0);
}

}  // namespace
}  // namespace tidal::topo

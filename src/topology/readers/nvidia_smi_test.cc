// nvidia-smi topo -m reader: every fixture in shared/fixtures/nvidia-smi-topo
// with exact numbers, synthetic layouts the fixtures lack (NVLink cliques,
// PCIe switches, bridges across NUMA nodes), a table of bad inputs, and
// random damage that must never crash.
//
// The two `nvidia-smi nvlink -R` / `-s` fixtures are not matrices: the reader
// rejects them (exit 2 in the CLI) with a message naming the command they
// come from and saying to run `nvidia-smi topo -m` instead. -R names the peer
// of each link by PCI address only and -s gives speeds without peers, so
// neither says which GPUs share NVLink, let alone PCIe or NUMA.
#include "topology/readers/nvidia_smi.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <map>
#include <random>

#include "topology/formats.h"
#include "topology/readers/reader_test_util.h"

namespace tidal::topo {
namespace {

using testing::FixtureDir;
using testing::FixtureFiles;
using testing::Slurp;

const std::string kDir = FixtureDir("nvidia-smi-topo");

// GPUs (local indices) under domain d.
std::vector<int> GpusOf(const Topology& t, DomainId d) {
  std::vector<int> out;
  for (DomainId x = d; x < t.subtree_end(d); ++x)
    if (t.level(x) == Level::kGpu) out.push_back(t.domain(x).local_index);
  return out;
}

std::vector<std::vector<int>> GroupsAt(const Topology& t, Level l) {
  std::vector<std::vector<int>> out;
  for (DomainId d : t.domains_at(l)) out.push_back(GpusOf(t, d));
  return out;
}

bool HasNote(const Topology& t, std::string_view part) {
  for (const auto& n : t.notes())
    if (n.find(part) != std::string::npos) return true;
  return false;
}

using Sets = std::vector<std::vector<int>>;
const Sets kTwoNuma = {{0, 1, 2, 3}, {4, 5, 6, 7}};

struct Expect {
  std::string file;
  int gpus = 0;
  bool nvlink = false;
  double host_gbps = 0;
  Sets numa;                       // pcie-level groups
  std::vector<Level> levels;
  std::vector<std::string> notes;  // substrings some note must hold
  std::string error;               // non-empty: the reader must fail with this in the message
};

const std::vector<Level> kFlat = {Level::kGpu, Level::kNode};
const std::vector<Level> kNuma = {Level::kGpu, Level::kPcie, Level::kNode};

const std::vector<Expect>& Expected() {
  static const std::vector<Expect> e = {
      {"dgx-h100-12nic-tabs-TRUNCATED-talos-report.txt", 8, true, 450, kTwoNuma, kNuma,
       {"12 NIC column(s); 12 NIC(s) for 8 GPU(s), 8 of the GPUs", "no rows for NIC6, NIC7, NIC8, NIC9, NIC10, NIC11 (6 of 12"}},
      {"h100-sxm-8gpu-vm-passthrough-tabs-rhel-ai.txt", 8, true, 450, {}, kFlat, {"NV18 -> 450 GB/s"}},
      {"hpe-dl380a-gen11-h100-pcie-x2-nvlink-R.txt", 0, false, 0, {}, {}, {}, "this is `nvidia-smi nvlink -R` output"},
      {"hpe-dl380a-gen11-h100-pcie-x2-nvlink-bridge.txt", 2, true, 300, {}, kFlat, {"NV12 -> 300 GB/s"}},
      {"hpe-dl380a-gen11-h100-pcie-x2-nvlink-s.txt", 0, false, 0, {}, {}, {}, "this is `nvidia-smi nvlink -s` output"},
      {"nccl-issue-1264-hgx-h100-10nic-tabs-TRUNCATED.txt", 8, true, 450, kTwoNuma, kNuma,
       {"10 NIC(s) for 8 GPU(s), 8 of the GPUs", "no rows for NIC3, NIC4, NIC5, NIC6, NIC7, NIC8, NIC9 (7 of 10"}},
      // NUMA Affinity 0-1 on every GPU: one node holding all of them, so no group.
      {"nccl-tests-issue-331-a100-4gpu-nv4-4nic.txt", 4, true, 100, {}, kFlat, {"NV4 -> 100 GB/s", "4 NIC(s) for 4 GPU(s), 4 of"}},
      {"stas00-ml-engineering-a100-8gpu-nv12.txt", 8, true, 300, kTwoNuma, kNuma, {"NV12 -> 300 GB/s"}},
      {"stas00-ml-engineering-h100-8gpu-nv18-ht-affinity.txt", 8, true, 450, kTwoNuma, kNuma, {}},
      {"stas00-ml-engineering-h100-8gpu-nv18.txt", 8, true, 450, kTwoNuma, kNuma, {}},
      {"xuesongtap-a10-4gpu-pcie-sys-2nic-spaces.txt", 4, false, 20, {}, kFlat,
       {"2 NIC(s) for 4 GPU(s), 0 of the GPUs", "SYS paths the cross-socket default of 20 GB/s"}},
      {"xuesongtap-a100-8gpu-nv12-17nic-spaces.txt", 8, true, 300, {}, kFlat,
       {"17 NIC column(s), less 1 bond(s) (mlx5_bond_0)", "16 NIC(s) for 8 GPU(s), 8 of the GPUs"}},
      {"xuesongtap-desktop-2x-gtx1080ti-phb.txt", 2, false, 25, {}, kFlat, {"PCIe default of 25 GB/s"}},
  };
  return e;
}

TEST(NvidiaSmiFixtures, EveryFixtureHasExpectations) {
  TIDAL_REQUIRE_DIR(kDir);
  std::vector<std::string> want;
  for (const auto& e : Expected()) want.push_back(e.file);
  EXPECT_EQ(FixtureFiles(kDir), want) << "a fixture was added or removed: give it exact expectations here";
}

TEST(NvidiaSmiFixtures, EachParsesToItsExactLayout) {
  TIDAL_REQUIRE_DIR(kDir);
  for (const Expect& e : Expected()) {
    SCOPED_TRACE(e.file);
    const std::string path = kDir + e.file;
    auto t = ReadNvidiaSmiTopo(Slurp(path), path);
    if (!e.error.empty()) {
      ASSERT_FALSE(t);
      EXPECT_NE(t.error().message.find(e.error), std::string::npos) << t.error().message;
      EXPECT_NE(t.error().message.find(path + ":1:"), std::string::npos) << t.error().message;
      EXPECT_NE(t.error().message.find("run `nvidia-smi topo -m`"), std::string::npos) << t.error().message;
      EXPECT_EQ(t.error().code, ErrorCode::kParse);
      continue;
    }
    ASSERT_TRUE(t) << t.error().message;
    ASSERT_EQ(t->num_hosts(), 1);
    const DomainId h = t->host(0);
    EXPECT_EQ(t->domain(h).name, e.file.substr(0, e.file.size() - 4));
    EXPECT_EQ(t->host_gpus(0), e.gpus);
    EXPECT_EQ(t->total_gpus(), e.gpus);
    EXPECT_EQ(t->domain(h).nvlink, e.nvlink);
    EXPECT_DOUBLE_EQ(t->domain(h).link.gbps, e.host_gbps);
    EXPECT_EQ(t->levels(), e.levels);
    EXPECT_EQ(GroupsAt(*t, Level::kPcie), e.numa);
    EXPECT_TRUE(GroupsAt(*t, Level::kNvlink).empty());
    // An NVLink host is one NVLink domain of all its GPUs.
    EXPECT_EQ(t->gpus_under(t->NvlinkDomain(t->host_gpu(0, 0))), e.nvlink ? e.gpus : 1);
    for (DomainId d : t->domains_at(Level::kPcie)) {
      EXPECT_EQ(t->domain(d).nvlink, e.nvlink);  // a NUMA node of an NVSwitch host is NV-linked inside
      EXPECT_DOUBLE_EQ(t->domain(d).link.gbps, e.host_gbps);
    }
    for (const auto& n : e.notes) EXPECT_TRUE(HasNote(*t, n)) << "no note with: " << n;
  }
}

TEST(NvidiaSmiFixtures, H100Nv18PathsAndNames) {
  TIDAL_REQUIRE_DIR(kDir);
  const std::string path = kDir + "stas00-ml-engineering-h100-8gpu-nv18.txt";
  auto t = ReadNvidiaSmiTopo(Slurp(path), path, "gpu-node-7");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->domain(t->host(0)).name, "gpu-node-7");
  ASSERT_EQ(t->domains_at(Level::kPcie).size(), 2u);
  EXPECT_EQ(t->domain(t->domains_at(Level::kPcie)[0]).name, "gpu-node-7/numa0");
  EXPECT_EQ(t->domain(t->domains_at(Level::kPcie)[1]).name, "gpu-node-7/numa1");
  const PathLink same = t->Between(t->host_gpu(0, 0), t->host_gpu(0, 3));
  const PathLink across = t->Between(t->host_gpu(0, 0), t->host_gpu(0, 7));
  EXPECT_EQ(same.common, t->domains_at(Level::kPcie)[0]);
  EXPECT_DOUBLE_EQ(same.gbps, 450);
  EXPECT_EQ(across.common, t->host(0));
  EXPECT_DOUBLE_EQ(across.gbps, 450);
  EXPECT_EQ(t->layout(0).gpus, 8);
  EXPECT_TRUE(t->layout(0).nvlink);
}

TEST(NvidiaSmiFixtures, PcieBoxesRateFromTheWorstPath) {
  TIDAL_REQUIRE_DIR(kDir);
  const std::string a10 = kDir + "xuesongtap-a10-4gpu-pcie-sys-2nic-spaces.txt";
  auto t = ReadNvidiaSmiTopo(Slurp(a10), a10);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->domain(t->host(0)).link, DefaultLink(Level::kNode, false));  // SYS: cross-socket
  EXPECT_EQ(t->gpus_under(t->NvlinkDomain(t->host_gpu(0, 2))), 1);
  const std::string desk = kDir + "xuesongtap-desktop-2x-gtx1080ti-phb.txt";
  auto d = ReadNvidiaSmiTopo(Slurp(desk), desk);
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(d->domain(d->host(0)).link, DefaultLink(Level::kPcie, false));  // PHB: through the host bridge
}

TEST(NvidiaSmiFixtures, DetectFormatSaysNvidiaSmiForEveryFixture) {
  TIDAL_REQUIRE_DIR(kDir);
  for (const auto& f : FixtureFiles(kDir)) {
    auto r = DetectFormat(Slurp(kDir + f), f);
    ASSERT_TRUE(r) << f << ": " << r.error().message;
    EXPECT_EQ(*r, Format::kNvidiaSmi) << f;
  }
}

TEST(NvidiaSmiFixtures, CrlfAndSpacesReadLikeTheOriginal) {
  TIDAL_REQUIRE_DIR(kDir);
  for (const char* f : {"dgx-h100-12nic-tabs-TRUNCATED-talos-report.txt", "xuesongtap-a100-8gpu-nv12-17nic-spaces.txt"}) {
    const std::string text = Slurp(kDir + f);
    std::string crlf, spaces;
    for (char c : text) {
      if (c == '\n') crlf += '\r';
      crlf += c;
      spaces += c == '\t' ? std::string("   ") : std::string(1, c);
    }
    auto a = ReadNvidiaSmiTopo(text, "x.txt"), b = ReadNvidiaSmiTopo(crlf, "x.txt"), c = ReadNvidiaSmiTopo(spaces, "x.txt");
    ASSERT_TRUE(a && b && c) << f;
    EXPECT_EQ(a->layout(0), b->layout(0)) << f;
    EXPECT_EQ(a->layout(0), c->layout(0)) << f;
  }
}

// --- synthetic layouts ------------------------------------------------------

std::string Matrix(const std::vector<std::string>& rows, const std::string& extra_header = "CPU Affinity\tNUMA Affinity") {
  const size_t n = rows.size();
  std::string s;
  for (size_t i = 0; i < n; ++i) s += "\tGPU" + std::to_string(i);
  s += "\t" + extra_header + "\n";
  for (size_t i = 0; i < n; ++i) s += "GPU" + std::to_string(i) + "\t" + rows[i] + "\n";
  return s;
}

TEST(NvidiaSmiLayout, Dgx1HybridCubeMeshBecomesTwoNvlinkCliques) {
  // DGX-1 V100: each GPU NV-linked to four others; {0..3} and {4..7} are all-to-all.
  const std::string text = Matrix({
      " X \tNV1\tNV1\tNV2\tNV2\tSYS\tSYS\tSYS\t0-19\t0",
      "NV1\t X \tNV2\tNV1\tSYS\tNV2\tSYS\tSYS\t0-19\t0",
      "NV1\tNV2\t X \tNV2\tSYS\tSYS\tNV1\tSYS\t0-19\t0",
      "NV2\tNV1\tNV2\t X \tSYS\tSYS\tSYS\tNV1\t0-19\t0",
      "NV2\tSYS\tSYS\tSYS\t X \tNV1\tNV1\tNV2\t20-39\t1",
      "SYS\tNV2\tSYS\tSYS\tNV1\t X \tNV2\tNV1\t20-39\t1",
      "SYS\tSYS\tNV1\tSYS\tNV1\tNV2\t X \tNV2\t20-39\t1",
      "SYS\tSYS\tSYS\tNV1\tNV2\tNV1\tNV2\t X \t20-39\t1",
  });
  auto t = ReadNvidiaSmiTopo(text, "dgx1.txt");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_FALSE(t->domain(t->host(0)).nvlink);
  EXPECT_DOUBLE_EQ(t->domain(t->host(0)).link.gbps, 20);
  EXPECT_EQ(GroupsAt(*t, Level::kNvlink), kTwoNuma);
  EXPECT_EQ(GroupsAt(*t, Level::kPcie), kTwoNuma);
  EXPECT_EQ(t->levels(), (std::vector<Level>{Level::kGpu, Level::kNvlink, Level::kPcie, Level::kNode}));
  EXPECT_EQ(t->domain(t->domains_at(Level::kNvlink)[0]).name, "dgx1/nvlink0");
  EXPECT_EQ(t->domain(t->parent(t->domains_at(Level::kNvlink)[1])).name, "dgx1/numa1");
  EXPECT_DOUBLE_EQ(t->Between(t->host_gpu(0, 0), t->host_gpu(0, 3)).gbps, 25);  // NV1 is the slowest pair inside
  EXPECT_DOUBLE_EQ(t->Between(t->host_gpu(0, 0), t->host_gpu(0, 4)).gbps, 20);  // NV2 across the cliques is left to PCIe
  EXPECT_EQ(t->gpus_under(t->NvlinkDomain(t->host_gpu(0, 5))), 4);
  EXPECT_TRUE(HasNote(*t, "the NVLinks do not join all-to-all sets; tidal took the largest all-to-all sets as NVLink groups "
                          "({0,1,2,3}, {4,5,6,7})"));
}

TEST(NvidiaSmiLayout, BridgedPairsNestInNumaNodes) {
  const std::string text = Matrix({
      " X \tNV4\tSYS\tSYS\t0-7\t0",
      "NV4\t X \tSYS\tSYS\t0-7\t0",
      "SYS\tSYS\t X \tNV4\t8-15\t1",
      "SYS\tSYS\tNV4\t X \t8-15\t1",
  });
  auto t = ReadNvidiaSmiTopo(text, "bridged.txt");
  ASSERT_TRUE(t) << t.error().message;
  const Sets pairs = {{0, 1}, {2, 3}};
  EXPECT_EQ(GroupsAt(*t, Level::kNvlink), pairs);
  EXPECT_EQ(GroupsAt(*t, Level::kPcie), pairs);
  EXPECT_DOUBLE_EQ(t->domain(t->domains_at(Level::kNvlink)[0]).link.gbps, 100);
  EXPECT_EQ(t->gpus_under(t->NvlinkDomain(t->host_gpu(0, 2))), 2);
  EXPECT_DOUBLE_EQ(t->Between(t->host_gpu(0, 1), t->host_gpu(0, 2)).gbps, 20);
  EXPECT_FALSE(HasNote(*t, "do not join all-to-all"));
}

TEST(NvidiaSmiLayout, ABridgeAcrossNumaNodesKeepsTheNvlinkGroup) {
  const std::string text = Matrix({
      " X \tPHB\tSYS\tSYS\t0-7\t0",
      "PHB\t X \tNV12\tSYS\t0-7\t0",
      "SYS\tNV12\t X \tPHB\t8-15\t1",
      "SYS\tSYS\tPHB\t X \t8-15\t1",
  });
  auto t = ReadNvidiaSmiTopo(text, "cross.txt");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(GroupsAt(*t, Level::kNvlink), (Sets{{1, 2}}));
  EXPECT_TRUE(GroupsAt(*t, Level::kPcie).empty());
  EXPECT_TRUE(HasNote(*t, "NUMA node 0 {0,1} (numa0) is not modelled: it overlaps nvlink0 {1,2} without nesting"));
  EXPECT_TRUE(HasNote(*t, "NUMA node 1 {2,3} (numa1) is not modelled"));
  EXPECT_DOUBLE_EQ(t->Between(t->host_gpu(0, 1), t->host_gpu(0, 2)).gbps, 300);
}

TEST(NvidiaSmiLayout, PcieSwitchesAreGroupsWithoutNumaNodes) {
  const std::string text = Matrix({
      " X \tPIX\tPHB\tPHB\t0-11\tN/A",
      "PIX\t X \tPHB\tPHB\t0-11\tN/A",
      "PHB\tPHB\t X \tPXB\t0-11\tN/A",
      "PHB\tPHB\tPXB\t X \t0-11\tN/A",
  });
  auto t = ReadNvidiaSmiTopo(text, "pcie.txt");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(GroupsAt(*t, Level::kPcie), (Sets{{0, 1}, {2, 3}}));
  EXPECT_EQ(t->domain(t->domains_at(Level::kPcie)[1]).name, "pcie/pcisw1");
  EXPECT_EQ(t->domain(t->domains_at(Level::kPcie)[0]).link, DefaultLink(Level::kPcie, false));
  EXPECT_EQ(t->domain(t->host(0)).link, DefaultLink(Level::kPcie, false));
}

TEST(NvidiaSmiLayout, PcieSwitchesInsideNumaNodesAreLeftOutWithANote) {
  const std::string text = Matrix({
      " X \tPIX\tNODE\tNODE\tSYS\tSYS\t0-7\t0",
      "PIX\t X \tNODE\tNODE\tSYS\tSYS\t0-7\t0",
      "NODE\tNODE\t X \tPIX\tSYS\tSYS\t0-7\t0",
      "NODE\tNODE\tPIX\t X \tSYS\tSYS\t0-7\t0",
      "SYS\tSYS\tSYS\tSYS\t X \tPXB\t8-15\t1",
      "SYS\tSYS\tSYS\tSYS\tPXB\t X \t8-15\t1",
  });
  auto t = ReadNvidiaSmiTopo(text, "numa-sw.txt");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(GroupsAt(*t, Level::kPcie), (Sets{{0, 1, 2, 3}, {4, 5}}));
  EXPECT_TRUE(HasNote(*t, "PCIe switch group {0,1} (pcisw0) is not modelled: it would nest with numa0 at the same level (pcie)"));
  EXPECT_TRUE(HasNote(*t, "PCIe switch group {2,3} (pcisw1) is not modelled"));
  EXPECT_TRUE(HasNote(*t, "PCIe switch group {4,5} (pcisw2) is not modelled: it holds the same GPUs as numa1"));
  EXPECT_DOUBLE_EQ(t->domain(t->host(0)).link.gbps, 20);
}

TEST(NvidiaSmiLayout, OneGpuOldNamesNicColumnsAndLegend) {
  // Older drivers: SOC for SYS, NICs named by device in the header.
  const std::string text =
      "\tGPU0\tGPU1\tmlx5_0\tCPU Affinity\n"
      "GPU0\t X \tSOC\tPIX\t0-5\n"
      "GPU1\tSOC\t X \tSOC\t6-11\n"
      "mlx5_0\tPIX\tSOC\t X \n";
  auto t = ReadNvidiaSmiTopo(text, "old.txt");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->total_gpus(), 2);
  EXPECT_DOUBLE_EQ(t->domain(t->host(0)).link.gbps, 20);
  EXPECT_TRUE(HasNote(*t, "1 NIC column(s); 1 NIC(s) for 2 GPU(s), 1 of the GPUs"));
  auto one = ReadNvidiaSmiTopo("        GPU0    CPU Affinity    NUMA Affinity\nGPU0     X      0-11    0\n", "one.txt");
  ASSERT_TRUE(one) << one.error().message;
  EXPECT_EQ(one->total_gpus(), 1);
  EXPECT_EQ(one->levels(), kFlat);
  EXPECT_FALSE(one->domain(one->host(0)).nvlink);
}

// --- bad input ----------------------------------------------------------------

struct Bad {
  std::string name, text;
  int line;
  std::string problem;
};

TEST(NvidiaSmiBadInput, EachSaysFileLineAndProblem) {
  const std::string h2 = "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\n";
  const std::vector<Bad> cases = {
      {"empty", "", 1, "the file is empty"},
      {"blank", "\n  \n\t\n", 1, "the file is empty"},
      {"garbage", "\n\nhello world\nmore\n", 3, "no `nvidia-smi topo -m` matrix"},
      {"header only", h2, 1, "no GPU row follows"},
      {"truncated row", h2 + "GPU0\t X \tNV12\t0-7\t0\nGPU1\tNV12\t X \n", 3, "is cut short (a truncated file?)"},
      {"missing rows", "\tGPU0\tGPU1\tGPU2\tCPU Affinity\nGPU0\t X \tPIX\tPIX\t0\nGPU1\tPIX\t X \tPIX\t0\n", 3,
       "the file is cut inside the GPU matrix"},
      {"unknown cell", h2 + "GPU0\t X \tNVL\t0-7\t0\nGPU1\tNV12\t X \t0-7\t0\n", 2, "column GPU1: unknown cell 'NVL'"},
      {"NV0", h2 + "GPU0\t X \tNV0\t0-7\t0\nGPU1\tNV0\t X \t0-7\t0\n", 2, "unknown cell 'NV0'"},
      {"asymmetric NV", h2 + "GPU0\t X \tNV12\t0-7\t0\nGPU1\tNV6\t X \t0-7\t0\n", 3, "the matrix must be symmetric"},
      {"diagonal", h2 + "GPU0\tPIX\tPIX\t0-7\t0\nGPU1\tPIX\t X \t0-7\t0\n", 2, "has 'PIX' in its own column, expected X"},
      {"self elsewhere", h2 + "GPU0\t X \t X \t0-7\t0\nGPU1\tPIX\t X \t0-7\t0\n", 2, "is X (self), but they are different GPUs"},
      {"extra cells", h2 + "GPU0\t X \tPIX\t0-7\t0\t9\nGPU1\tPIX\t X \t0-7\t0\n", 2, "the row has extra cells"},
      {"rows out of order", h2 + "GPU1\tPIX\t X \t0-7\t0\nGPU0\t X \tPIX\t0-7\t0\n", 2, "comes where GPU0 was expected"},
      {"row twice", h2 + "GPU0\t X \tPIX\t0-7\t0\nGPU0\t X \tPIX\t0-7\t0\n", 3, "a second row for GPU0 (the first is at line 2)"},
      {"unknown row", h2 + "GPU0\t X \tPIX\t0-7\t0\nGPU7\tPIX\t X \t0-7\t0\n", 3, "row 'GPU7' is not a column of the header"},
      {"header order", "\tGPU0\tGPU2\tCPU Affinity\n", 1, "GPU columns must run GPU0, GPU1, ... in order"},
      {"unknown column", "\tGPU0\tCPU Affinity\tFan Speed\nGPU0\t X \t0\t1\n", 1, "unknown column 'Fan' after the affinity columns"},
      {"rows without header", "GPU0\t X \tNV4\nGPU1\tNV4\t X \n", 1, "GPU rows without the header line"},
      {"nvidia-smi -L", "GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-5f1b)\n", 1, "lists GPUs by UUID"},
  };
  for (const Bad& b : cases) {
    SCOPED_TRACE(b.name);
    auto t = ReadNvidiaSmiTopo(b.text, "bad.txt");
    ASSERT_FALSE(t);
    EXPECT_EQ(t.error().code, ErrorCode::kParse);
    const std::string& m = t.error().message;
    EXPECT_NE(m.find("bad.txt:" + std::to_string(b.line) + ":"), std::string::npos) << m;
    EXPECT_NE(m.find(b.problem), std::string::npos) << m;
  }
}

// --- robustness ---------------------------------------------------------------

TEST(NvidiaSmiRobustness, ThousandsOfDamagedFixturesNeverCrash) {
  TIDAL_REQUIRE_DIR(kDir);
  std::mt19937 rng(20240611);
  int parsed = 0, failed = 0;
  for (const auto& f : FixtureFiles(kDir)) {
    const std::string text = Slurp(kDir + f);
    for (int i = 0; i < 2000; ++i) {
      const std::string damaged = testing::Mutate(text, rng);
      (void)DetectFormat(damaged, "damaged.txt");
      auto t = ReadNvidiaSmiTopo(damaged, "damaged.txt");
      if (!t) {
        ++failed;
        ASSERT_NE(t.error().message.find("damaged.txt:"), std::string::npos) << t.error().message;
        continue;
      }
      ++parsed;
      ASSERT_EQ(t->num_hosts(), 1);
      ASSERT_GE(t->total_gpus(), 1);
      ASSERT_EQ(t->total_gpus(), t->layout(0).gpus);  // never a GPU dropped
    }
  }
  EXPECT_GT(parsed, 1000);  // mutations that miss the matrix still parse
  EXPECT_GT(failed, 1000);
}

RC_GTEST_PROP(NvidiaSmiRobustness, NoiseNeverCrashes, (const std::string& noise)) {
  auto t = ReadNvidiaSmiTopo("\tGPU0\tGPU1\n" + noise, "noise.txt");
  if (!t) RC_ASSERT(t.error().message.find("noise.txt:") != std::string::npos);
}

}  // namespace
}  // namespace tidal::topo

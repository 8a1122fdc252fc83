// The affinity columns of every `nvidia-smi topo -m` fixture, cpu lists
// both ways, a table of bad inputs (each error names file:line and the GPU),
// and random damage that must never crash.
#include "topology/readers/nvidia_smi_affinity.h"

#include <gtest/gtest.h>

#include <random>

#include "topology/readers/reader_test_util.h"

namespace tidal::topo {
namespace {

using testing::FixtureDir;
using testing::Slurp;

const std::string kDir = FixtureDir("nvidia-smi-topo");

std::vector<int> Range(int lo, int hi) {
  std::vector<int> v;
  for (int i = lo; i <= hi; ++i) v.push_back(i);
  return v;
}

std::vector<int> Cat(std::vector<int> a, const std::vector<int>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

struct FixtureExpect {
  std::string file;
  std::vector<std::string> cpus;  // per GPU, as printed
  std::vector<std::string> numa;  // per GPU, "" for N/A
  bool gpu_numa_column = false;
};

TEST(NvidiaSmiAffinity, EveryFixture) {
  TIDAL_REQUIRE_DIR(kDir);
  const std::string h100a = "0-55,112-167", h100b = "56-111,168-223";
  const std::vector<FixtureExpect> all = {
      {"dgx-h100-12nic-tabs-TRUNCATED-talos-report.txt",
       {h100a, h100a, h100a, h100a, h100b, h100b, h100b, h100b}, {"0", "0", "0", "0", "1", "1", "1", "1"}, true},
      {"h100-sxm-8gpu-vm-passthrough-tabs-rhel-ai.txt", std::vector<std::string>(8, "0-63"), std::vector<std::string>(8, "0"), true},
      {"hpe-dl380a-gen11-h100-pcie-x2-nvlink-bridge.txt", {"32-63,96-127", "32-63,96-127"}, {"1", "1"}, true},
      {"nccl-issue-1264-hgx-h100-10nic-tabs-TRUNCATED.txt",
       {h100a, h100a, h100a, h100a, h100b, h100b, h100b, h100b}, {"0", "0", "0", "0", "1", "1", "1", "1"}, true},
      // As printed on that host: one CPU, and both nodes.
      {"nccl-tests-issue-331-a100-4gpu-nv4-4nic.txt", {"0", "0", "0", "0"}, {"0-1", "0-1", "0-1", "0-1"}, false},
      {"stas00-ml-engineering-a100-8gpu-nv12.txt", {"0-23", "0-23", "0-23", "0-23", "24-47", "24-47", "24-47", "24-47"},
       {"0", "0", "0", "0", "1", "1", "1", "1"}, false},
      {"stas00-ml-engineering-h100-8gpu-nv18-ht-affinity.txt",
       {"0-51,104-155", "0-51,104-155", "0-51,104-155", "0-51,104-155", "52-103,156-207", "52-103,156-207", "52-103,156-207",
        "52-103,156-207"},
       {"0", "0", "0", "0", "1", "1", "1", "1"}, false},
      {"stas00-ml-engineering-h100-8gpu-nv18.txt", {"0-51", "0-51", "0-51", "0-51", "52-103", "52-103", "52-103", "52-103"},
       {"0", "0", "0", "0", "1", "1", "1", "1"}, false},
      {"xuesongtap-a10-4gpu-pcie-sys-2nic-spaces.txt", std::vector<std::string>(4, "0-127"), std::vector<std::string>(4, "0"), true},
      {"xuesongtap-a100-8gpu-nv12-17nic-spaces.txt", std::vector<std::string>(8, "0-103"), std::vector<std::string>(8, "0"), true},
      {"xuesongtap-desktop-2x-gtx1080ti-phb.txt", {"0-11", "0-11"}, {"", ""}, false},
  };
  for (const auto& e : all) {
    SCOPED_TRACE(e.file);
    auto a = ReadNvidiaSmiAffinity(Slurp(kDir + e.file), e.file);
    ASSERT_TRUE(a.has_value()) << a.error().message;
    ASSERT_EQ(a->gpus.size(), e.cpus.size());
    EXPECT_EQ(a->has_gpu_numa_column, e.gpu_numa_column);
    for (size_t g = 0; g < e.cpus.size(); ++g) {
      EXPECT_EQ(a->gpus[g].gpu, static_cast<int>(g));
      EXPECT_EQ(FormatCpuList(a->gpus[g].cpus), e.cpus[g]) << "GPU" << g;
      EXPECT_EQ(FormatCpuList(a->gpus[g].numa_nodes), e.numa[g]) << "GPU" << g;
      EXPECT_FALSE(a->gpus[g].gpu_numa_id.has_value());  // N/A or no column in every fixture
      EXPECT_EQ(a->gpus[g].line, static_cast<int>(g) + 2);  // header on line 1
    }
  }
}

TEST(NvidiaSmiAffinity, ExactMembersOfAHyperThreadedList) {
  TIDAL_REQUIRE_DIR(kDir);
  auto a = ReadNvidiaSmiAffinity(Slurp(kDir + "dgx-h100-12nic-tabs-TRUNCATED-talos-report.txt"), "dgx052.txt");
  ASSERT_TRUE(a.has_value()) << a.error().message;
  EXPECT_EQ(a->gpus[0].cpus, Cat(Range(0, 55), Range(112, 167)));
  EXPECT_EQ(a->gpus[7].cpus, Cat(Range(56, 111), Range(168, 223)));
  EXPECT_EQ(a->gpus[7].numa_nodes, std::vector<int>{1});
}

TEST(NvidiaSmiAffinity, NotApplicableIsUnknownWithANote) {
  TIDAL_REQUIRE_DIR(kDir);
  auto a = ReadNvidiaSmiAffinity(Slurp(kDir + "xuesongtap-desktop-2x-gtx1080ti-phb.txt"), "desk.txt");
  ASSERT_TRUE(a.has_value()) << a.error().message;
  ASSERT_EQ(a->notes.size(), 1u);
  EXPECT_EQ(a->notes[0], "desk.txt: GPUs {0,1} have NUMA Affinity N/A; their NUMA node is not known");
}

TEST(NvidiaSmiAffinity, NvlinkOutputsAreRejectedByTheMatrixParser) {
  TIDAL_REQUIRE_DIR(kDir);
  auto r = ReadNvidiaSmiAffinity(Slurp(kDir + "hpe-dl380a-gen11-h100-pcie-x2-nvlink-R.txt"), "r.txt");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("r.txt:1: this is `nvidia-smi nvlink -R` output"), std::string::npos) << r.error().message;
  auto s = ReadNvidiaSmiAffinity(Slurp(kDir + "hpe-dl380a-gen11-h100-pcie-x2-nvlink-s.txt"), "s.txt");
  ASSERT_FALSE(s.has_value());
  EXPECT_NE(s.error().message.find("s.txt:1: this is `nvidia-smi nvlink -s` output"), std::string::npos) << s.error().message;
}

TEST(NvidiaSmiAffinity, GpuNumaIdAndCpuNotApplicable) {
  const std::string text =
      "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
      "GPU0\t X \tNV18\t0-71\t0\t\t4\n"
      "GPU1\tNV18\t X \tN/A\tN/A\t\tN/A\n";
  auto a = ReadNvidiaSmiAffinity(text, "gh.txt");
  ASSERT_TRUE(a.has_value()) << a.error().message;
  EXPECT_EQ(a->gpus[0].gpu_numa_id, 4);
  EXPECT_FALSE(a->gpus[1].gpu_numa_id.has_value());
  EXPECT_TRUE(a->gpus[1].cpus.empty());
  EXPECT_TRUE(a->gpus[1].numa_nodes.empty());
  ASSERT_EQ(a->notes.size(), 2u);
  EXPECT_EQ(a->notes[0], "gh.txt: GPUs {1} have CPU Affinity N/A; no CPUs are known to be near them");
}

TEST(CpuList, ParseAndFormat) {
  struct Case {
    std::string in, canonical;
  };
  for (const Case& c : std::vector<Case>{{"0-3,8,10-11", "0-3,8,10-11"},
                                         {"5,1,3", "1,3,5"},
                                         {"0-3,2-5", "0-5"},
                                         {"7,6,5,4", "4-7"},
                                         {"3-3", "3"},
                                         {"", ""},
                                         {"0,65535", "0,65535"}}) {
    auto v = ParseCpuList(c.in);
    ASSERT_TRUE(v.has_value()) << c.in << ": " << v.error().message;
    EXPECT_EQ(FormatCpuList(*v), c.canonical) << c.in;
  }
  EXPECT_EQ(*ParseCpuList("2-4,0"), (std::vector<int>{0, 2, 3, 4}));
}

TEST(CpuList, BadLists) {
  struct Case {
    std::string in, error;
  };
  for (const Case& c : std::vector<Case>{
           {"0-55,,112", "item 2 is empty (two commas, or a comma at an end)"},
           {"0-3,", "item 2 is empty (two commas, or a comma at an end)"},
           {",1", "item 1 is empty (two commas, or a comma at an end)"},
           {"55-0", "range '55-0' runs backwards (write 0-55)"},
           {"0-5a", "item '0-5a' is not a number or a range N-M"},
           {"1-2-3", "item '1-2-3' is not a number or a range N-M"},
           {"-3", "item '-3' is not a number or a range N-M"},
           {"0 - 3", "item '0 - 3' is not a number or a range N-M"},
           {"0-65536", "item '0-65536' names a number above 65535"},
           {"99999999999999999999", "item '99999999999999999999' names a number above 65535"},
       }) {
    auto v = ParseCpuList(c.in);
    ASSERT_FALSE(v.has_value()) << c.in;
    EXPECT_EQ(v.error().message, c.error) << c.in;
  }
}

TEST(NvidiaSmiAffinity, BadInputs) {
  const std::string head = "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n";
  const std::string gpu0 = "GPU0\t X \tNV12\t0-23\t0\t\tN/A\n";
  struct Case {
    std::string name, text, error;
  };
  const std::vector<Case> cases = {
      {"empty item", head + gpu0 + "GPU1\tNV12\t X \t24-47,,48\t1\t\tN/A\n",
       "t.txt:3: GPU1, CPU Affinity '24-47,,48': item 2 is empty (two commas, or a comma at an end); expected a cpu list such as "
       "0-55,112-167, or N/A"},
      {"backwards", head + gpu0 + "GPU1\tNV12\t X \t47-24\t1\t\tN/A\n", "t.txt:3: GPU1, CPU Affinity '47-24': range '47-24' runs backwards"},
      {"letters", head + "GPU0\t X \tNV12\tall\t0\t\tN/A\n" + "GPU1\tNV12\t X \t0-23\t0\t\tN/A\n",
       "t.txt:2: GPU0, CPU Affinity 'all': item 'all' is not a number"},
      {"huge", head + gpu0 + "GPU1\tNV12\t X \t0-4000000000\t1\t\tN/A\n", "names a number above 65535"},
      {"bad NUMA", head + gpu0 + "GPU1\tNV12\t X \t24-47\tnode1\t\tN/A\n",
       "t.txt:3: GPU1, NUMA Affinity 'node1': item 'node1' is not a number or a range N-M; expected a node number or list"},
      {"bad GPU NUMA ID", head + gpu0 + "GPU1\tNV12\t X \t24-47\t1\t\t-1\n", "t.txt:3: GPU1, GPU NUMA ID '-1' is not a node number or N/A"},
      // A GPU without its affinity cells: the row is short of the header's columns.
      {"GPU missing affinity", head + gpu0 + "GPU1\tNV12\t X \n", "t.txt:3: row GPU1 has 2 cells but the header (line 1) has 5 columns"},
      {"GPU missing one cell", head + gpu0 + "GPU1\tNV12\t X \t24-47\t1\n", "t.txt:3: row GPU1 has 4 cells"},
      {"no affinity column", "\tGPU0\tGPU1\tNUMA Affinity\nGPU0\t X \tNV12\t0\nGPU1\tNV12\t X \t1\n",
       "t.txt:1: the matrix has no 'CPU Affinity' column"},
      {"no matrix", "", "t.txt:1: the file is empty"},
      {"GPU rows cut", head + gpu0, "t.txt:2: GPU rows stop after GPU0"},
      {"control bytes", head + gpu0 + "GPU1\tNV12\t X \t24-\x01\t1\t\tN/A\n", "t.txt:3: GPU1, CPU Affinity '24-?'"},
  };
  for (const Case& c : cases) {
    auto a = ReadNvidiaSmiAffinity(c.text, "t.txt");
    ASSERT_FALSE(a.has_value()) << c.name;
    EXPECT_NE(a.error().message.find(c.error), std::string::npos) << c.name << ": " << a.error().message;
  }
}

TEST(NvidiaSmiAffinity, RandomDamageNeverCrashes) {
  TIDAL_REQUIRE_DIR(kDir);
  std::mt19937 rng(20240917);
  for (const std::string& f : testing::FixtureFiles(kDir)) {
    const std::string text = Slurp(kDir + f);
    for (int i = 0; i < 300; ++i) {
      auto a = ReadNvidiaSmiAffinity(testing::Mutate(text, rng), f);
      if (!a) {
        EXPECT_EQ(a.error().message.rfind(f + ":", 0), 0u) << a.error().message;  // every error says where
        continue;
      }
      for (const auto& g : a->gpus)
        for (int c : g.cpus) ASSERT_LE(c, kMaxCpuListId);
    }
  }
}

}  // namespace
}  // namespace tidal::topo

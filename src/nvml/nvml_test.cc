// NVML loaded at run time, against a stand-in libnvidia-ml (testing/
// fake_nvml.cc, NVML's C ABI) that describes real machines: the layouts of
// real `nvidia-smi topo -m` outputs (../shared/fixtures/nvidia-smi-topo) are
// turned into what NVML reports for those machines (links to NVSwitches or
// to the peer GPU, PCIe common ancestors, NUMA nodes), and tidal's NVML
// reader must give back the same host layout as tidal's nvidia-smi reader
// gives for the file.
#include "nvml/nvml.h"

#include <dlfcn.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tidal::nvml {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using json = nlohmann::json;
using topo::nvsmi::Path;

std::string Bus(int g) { return fmt::format("00000000:{:02X}:00.0", 0x18 + 16 * g); }

int Level(Path p) {
  switch (p) {
    case Path::kPix: return 10;
    case Path::kPxb: return 20;
    case Path::kPhb: return 30;
    case Path::kNode: return 40;
    default: return 50;
  }
}

// What NVML would say on the machine `m` describes.
json NodeFromMatrix(const topo::nvsmi::Matrix& m) {
  const int n = m.gpus;
  bool mesh = n > 2;
  int mesh_links = -1;
  for (int a = 0; a < n && mesh; ++a)
    for (int b = 0; b < n && mesh; ++b) {
      if (a == b) continue;
      const auto& c = m.At(a, b);
      if (c.path != Path::kNv || (mesh_links >= 0 && c.links != mesh_links)) mesh = false;
      mesh_links = c.links;
    }
  json gpus = json::array();
  for (int g = 0; g < n; ++g) {
    json links = json::array();
    if (mesh) {
      for (int l = 0; l < mesh_links; ++l) links.push_back({{"active", true}, {"remote", fmt::format("00000000:{:02X}:00.0", 0xE0 + l % 4)}});
    } else {
      for (int b = 0; b < n; ++b) {
        if (b != g && m.At(g, b).path == Path::kNv) {
          for (int l = 0; l < m.At(g, b).links; ++l) links.push_back({{"active", true}, {"remote", Bus(b)}});
        }
      }
    }
    links.push_back({{"active", false}, {"remote", ""}});  // an unused port
    json gpu = {{"name", "NVIDIA H100 80GB HBM3"}, {"uuid", fmt::format("GPU-{:08x}-0000-0000-0000-000000000000", g)},
                {"bus_id", Bus(g)}, {"memory_total", 85520809984ULL}, {"memory_used", 1073741824ULL * g},
                {"util", json::array({10 * g, 5 * g})}, {"nvlink", links}};
    const std::string numa = m.numa_extra >= 0 ? m.numa[static_cast<size_t>(g)] : "";
    gpu["numa"] = !numa.empty() && std::isdigit(static_cast<unsigned char>(numa[0])) ? json(std::stoi(numa)) : json(nullptr);
    gpus.push_back(gpu);
  }
  json anc = json::array();
  for (int a = 0; a < n; ++a) {
    json row = json::array();
    for (int b = 0; b < n; ++b) {
      const auto& c = m.At(a, b);
      row.push_back(a == b ? 0 : c.path == Path::kNv ? 40 : Level(c.path));
    }
    anc.push_back(row);
  }
  return {{"driver", "550.54.15"}, {"gpus", gpus}, {"ancestor", anc}};
}

// The fixture's matrix without its NIC columns (NVML reports GPUs only).
topo::nvsmi::Matrix GpusOnly(topo::nvsmi::Matrix m) {
  m.cols.resize(static_cast<size_t>(m.gpus));
  for (auto& row : m.cells) row.resize(static_cast<size_t>(m.gpus));
  m.nic_line.clear();
  m.nic_name.clear();
  return m;
}

class NvmlTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (!path_.empty()) std::remove(path_.c_str());
  }
  void Use(const json& node) {
    path_ = ::testing::TempDir() + fmt::format("fake-nvml-{}.json", ::getpid());
    std::ofstream(path_) << node.dump();
    setenv("TIDAL_FAKE_NVML", path_.c_str(), 1);
  }
  Result<NodeGpus> Read() {
    auto lib = Library::Open(TIDAL_FAKE_NVML_LIB);
    if (!lib) return std::unexpected(lib.error());
    return (*lib)->Read();
  }
  std::string path_;
};

TEST_F(NvmlTest, RealMachinesReadThroughNvmlGiveTheLayoutNvidiaSmiGives) {
  const fs::path dir = fs::path(TIDAL_SHARED_DIR) / "fixtures" / "nvidia-smi-topo";
  if (!fs::exists(dir)) GTEST_SKIP() << "no fixtures";
  int checked = 0;
  for (const char* file : {"stas00-ml-engineering-h100-8gpu-nv18.txt", "stas00-ml-engineering-a100-8gpu-nv12.txt",
                           "hpe-dl380a-gen11-h100-pcie-x2-nvlink-bridge.txt", "xuesongtap-a10-4gpu-pcie-sys-2nic-spaces.txt",
                           "nccl-tests-issue-331-a100-4gpu-nv4-4nic.txt", "xuesongtap-desktop-2x-gtx1080ti-phb.txt",
                           "xuesongtap-a100-8gpu-nv12-17nic-spaces.txt", "h100-sxm-8gpu-vm-passthrough-tabs-rhel-ai.txt"}) {
    SCOPED_TRACE(file);
    std::ifstream in(dir / file);
    std::stringstream ss;
    ss << in.rdbuf();
    auto fixture = topo::nvsmi::ReadMatrix(ss.str(), file);
    ASSERT_TRUE(fixture) << fixture.error().message;
    const topo::nvsmi::Matrix want = GpusOnly(*fixture);
    Use(NodeFromMatrix(want));
    auto node = Read();
    ASSERT_TRUE(node) << node.error().message;
    ASSERT_EQ(node->gpus.size(), static_cast<size_t>(want.gpus));
    const topo::nvsmi::Matrix got = ToMatrix(*node);
    for (int a = 0; a < want.gpus; ++a)
      for (int b = 0; b < want.gpus; ++b) EXPECT_EQ(got.At(a, b), want.At(a, b)) << "GPU" << a << " GPU" << b;
    std::vector<std::string> notes_a, notes_b;
    const topo::HostLayout la = topo::nvsmi::LayoutFromMatrix(got, "nvml", notes_a);
    const topo::HostLayout lb = topo::nvsmi::LayoutFromMatrix(want, "nvidia-smi", notes_b);
    EXPECT_EQ(la, lb);
    ++checked;
  }
  EXPECT_EQ(checked, 8);
}

TEST_F(NvmlTest, ReadsDevicesMemoryUtilisationMigAndLinks) {
  json node = {{"driver", "550.54.15"},
               {"gpus",
                {{{"name", "NVIDIA A100-SXM4-40GB"},
                  {"uuid", "GPU-5b5fb8f2-0000-0000-0000-000000000000"},
                  {"bus_id", "00000000:07:00.0"},
                  {"memory_total", 42949672960ULL},
                  {"memory_used", 2147483648ULL},
                  {"util", nullptr},
                  {"numa", 1},
                  {"mig",
                   {{"current", 1},
                    {"pending", 1},
                    {"max", 7},
                    {"devices",
                     {{{"slot", 0}, {"uuid", "MIG-c6d4f1ef-0000"}, {"name", "NVIDIA A100-SXM4-40GB MIG 3g.20gb"}, {"memory_total", 21474836480ULL}},
                      {{"slot", 3}, {"uuid", "MIG-1a2b3c4d-0000"}, {"name", "NVIDIA A100-SXM4-40GB MIG 1g.5gb"}, {"memory_total", 5368709120ULL}}}}}},
                  {"nvlink", {{{"active", true}, {"remote", "0000:C4:00.0"}}, {{"active", false}}, {{"active", true}, {"remote", "0000:C4:00.0"}}}}},
                 {{"name", "NVIDIA A100-SXM4-40GB"},
                  {"uuid", "GPU-2"},
                  {"bus_id", "00000000:0F:00.0"},
                  {"memory_total", 42949672960ULL},
                  {"memory_used", 0},
                  {"util", {97, 40}},
                  {"numa", nullptr},
                  {"nvlink", nullptr}}}},
               {"ancestor", {{0, 30}, {30, 0}}}};
  Use(node);
  auto r = Read();
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->driver_version, "550.54.15");
  ASSERT_EQ(r->gpus.size(), 2u);
  const Gpu& a = r->gpus[0];
  EXPECT_EQ(a.name, "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(a.uuid, "GPU-5b5fb8f2-0000-0000-0000-000000000000");
  EXPECT_EQ(a.bus_id, "00000000:07:00.0");
  EXPECT_EQ(a.memory_total_mib, 40960u);
  EXPECT_EQ(a.memory_used_mib, 2048u);
  EXPECT_FALSE(a.util_gpu_pct.has_value());  // not supported under MIG
  EXPECT_EQ(a.numa_node, 1u);
  EXPECT_TRUE(a.mig_enabled);
  EXPECT_TRUE(a.mig_pending);
  ASSERT_EQ(a.mig.size(), 2u);
  EXPECT_EQ(a.mig[1].index, 3u);
  EXPECT_EQ(a.mig[1].name, "NVIDIA A100-SXM4-40GB MIG 1g.5gb");
  EXPECT_EQ(a.mig[1].memory_total_mib, 5120u);
  ASSERT_EQ(a.nvlinks.size(), 2u);
  EXPECT_EQ(a.nvlinks[1].link, 2u);
  EXPECT_EQ(a.nvlinks[1].remote_bus_id, "0000:C4:00.0");
  const Gpu& b = r->gpus[1];
  EXPECT_EQ(b.util_gpu_pct, 97u);
  EXPECT_EQ(b.util_memory_pct, 40u);
  EXPECT_FALSE(b.numa_node.has_value());
  EXPECT_FALSE(b.mig_enabled);
  EXPECT_TRUE(b.nvlinks.empty());
  EXPECT_EQ(r->ancestor[0][1], 30);
  EXPECT_THAT(r->notes, ::testing::Contains(HasSubstr("nvmlDeviceGetUtilizationRates is not supported here")));
  EXPECT_THAT(r->notes, ::testing::Contains(HasSubstr("nvmlDeviceGetNvLinkState is not supported here")));
  EXPECT_THAT(r->notes, ::testing::Not(::testing::Contains(HasSubstr("no nvmlDeviceGetNumaNodeId"))));
  // GPU 0's links reach a switch (not GPU 1), GPU 1 has none: PCIe host bridge between them.
  const auto m = ToMatrix(*r);
  EXPECT_EQ(m.At(0, 1), (topo::nvsmi::Cell{Path::kPhb, 0}));
  EXPECT_EQ(m.numa[0], "1");
  EXPECT_EQ(m.numa[1], "N/A");
  const auto j = ToJson(*r);
  EXPECT_EQ(j["gpus"][0]["mig"]["devices"][1]["uuid"], "MIG-1a2b3c4d-0000");
  EXPECT_TRUE(j["gpus"][0]["util_gpu_pct"].is_null());
  EXPECT_EQ(j["gpus"][1]["util_gpu_pct"], 97);
}

// NVLinks are matched to GPUs by PCI bus id whatever the width of its
// domain; a link to anything else (an NVSwitch) joins the switch fabric.
// Each pair's PCIe path is asked once; a board-internal path is PIX.
TEST_F(NvmlTest, LinksFindTheirPeersAcrossDomainsAndEachPairIsAskedOnce) {
  auto gpu = [](const std::string& bus, json links) {
    return json{{"name", "g"}, {"uuid", "GPU-" + bus}, {"bus_id", bus}, {"memory_total", 1ULL << 34}, {"util", {0, 0}}, {"numa", 0}, {"nvlink", links}};
  };
  const json to1 = {{{"active", true}, {"remote", "000A:07:00.0"}}, {{"active", true}, {"remote", "0000000a:07:00.0"}}};
  const json to0 = {{{"active", true}, {"remote", "00000009:07:00.0"}}, {{"active", true}, {"remote", "0009:07:00.0"}}};
  const json sw = {{{"active", true}, {"remote", "00000000:E0:00.0"}}, {{"active", true}, {"remote", "00000000:E1:00.0"}}};
  Use({{"gpus", {gpu("00000009:07:00.0", to1), gpu("0000000A:07:00.0", to0), gpu("00000000:07:00.0", sw), gpu("00000000:08:00.0", json::array())}},
       {"ancestor", {{0, 0, 50, 50}, {0, 0, 50, 50}, {50, 50, 0, 10}, {50, 50, 10, 0}}}});
  auto lib = Library::Open(TIDAL_FAKE_NVML_LIB);
  ASSERT_TRUE(lib);
  auto r = (*lib)->Read();
  ASSERT_TRUE(r) << r.error().message;
  const auto m = ToMatrix(*r);
  EXPECT_EQ(m.At(0, 1), (topo::nvsmi::Cell{Path::kNv, 2}));  // a bridge, found across domain spellings
  EXPECT_EQ(m.At(1, 0), (topo::nvsmi::Cell{Path::kNv, 2}));
  EXPECT_EQ(m.At(0, 2), (topo::nvsmi::Cell{Path::kSys, 0}));  // GPU 2's links go to a switch GPU 0 is not on
  EXPECT_EQ(m.At(2, 3), (topo::nvsmi::Cell{Path::kPix, 0}));
  void* h = dlopen(TIDAL_FAKE_NVML_LIB, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(h, nullptr);
  auto calls = reinterpret_cast<unsigned (*)()>(dlsym(h, "tidal_fake_nvml_ancestor_calls"));
  ASSERT_NE(calls, nullptr);
  EXPECT_EQ(calls(), 6u);  // 4 GPUs: each of the 6 pairs once
  dlclose(h);
  // Two GPUs on one board (K80-style): the path is internal, PIX.
  Use({{"gpus", {gpu("00000000:05:00.0", json::array()), gpu("00000000:06:00.0", json::array())}}, {"ancestor", {{0, 0}, {0, 0}}}});
  auto board = Read();
  ASSERT_TRUE(board);
  EXPECT_EQ(ToMatrix(*board).At(0, 1), (topo::nvsmi::Cell{Path::kPix, 0}));
}

// An NVML before 12 has no NUMA node ids: the GPUs have none, and a note says why.
TEST_F(NvmlTest, AnOldNvmlWithoutNumaIdsIsReadWithANote) {
  Use({{"gpus", {{{"name", "g"}, {"uuid", "u"}, {"memory_total", 1ULL << 34}, {"numa", 0}}}}});
  auto lib = Library::Open(TIDAL_FAKE_NVML_OLD_LIB);
  ASSERT_TRUE(lib) << lib.error().message;
  auto r = (*lib)->Read();
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_FALSE(r->gpus[0].numa_node.has_value());
  EXPECT_THAT(r->notes, ::testing::Contains(HasSubstr("this NVML has no nvmlDeviceGetNumaNodeId (NVML < 12)")));
}

TEST_F(NvmlTest, NoDriverIsAClearErrorNamingTheDcgmPath) {
  auto none = Library::Open("/nonexistent/libnvidia-ml.so.1");
  ASSERT_FALSE(none);
  EXPECT_THAT(none.error().message, HasSubstr("cannot load NVML (/nonexistent/libnvidia-ml.so.1)"));
  EXPECT_THAT(none.error().message, HasSubstr("DCGM exporter"));
  auto libc = Library::Open("libc.so.6");
  ASSERT_FALSE(libc);
  EXPECT_THAT(libc.error().message, HasSubstr("is not NVML, or too old"));
  EXPECT_THAT(libc.error().message, HasSubstr("nvmlInit_v2"));
  Use({{"init_error", 9}, {"gpus", json::array()}});
  auto down = Library::Open(TIDAL_FAKE_NVML_LIB);
  ASSERT_FALSE(down);
  EXPECT_THAT(down.error().message, HasSubstr("nvmlInit_v2 failed: Driver Not Loaded (NVML error 9)"));
  // A GPU that fell off the bus is an error naming it.
  Use({{"gpus", {{{"name", "x"}, {"uuid", "u"}}, {{"lost", true}}}}});
  auto lost = Read();
  ASSERT_FALSE(lost);
  EXPECT_THAT(lost.error().message, HasSubstr("nvmlDeviceGetHandleByIndex_v2(1): GPU is lost (NVML error 15)"));
}

// `tidal topo nvml` prints the node as JSON: devices, the matrix and the layout.
TEST_F(NvmlTest, TheCommandPrintsTheNodeAsJson) {
  const fs::path file = fs::path(TIDAL_SHARED_DIR) / "fixtures" / "nvidia-smi-topo" / "stas00-ml-engineering-h100-8gpu-nv18-ht-affinity.txt";
  if (!fs::exists(file)) GTEST_SKIP() << "no fixtures";
  std::ifstream in(file);
  std::stringstream ss;
  ss << in.rdbuf();
  auto m = topo::nvsmi::ReadMatrix(ss.str(), file.string());
  ASSERT_TRUE(m) << m.error().message;
  Use(NodeFromMatrix(GpusOnly(*m)));
  const std::string cmd = fmt::format("{} topo nvml --lib {} 2>&1", TIDAL_BINARY, TIDAL_FAKE_NVML_LIB);
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  EXPECT_EQ(pclose(p), 0) << out;
  const json j = json::parse(out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << out;
  EXPECT_EQ(j["gpus"].size(), 8u);
  EXPECT_EQ(j["gpus"][3]["nvlinks"].size(), 18u);
  EXPECT_EQ(j["matrix"][0][1], "NV18");
  EXPECT_EQ(j["layout"]["gpus"], 8);
  EXPECT_TRUE(j["layout"]["nvlink"].get<bool>());
  EXPECT_EQ(j["layout"]["gbps"], 450.0);
  ASSERT_EQ(j["layout"]["groups"].size(), 2u);  // the two NUMA nodes
  EXPECT_EQ(j["layout"]["groups"][1]["gpus"], json::array({4, 5, 6, 7}));
  // Without NVML: exit 2 and the reason.
  FILE* q = popen(fmt::format("{} topo nvml --lib /nonexistent/libnvidia-ml.so.1 2>&1", TIDAL_BINARY).c_str(), "r");
  std::string err;
  for (size_t n; (n = fread(buf, 1, sizeof buf, q)) > 0;) err.append(buf, n);
  EXPECT_EQ(WEXITSTATUS(pclose(q)), 2);
  EXPECT_THAT(err, HasSubstr("tidal topo nvml: cannot load NVML"));
}

}  // namespace
}  // namespace tidal::nvml

// The writers' outputs as golden text, the write order, and WriteCgroupDir /
// CheckCgroupDir on a plain directory standing in for a cgroup (the real
// kernel is cgroup_real_test.cc's business).
#include "isolation/cgroup_writers.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "isolation/isolation_test_util.h"

namespace tidal::isolation {
namespace {

using testing::H100Layout;
using testing::Request;
constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kGiB = kMiB * 1024;

CgroupSettings StandardTraining() {
  auto s = PlanCgroup(Request("finetune", Tier::kStandard, WorkloadKind::kTraining, 16, 131072, {0, 1}, 500), H100Layout(),
                      DefaultIsolationPolicy());
  EXPECT_TRUE(s.has_value()) << s.error().message;
  return s ? *s : CgroupSettings{};
}

CgroupSettings GuaranteedInference() {
  auto s = PlanCgroup(Request("llm", Tier::kGuaranteed, WorkloadKind::kInference, 8, 65536, {4}), H100Layout(), DefaultIsolationPolicy());
  EXPECT_TRUE(s.has_value()) << s.error().message;
  return s ? *s : CgroupSettings{};
}

TEST(CgroupFiles, StandardTraining) {
  const std::vector<CgroupFile> want = {
      {"cpuset.mems", "0"},
      {"cpuset.cpus", "0-51,112-163"},
      {"cpu.weight", "100"},
      {"cpu.max", "1600000 100000"},
      {"memory.high", "123694219264"},  // 117964 MiB
      {"memory.max", "137438953472"},   // 131072 MiB
      {"memory.min", "0"},
      {"io.max", "259:0 rbps=max wbps=500000000 riops=max wiops=max"},
  };
  EXPECT_EQ(CgroupFiles(StandardTraining()), want);
}

TEST(CgroupFiles, GuaranteedInferenceHasNoLimitsButTheHardOne) {
  const std::vector<CgroupFile> want = {
      {"cpuset.mems", "1"},          {"cpuset.cpus", "56-111,168-223"}, {"cpu.weight", "1000"}, {"cpu.max", "max 100000"},
      {"memory.high", "max"},        {"memory.max", "68719476736"},     {"memory.min", "68719476736"},
  };
  EXPECT_EQ(CgroupFiles(GuaranteedInference()), want);
}

std::vector<std::string> MemoryOrder(const CgroupSettings& s, const MemoryLimits& cur) {
  std::vector<std::string> out;
  for (const auto& f : CgroupWritePlan(s, cur))
    if (f.name.starts_with("memory.")) out.push_back(f.name);
  return out;
}

// min <= high <= max after every single write, from any valid old state.
TEST(CgroupWritePlan, MemoryOrderIsSafe) {
  const CgroupSettings s = StandardTraining();  // min 0, high 117964 MiB, max 128 GiB
  EXPECT_EQ(MemoryOrder(s, {}), (std::vector<std::string>{"memory.high", "memory.max", "memory.min"}));
  // Shrinking from a bigger, protected plan: drop the protection first, the ceiling last.
  EXPECT_EQ(MemoryOrder(s, {64 * kGiB, 200 * kGiB, 256 * kGiB}), (std::vector<std::string>{"memory.min", "memory.high", "memory.max"}));
  // Growing from a smaller plan: raise the ceiling first.
  EXPECT_EQ(MemoryOrder(s, {0, 50 * kGiB, 60 * kGiB}), (std::vector<std::string>{"memory.max", "memory.high", "memory.min"}));
  const CgroupSettings g = GuaranteedInference();  // min = max = 64 GiB, high max
  // From a smaller guaranteed plan (min 32 GiB, max 32 GiB): max up, high, then min up.
  EXPECT_EQ(MemoryOrder(g, {32 * kGiB, std::nullopt, 32 * kGiB}), (std::vector<std::string>{"memory.max", "memory.high", "memory.min"}));
}

TEST(SystemdDropIn, Service) {
  EXPECT_EQ(SystemdDropIn(StandardTraining(), SystemdSection::kService),
            "# tidal: cgroup v2 settings for finetune (standard training) as a systemd drop-in (systemd.resource-control(5)).\n"
            "# Save as /etc/systemd/system/UNIT.d/50-tidal-isolation.conf and run `systemctl daemon-reload`.\n"
            "# CPUWeight= sets cpu.weight, CPUQuota= and CPUQuotaPeriodSec= cpu.max, AllowedCPUs= cpuset.cpus,\n"
            "# AllowedMemoryNodes= cpuset.mems, MemoryMin/High/Max= memory.min/high/max, IOWriteBandwidthMax= io.max.\n"
            "[Service]\n"
            "CPUWeight=100\n"
            "CPUQuota=1600%\n"
            "CPUQuotaPeriodSec=100ms\n"
            "AllowedCPUs=0-51,112-163\n"
            "AllowedMemoryNodes=0\n"
            "MemoryMin=0\n"
            "MemoryHigh=123694219264\n"
            "MemoryMax=137438953472\n"
            "IOWriteBandwidthMax=/dev/nvme1n1 500000000\n");
}

TEST(SystemdDropIn, SliceWithoutQuotaAndARoundedOne) {
  const std::string g = SystemdDropIn(GuaranteedInference(), SystemdSection::kSlice);
  EXPECT_NE(g.find("[Slice]\nCPUWeight=1000\nCPUQuota=\nCPUQuotaPeriodSec=100ms\nAllowedCPUs=56-111,168-223\nAllowedMemoryNodes=1\n"
                   "MemoryMin=68719476736\nMemoryHigh=infinity\nMemoryMax=68719476736\n"),
            std::string::npos)
      << g;
  CgroupSettings s = StandardTraining();
  s.cpu_quota_us = 123456;  // 123.456 % of a CPU
  const std::string r = SystemdDropIn(s, SystemdSection::kScope);
  EXPECT_NE(r.find("# CPUQuota= holds 1/100 %: cpu.max's 123456 µs per 100000 µs is rounded down to 123.45%.\n[Scope]\n"),
            std::string::npos)
      << r;
  EXPECT_NE(r.find("CPUQuota=123.45%\n"), std::string::npos);
  s.cpu_quota_us = 50000;
  s.cpu_period_us = 250;
  EXPECT_NE(SystemdDropIn(s, SystemdSection::kService).find("CPUQuota=20000%\nCPUQuotaPeriodSec=250us\n"), std::string::npos);
}

TEST(Kubernetes, YamlOfStandardTraining) {
  EXPECT_EQ(KubernetesResourcesYaml(StandardTraining()),
            "# tidal: Kubernetes resources for finetune (standard training), as a Pod patch.\n"
            "# QoS class Guaranteed (requests equal limits). What the kubelet makes of them (cgroup v2):\n"
            "#   limits.cpu -> cpu.max \"1600000 100000\" at the kubelet's default 100ms cpuCFSQuotaPeriod (tidal: \"1600000 "
            "100000\")\n"
            "#   requests.cpu -> cpu.weight by the runtime's conversion of CPU shares, not tidal's 100\n"
            "#   limits.memory -> memory.max 137438953472\n"
            "#   requests.memory -> memory.min (memory.low for Burstable pods in newer kubelets) only with the MemoryQoS\n"
            "#     feature gate and its reservation policy; memory.high only with memoryThrottlingFactor, by its formula\n"
            "#   cpuset.cpus/mems -> only with the static CPU manager policy (this pod qualifies: Guaranteed, whole CPUs); the "
            "kubelet picks the CPUs\n"
            "#   io.max -> no Kubernetes resource\n"
            "# The cgroup.tidal.io/ annotations carry tidal's value of each such file, for a node agent to write.\n"
            "metadata:\n"
            "  annotations:\n"
            "    cgroup.tidal.io/cpu.weight: \"100\"\n"
            "    cgroup.tidal.io/cpuset.cpus: \"0-51,112-163\"\n"
            "    cgroup.tidal.io/cpuset.mems: \"0\"\n"
            "    cgroup.tidal.io/memory.min: \"0\"\n"
            "    cgroup.tidal.io/memory.high: \"123694219264\"\n"
            "    cgroup.tidal.io/io.max: \"259:0 rbps=max wbps=500000000 riops=max wiops=max\"\n"
            "spec:\n"
            "  containers:\n"
            "  - name: \"finetune\"\n"
            "    resources:\n"
            "      requests:\n"
            "        cpu: \"16\"\n"
            "        memory: \"128Gi\"\n"
            "      limits:\n"
            "        cpu: \"16\"\n"
            "        memory: \"128Gi\"\n");
}

TEST(Kubernetes, JsonOfUnlimitedInferenceAndLoweredSpot) {
  EXPECT_EQ(KubernetesResourcesJson(GuaranteedInference()).dump(),
            R"({"metadata":{"annotations":{"cgroup.tidal.io/cpu.weight":"1000","cgroup.tidal.io/cpuset.cpus":"56-111,168-223",)"
            R"("cgroup.tidal.io/cpuset.mems":"1","cgroup.tidal.io/memory.min":"68719476736","cgroup.tidal.io/memory.high":"max"}},)"
            R"("spec":{"containers":[{"name":"llm","resources":{"requests":{"cpu":"8","memory":"64Gi"},"limits":{"memory":"64Gi"}}}]}})");
  ContainerRequest c = Request("sweep", Tier::kSpot, WorkloadKind::kTraining, 3.5, 1000, {5});
  c.colocated_with_inference = true;
  auto s = PlanCgroup(c, H100Layout(), DefaultIsolationPolicy());
  ASSERT_TRUE(s.has_value());
  // cpu.max 175000 µs = 1750m; Kubernetes wants requests <= limits, so the request follows the limit.
  const auto j = KubernetesResourcesJson(*s);
  const auto& r = j["spec"]["containers"][0]["resources"];
  EXPECT_EQ(r["requests"]["cpu"], "1750m");
  EXPECT_EQ(r["limits"]["cpu"], "1750m");
  EXPECT_EQ(r["requests"]["memory"], "1000Mi");
  const std::string y = KubernetesResourcesYaml(*s);
  EXPECT_NE(y.find("(this pod does not qualify)"), std::string::npos) << y;
}

class FakeCgroup : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (std::filesystem::temp_directory_path() / ("tidal-fake-cgroup-" + std::to_string(::getpid()))).string();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void Put(const std::string& name, const std::string& v) { std::ofstream(dir_ + "/" + name) << v; }
  std::string Get(const std::string& name) {
    std::ifstream in(dir_ + "/" + name);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  void MakeAll() {
    for (const char* f : {"cpuset.mems", "cpuset.cpus", "cpu.weight", "cpu.max", "memory.min", "memory.high", "memory.max", "io.max"}) Put(f, "");
  }
  std::string dir_;
};

TEST_F(FakeCgroup, WritesAndReadsBack) {
  MakeAll();
  const CgroupSettings s = StandardTraining();
  ASSERT_TRUE(WriteCgroupDir(dir_, s).has_value());
  EXPECT_EQ(Get("cpu.max"), "1600000 100000\n");
  EXPECT_EQ(Get("io.max"), "259:0 rbps=max wbps=500000000 riops=max wiops=max\n");
  EXPECT_TRUE(CheckCgroupDir(dir_, s).has_value());
  // The kernel's own spelling of the same values still matches.
  Put("cpuset.cpus", "0-51,112-163\n");
  Put("io.max", "8:0 rbps=max wbps=max riops=max wiops=120\n259:0 rbps=max wbps=500000000 riops=max wiops=max\n");
  EXPECT_TRUE(CheckCgroupDir(dir_, s).has_value());
  Put("cpu.max", "max 100000\n");
  Put("cpuset.mems", "0-1\n");
  auto bad = CheckCgroupDir(dir_, s);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().message, dir_ + ": 2 file(s) do not read back as planned: cpuset.mems: wrote '0', reads '0-1'; cpu.max: wrote "
                                        "'1600000 100000', reads 'max 100000'");
}

TEST_F(FakeCgroup, MemoryReadsBackInWholePages) {
  MakeAll();
  CgroupSettings s = StandardTraining();
  s.memory_max_bytes = 1000000;  // not a page multiple: the kernel keeps whole pages, rounded down
  s.memory_high_bytes.reset();
  ASSERT_TRUE(WriteCgroupDir(dir_, s).has_value());
  const int64_t page = ::sysconf(_SC_PAGESIZE);
  Put("memory.max", std::to_string(1000000 / page * page) + "\n");
  EXPECT_TRUE(CheckCgroupDir(dir_, s).has_value());
  Put("memory.max", "1000000\n");
  EXPECT_EQ(CheckCgroupDir(dir_, s).has_value(), 1000000 % page == 0);
}

TEST_F(FakeCgroup, MissingControllerWritesNothing) {
  MakeAll();
  std::filesystem::remove(dir_ + "/io.max");
  auto st = WriteCgroupDir(dir_, StandardTraining());
  ASSERT_FALSE(st.has_value());
  EXPECT_EQ(st.error().message, dir_ + "/io.max does not exist: the io controller is not enabled for this cgroup; enable it in the "
                                       "parent with `echo +io > PARENT/cgroup.subtree_control` (it must be listed in "
                                       "PARENT/cgroup.controllers). Nothing was written");
  EXPECT_EQ(Get("cpu.max"), "");
}

TEST_F(FakeCgroup, NotADirectory) {
  auto st = WriteCgroupDir(dir_ + "/nope", StandardTraining());
  ASSERT_FALSE(st.has_value());
  EXPECT_NE(st.error().message.find("/nope is not a directory: create the cgroup first"), std::string::npos);
}

TEST_F(FakeCgroup, ReadsTheCurrentLimitsToOrderTheWrites) {
  MakeAll();
  Put("memory.min", "68719476736\n");  // 64 GiB protected: must be lowered before high and max come down
  Put("memory.high", "max\n");
  Put("memory.max", "274877906944\n");
  const CgroupSettings s = StandardTraining();
  ASSERT_TRUE(WriteCgroupDir(dir_, s).has_value());
  EXPECT_TRUE(CheckCgroupDir(dir_, s).has_value());
  EXPECT_EQ(Get("memory.min"), "0\n");
}

}  // namespace
}  // namespace tidal::isolation

// End-to-end: `tidal cgroup plan` as a user runs it on a real fixture; bad
// input gives the located message and exit status 2.
#include <sys/wait.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <array>
#include <cstdio>
#include <filesystem>

namespace {

const std::string kTopo = std::string(TIDAL_SHARED_DIR) + "/fixtures/nvidia-smi-topo/dgx-h100-12nic-tabs-TRUNCATED-talos-report.txt";

struct Output {
  int status = -1;
  std::string out;
};

Output Tidal(const std::string& args) {
  Output r;
  FILE* p = popen((std::string(TIDAL_BINARY) + " cgroup plan --topo " + kTopo + " " + args + " 2>&1").c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

TEST(CgroupCli, FilesOfStandardTraining) {
  if (!std::filesystem::exists(kTopo)) GTEST_SKIP() << kTopo << " absent (shared/ missing)";
  const Output o = Tidal("--gpus 0,1 --tier standard --kind training --cpus 16 --memory 128GiB --reserve 52-55,164-167 "
                         "--checkpoint-mbps 500 --checkpoint-device 259:0");
  EXPECT_EQ(o.status, 0) << o.out;
  EXPECT_EQ(o.out,
            "# cpuset.cpus leaves out the inference reserve 52-55,164-167: a standard training container may not use it\n"
            "cpuset.mems: 0\ncpuset.cpus: 0-51,112-163\ncpu.weight: 100\ncpu.max: 1600000 100000\nmemory.high: 123694219264\n"
            "memory.max: 137438953472\nmemory.min: 0\nio.max: 259:0 rbps=max wbps=500000000 riops=max wiops=max\n");
}

TEST(CgroupCli, JsonOfGuaranteedInference) {
  if (!std::filesystem::exists(kTopo)) GTEST_SKIP() << kTopo << " absent (shared/ missing)";
  const Output o = Tidal("--gpus 4 --tier guaranteed --kind inference --cpus 8 --memory 64GiB --format json");
  ASSERT_EQ(o.status, 0) << o.out;
  const auto j = nlohmann::json::parse(o.out);
  EXPECT_EQ(j["files"]["cpu.max"], "max 100000");
  EXPECT_EQ(j["files"]["cpuset.cpus"], "56-111,168-223");
  EXPECT_EQ(j["files"]["memory.min"], "68719476736");
}

TEST(CgroupCli, BadInputIsExitTwoWithWhere) {
  if (!std::filesystem::exists(kTopo)) GTEST_SKIP() << kTopo << " absent (shared/ missing)";
  Output o = Tidal("--gpus 9 --cpus 8 --memory 64GiB");
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.out.find("container job: GPU 9 is not on node " + kTopo + ", which has GPUs 0-7"), std::string::npos) << o.out;
  o = Tidal("--gpus 0 --cpus 8 --memory 64GB");
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.out.find("--memory '64GB': give a whole number of MiB, GiB or TiB"), std::string::npos) << o.out;
  o = Tidal("--gpus 0 --cpus 8 --memory 1GiB --checkpoint-mbps 100 --checkpoint-device sda");
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.out.find("--checkpoint-device 'sda': give MAJ:MIN"), std::string::npos) << o.out;
}

}  // namespace

#include "telemetry/dcgm.h"

#include <filesystem>

#include <gtest/gtest.h>

namespace tidal::telemetry {
namespace {

const std::string kDir = std::string(TIDAL_SHARED_DIR) + "/fixtures/dcgm-exporter/";

#define SKIP_WITHOUT_FIXTURES() \
  if (!std::filesystem::exists(kDir)) GTEST_SKIP() << "no " << kDir << " (shared fixtures not mounted)"

std::vector<DcgmSample> Read(const std::string& name) {
  auto r = ReadDcgmFile(kDir + name);
  EXPECT_TRUE(r) << r.error().message;
  return r ? *r : std::vector<DcgmSample>{};
}

TEST(DcgmTest, EveryFixtureParses) {
  SKIP_WITHOUT_FIXTURES();
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(kDir)) {
    if (e.path().extension() != ".prom") continue;
    auto r = ReadDcgmFile(e.path().string());
    EXPECT_TRUE(r) << e.path() << ": " << r.error().message;
    EXPECT_FALSE(r->empty()) << e.path();
    ++files;
  }
  EXPECT_GE(files, 10);
}

TEST(DcgmTest, BlankSentinelIsMissingAndElisionSkipped) {
  SKIP_WITHOUT_FIXTURES();
  const auto s = Read("cloud-native-docs-basic-sample.prom");
  ASSERT_EQ(s.size(), 3u);  // HELP/TYPE comments and "..." lines skipped
  EXPECT_EQ(s[0].metric, "DCGM_FI_DEV_SM_CLOCK");
  EXPECT_EQ(s[0].value, 139);
  EXPECT_EQ(s[0].labels.at("UUID"), "GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52");  // label after ", "
  EXPECT_EQ(s[2].metric, "DCGM_FI_DEV_MEMORY_TEMP");
  EXPECT_FALSE(s[2].value.has_value());
  EXPECT_TRUE(IsDcgmBlank(9223372036854775794.0));
  EXPECT_TRUE(IsDcgmBlank(140737488355328.0));
  EXPECT_TRUE(IsDcgmBlank(2147483632.0));
  EXPECT_FALSE(IsDcgmBlank(0.93));
}

TEST(DcgmTest, BothHostnameSpellings) {
  SKIP_WITHOUT_FIXTURES();
  const auto old_label = Read("cloud-native-docs-a100-mig-sample.prom");
  EXPECT_EQ(old_label[0].Host(), "ub20-a100-k8s");
  const auto new_label = Read("issue-dcgm-exporter-pr736-mixed-models-lowercase-hostname.prom");
  EXPECT_EQ(new_label[0].Host(), "dcgm-exporter-wwwjh");
  EXPECT_NE(new_label.back().GpuKey(), new_label[0].GpuKey());
}

TEST(DcgmTest, LowercasedMetricNamesAndTensorActiveSummary) {
  SKIP_WITHOUT_FIXTURES();
  const auto relabelled = Read("issue-dcgm-exporter-272-lowercased-relabelled.prom");
  EXPECT_EQ(relabelled[0].metric, "DCGM_FI_PROF_GR_ENGINE_ACTIVE");
  const auto mig = Read("cloud-native-docs-a100-mig-sample.prom");
  auto t = Summarize(mig, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->devices, 2);
  EXPECT_NEAR(t->mean, (0.929260 + 0.930433) / 2, 1e-9);
  EXPECT_FALSE(Summarize(mig, "DCGM_FI_PROF_SM_ACTIVE"));
}

TEST(DcgmTest, MalformedLinesNameFileAndLine) {
  auto r = ParseDcgmText("DCGM_FI_DEV_GPU_TEMP{gpu=\"0\"} 61\nDCGM_FI_DEV_GPU_TEMP{gpu=\"1\" 62\n", "scrape.prom");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("scrape.prom:2"), std::string::npos) << r.error().message;
  auto v = ParseDcgmText("DCGM_FI_DEV_GPU_TEMP{gpu=\"0\"} hot\n", "s.prom");
  ASSERT_FALSE(v);
  EXPECT_NE(v.error().message.find("s.prom:1"), std::string::npos);
  auto nan = ParseDcgmText("DCGM_FI_PROF_SM_ACTIVE{gpu=\"0\"} NaN 1700000000000\n", "n.prom");
  ASSERT_TRUE(nan);
  EXPECT_FALSE((*nan)[0].value);
}

}  // namespace
}  // namespace tidal::telemetry

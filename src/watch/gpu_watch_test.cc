// Live GPU activity per workload from real DCGM-exporter scrapes
// (../shared/fixtures/dcgm-exporter), fed to the hoarding detector, scraped
// over HTTP from an in-process exporter, and `tidal watch` as a process.
#include "watch/gpu_watch.h"

#include <httplib.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace tidal::watch {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const fs::path kDcgm = fs::path(TIDAL_SHARED_DIR) / "fixtures" / "dcgm-exporter";

std::string Slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<telemetry::DcgmSample> Parse(const std::string& text) {
  auto s = telemetry::ParseDcgmText(text, "test");
  EXPECT_TRUE(s) << s.error().message;
  return s ? *s : std::vector<telemetry::DcgmSample>{};
}

TEST(Workloads, PodsAreWorkloadsAndOtherDevicesStandAlone) {
  if (!fs::exists(kDcgm)) GTEST_SKIP() << "no fixtures";
  auto l40s = Workloads(Parse(Slurp(kDcgm / "issue-dcgm-226-l40s-pod-labels.prom")));
  ASSERT_EQ(l40s.size(), 2u);
  EXPECT_EQ(l40s[0].key, "l40s.example.com/2");  // no pod holds GPU 2
  EXPECT_EQ(l40s[0].devices, 1);
  EXPECT_EQ(l40s[1].key, "redacted/tensorflow-0");
  EXPECT_EQ(l40s[1].devices, 2);  // its container's two GPUs together
  EXPECT_EQ(l40s[1].model, "NVIDIA L40S");
  EXPECT_EQ(l40s[1].busiest.gr_engine_active, 0.0);
  EXPECT_TRUE(std::isnan(l40s[1].busiest.power_w));
  // MIG instances: each pod holds one; the free instance stands alone.
  auto mig = Workloads(Parse(Slurp(kDcgm / "issue-dcgm-exporter-512-h100-mig-pods.prom")));
  std::vector<std::string> keys;
  for (const auto& w : mig) keys.push_back(w.key);
  EXPECT_THAT(keys, ::testing::Contains("gsrh100-074/0/8"));
  EXPECT_THAT(keys, ::testing::Contains("model-playground-stg/tts-predictor-00011-deployment-5554f75554-8j8pl"));
}

TEST(Workloads, TheBusiestDeviceSpeaksForAWorkloadAndTensorActivityGivesMfu) {
  const std::string text =
      "DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu=\"0\",Hostname=\"h\",modelName=\"NVIDIA H100 80GB HBM3\",namespace=\"ml\",pod=\"p\"} 0.02\n"
      "DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu=\"1\",Hostname=\"h\",modelName=\"NVIDIA H100 80GB HBM3\",namespace=\"ml\",pod=\"p\"} 0.9\n"
      "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",Hostname=\"h\",namespace=\"ml\",pod=\"p\"} 40\n"
      "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",Hostname=\"h\",namespace=\"ml\",pod=\"p\"} 120.5\n"
      "DCGM_FI_DEV_POWER_USAGE{gpu=\"1\",Hostname=\"h\",namespace=\"ml\",pod=\"p\"} 610\n"
      "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{gpu=\"0\",Hostname=\"h\",modelName=\"NVIDIA H100 80GB HBM3\",namespace=\"ml\",pod=\"p\"} 0.2\n"
      "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{gpu=\"1\",Hostname=\"h\",modelName=\"NVIDIA H100 80GB HBM3\",namespace=\"ml\",pod=\"p\"} 0.6\n";
  auto w = Workloads(Parse(text));
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].key, "ml/p");
  EXPECT_EQ(w[0].devices, 2);
  EXPECT_DOUBLE_EQ(w[0].busiest.gr_engine_active, 0.9);
  EXPECT_DOUBLE_EQ(w[0].busiest.gpu_util, 0.4);
  EXPECT_DOUBLE_EQ(w[0].busiest.power_w, 610);
  ASSERT_TRUE(w[0].tensor_active);
  EXPECT_DOUBLE_EQ(*w[0].tensor_active, 0.4);
  ASSERT_TRUE(w[0].mfu.has_value());
  EXPECT_GT(*w[0].mfu, 0.0);
  EXPECT_LT(*w[0].mfu, 1.0);
}

market::HoardingConfig Fast() {
  market::HoardingConfig c;
  c.idle_period_s = 60;
  c.grace_s = 60;
  c.fee_interval_s = 60;
  c.reclaim_after_s = 120;
  c.max_gap_s = 300;
  return c;
}

TEST(GpuWatch, AnIdlePodIsNotifiedChargedAndReclaimedAndABusyOneNever) {
  const std::string idle = "DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu=\"0\",Hostname=\"h\",namespace=\"ml\",pod=\"idle\"} 0.01\n"
                           "DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu=\"2\",Hostname=\"h\",namespace=\"ml\",pod=\"idle\"} 0.02\n";
  const std::string busy = "DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu=\"1\",Hostname=\"h\",namespace=\"ml\",pod=\"busy\"} 0.8\n";
  GpuWatch watch(Fast());
  std::vector<WatchEvent> all;
  for (int64_t t = 0; t <= 600; t += 30) {
    auto e = watch.Observe(t, Parse(idle + busy));
    ASSERT_TRUE(e) << e.error().message;
    all.insert(all.end(), e->begin(), e->end());
  }
  std::vector<std::string> seen;
  for (const WatchEvent& e : all) {
    EXPECT_EQ(e.workload, "ml/idle");
    seen.push_back(std::string(market::HoardActionKindName(e.action.kind)) + "@" + std::to_string(e.action.at_s));
  }
  ASSERT_GE(seen.size(), 3u);
  EXPECT_EQ(seen.front(), std::string(market::HoardActionKindName(market::HoardActionKind::kNotify)) + "@60");
  EXPECT_EQ(all.back().action.kind, market::HoardActionKind::kReclaim);
  EXPECT_EQ(watch.detectors().at("ml/busy").state(), market::ZombieState::kActive);
  EXPECT_EQ(watch.detectors().at("ml/idle").state(), market::ZombieState::kReclaimed);
  EXPECT_EQ(watch.detectors().at("ml/idle").milli_gpus(), 2000);  // its two GPUs are charged
  EXPECT_EQ(watch.detectors().at("ml/busy").milli_gpus(), 1000);
  // Going back in time is refused, naming the workload.
  auto back = watch.Observe(10, Parse(busy));
  ASSERT_FALSE(back);
  EXPECT_THAT(back.error().message, HasSubstr("workload ml/busy"));
}

TEST(GpuWatch, ANotifiedPodThatWakesUpRecovers) {
  const auto idle = Parse("DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu=\"0\",Hostname=\"h\",namespace=\"ml\",pod=\"p\"} 0\n");
  const auto woke = Parse("DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu=\"0\",Hostname=\"h\",namespace=\"ml\",pod=\"p\"} 0.7\n");
  GpuWatch watch(Fast());
  for (int64_t t = 0; t <= 90; t += 30) ASSERT_TRUE(watch.Observe(t, idle));
  EXPECT_EQ(watch.detectors().at("ml/p").state(), market::ZombieState::kNotified);
  auto e = watch.Observe(120, woke);
  ASSERT_TRUE(e);
  ASSERT_EQ(e->size(), 1u);
  EXPECT_EQ((*e)[0].action.kind, market::HoardActionKind::kRecovered);
  EXPECT_EQ(watch.detectors().at("ml/p").state(), market::ZombieState::kActive);
}

TEST(Scrape, ReadsAnExporterOverHttpAndSaysWhatFailed) {
  if (!fs::exists(kDcgm)) GTEST_SKIP() << "no fixtures";
  httplib::Server exporter;
  const std::string body = Slurp(kDcgm / "issue-dcgm-226-l40s-pod-labels.prom");
  exporter.Get("/metrics", [&](const httplib::Request&, httplib::Response& res) { res.set_content(body, "text/plain; version=0.0.4"); });
  const int port = exporter.bind_to_any_port("127.0.0.1");
  std::thread t([&] { exporter.listen_after_bind(); });
  while (!exporter.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  auto got = Scrape(fmt::format("http://127.0.0.1:{}/metrics", port));
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_EQ(*got, body);
  auto missing = Scrape(fmt::format("http://127.0.0.1:{}/nope", port));
  ASSERT_FALSE(missing);
  EXPECT_THAT(missing.error().message, HasSubstr("HTTP 404"));

  // `tidal watch` scrapes it and prints a JSON line per workload per scrape.
  const std::string cmd = fmt::format("{} watch --dcgm http://127.0.0.1:{}/metrics --interval-s 0 --samples 2 2>&1", TIDAL_BINARY, port);
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  EXPECT_EQ(pclose(p), 0) << out;
  std::istringstream lines(out);
  std::string line;
  int workloads = 0;
  while (std::getline(lines, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << line;
    if (j.contains("workload") && j.contains("activity")) ++workloads;
  }
  EXPECT_EQ(workloads, 4);  // two workloads, two scrapes
  exporter.stop();
  t.join();
  auto down = Scrape(fmt::format("http://127.0.0.1:{}/metrics", port), 1);
  ASSERT_FALSE(down);
  EXPECT_THAT(down.error().message, HasSubstr(fmt::format("scraping http://127.0.0.1:{}/metrics", port)));
  EXPECT_FALSE(Scrape("node:9400/metrics"));
}

}  // namespace
}  // namespace tidal::watch

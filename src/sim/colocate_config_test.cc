// The colocate config reader: the shipped default reads; every bad input is
// an error naming file:line and the key.
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include <gtest/gtest.h>

#include "sim/colocate.h"

namespace tidal::sim {
namespace {

namespace fs = std::filesystem;
const std::string kData = std::string(TIDAL_SOURCE_DIR) + "/data/colocate";

TEST(ColocateConfig, TheShippedDefaultReads) {
  auto c = ReadColocateConfig(kData + "/default.yaml");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->name, "dgx-h100-week");
  EXPECT_EQ(c->nodes.size(), 127u);
  EXPECT_EQ(c->services.size(), 3u);
  EXPECT_EQ(c->services[0].name, "conv");
  EXPECT_EQ(c->services[1].shape, "1g.10gb");
  EXPECT_EQ(c->training.size(), 26936u);
  EXPECT_DOUBLE_EQ(c->load, 1.0);
  EXPECT_EQ(c->backlog_s, 86400);
  EXPECT_TRUE(c->skip_gaps);
  EXPECT_EQ(c->days, 7);
  EXPECT_EQ(c->checkpoint_write_s, 120);
  EXPECT_EQ(c->mig_create_s, 15);
  EXPECT_EQ(c->lead_s, 1800);
  EXPECT_DOUBLE_EQ(c->error_quantile, 0.97);
  EXPECT_EQ(c->error_tod_s, 3600);
  EXPECT_EQ(c->day_start_hour, 8);
  EXPECT_EQ(c->policies.size(), 4u);
}

// One day of the shipped default on the real traces and fleet: static never
// preempts and meets every minute; every policy's GPU time adds up; the
// outputs carry the keys and the MIG layout plot.
// The 14-day variant reads ServeGen and Philly from ../shared (its paths are
// relative to the file, so they hold on any clone beside shared/).
TEST(ColocateConfig, TheFourteenDayVariantReads) {
  if (!fs::exists(std::string(TIDAL_SHARED_DIR) + "/traces/philly/pollux_philly_jobs.csv"))
    GTEST_SKIP() << "no Philly trace under " << TIDAL_SHARED_DIR;
  auto c = ReadColocateConfig(kData + "/servegen-14d/config.yaml");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->days, 14);
  ASSERT_EQ(c->services.size(), 1u);
  EXPECT_EQ(c->services[0].name, "chat");
  EXPECT_EQ(c->services[0].demand.rate.size(), 2016u);  // 14 days of 10-minute windows
  EXPECT_EQ(c->training.size(), 82247u);
  EXPECT_DOUBLE_EQ(c->load, 0.6);
  EXPECT_TRUE(c->skip_gaps);
}

TEST(ColocateConfig, OneRealDay) {
  auto c = ReadColocateConfig(kData + "/default.yaml");
  ASSERT_TRUE(c) << c.error().message;
  c->days = 1;
  c->policies = {ColocatePolicy::kStatic, ColocatePolicy::kReactive, ColocatePolicy::kTidal};
  auto r = RunColocate(*c);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->rows.size(), 3u);
  const ColocateRow& s = r->rows[0];
  EXPECT_EQ(s.preemptions, 0);
  for (const ServiceResult& svc : s.services) EXPECT_DOUBLE_EQ(svc.slo_minutes_met, 1.0) << svc.name;
  for (const ColocateRow& row : r->rows) {
    EXPECT_NEAR(row.allocation_rate * 1016 * 24, row.training_gpu_hours + row.lost_gpu_hours + row.inference_gpu_hours, 1e-3) << row.policy;
    EXPECT_EQ(row.mig_hours.size(), 24u);
    EXPECT_GT(row.mig_hours.back().mig_gpus, 0) << row.policy;  // code and chat run on MIG slices
  }
  // Hourly MIG snapshots, the first before anything is placed; static holds
  // its peak replicas (code's 1g and chat's 3g) as MIG instances all day.
  for (size_t h = 0; h < s.mig_hours.size(); ++h) EXPECT_EQ(s.mig_hours[h].hour, static_cast<int64_t>(h));
  EXPECT_EQ(s.mig_hours.front().mig_gpus, 0);
  EXPECT_EQ(s.mig_hours[5].instances.at("1g.10gb"), s.services[1].max_replicas);
  EXPECT_EQ(s.mig_hours[5].instances.at("3g.40gb"), s.services[2].max_replicas);
  EXPECT_DOUBLE_EQ(s.services[1].gpu_hours, s.services[1].max_replicas * 24.0 / 7.0);
  // Autoscaled policies hold fewer replica GPU-hours than the peak-sized fleet.
  EXPECT_LT(r->rows[1].inference_gpu_hours, s.inference_gpu_hours);
  EXPECT_LT(r->rows[2].inference_gpu_hours, s.inference_gpu_hours);
  const nlohmann::json j = ColocateJson(*r);
  for (const char* k : {"policy", "slo_minutes_met", "training_gpu_hours", "training_queue_delay_s", "preemptions_per_day",
                        "lost_gpu_hours", "mig_reconfigs_per_day", "allocation_rate"})
    EXPECT_TRUE(j["rows"][0].contains(k)) << k;
  EXPECT_TRUE(j["rows"][0]["slo_minutes_met"].contains("chat"));
  EXPECT_EQ(j["targets"].size(), 2u);
  const std::string html = ColocateHtml(*r);
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("MIG instances held"), std::string::npos);
}

struct Bad {
  const char* name;
  const char* replace;  // "old=>new" applied to the default's text
  const char* error;
};

TEST(ColocateConfig, BadInputTable) {
  std::ifstream in(kData + "/default.yaml");
  const std::string base((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const Bad cases[] = {
      {"version", "version: 1=>version: 2", "starts with 'version: 1'"},
      {"unknown key", "seed: 1=>sed: 1", ":20: unknown key 'sed'"},
      {"policy", "policies: [static, lyra, reactive, tidal]=>policies: [static, hami]", ":19: unknown co-location policy 'hami'"},
      {"days", "days: 7=>days: 0", ":14: days must be in [1, 366]"},
      {"negative", "startup_s: 120=>startup_s: -5", "replica.startup_s must be >= 0"},
      {"replica key", "mig_mode_s: 60=>mig_mod_s: 60", "unknown key replica.mig_mod_s (known: startup_s, mig_create_s, mig_mode_s)"},
      {"quantile", "error_quantile: 0.97=>error_quantile: 1.5", ":17: autoscaler.error_quantile must be in [0, 1]"},
      {"error_of", "error_tod_s: 3600=>error_tod_s: 3600, error_of: maximum", "autoscaler.error_of is point or window-max, not 'maximum'"},
      {"margin cap", "error_tod_s: 3600=>error_tod_s: 3600, error_margin_max: 0.5", "autoscaler.error_margin_max must be >= 1"},
      {"lyra hours", "lyra_day_hours: [8, 22]=>lyra_day_hours: [22, 8]", ":18: lyra_day_hours must satisfy 0 <= start < end <= 24"},
      {"training key", "backlog_s: 86400=>backlog: 86400", "unknown key training.backlog (known: jobs, format, load, backlog_s, gaps)"},
      {"gaps", "gaps: skip=>gaps: fill", "training.gaps is keep (arrivals as the trace has them) or skip (no stretch without a waiting job), not 'fill'"},
      {"backlog", "backlog_s: 86400=>backlog_s: -1", "training.backlog_s must be >= 0"},
      {"load", "load: 1.0=>load: -1", "training.load must be in [0, 100]"},
      {"no topology", "topology: ../topologies/dgx-h100-superpod.yaml=>", "'topology:' (the fleet) is required"},
      {"services file", "services: services.yaml=>services: nope.yaml", "nope.yaml"},
      {"interval", "interval_s: 1800=>interval_s: 0", "checkpoint.interval_s must be >= 1"},
      {"yaml", "days: 7=>days: [7", "not valid YAML"},
  };
  for (const Bad& c : cases) {
    const std::string r = c.replace;
    const auto arrow = r.find("=>");
    std::string text = base;
    const auto at = text.find(r.substr(0, arrow));
    ASSERT_NE(at, std::string::npos) << c.name;
    text.replace(at, arrow, r.substr(arrow + 2));
    const std::string path = kData + "/bad-" + std::to_string(::getpid()) + ".yaml";
    std::ofstream(path) << text;
    auto got = ReadColocateConfig(path);
    fs::remove(path);
    ASSERT_FALSE(got) << c.name;
    EXPECT_NE(got.error().message.find(c.error), std::string::npos) << c.name << ": " << got.error().message;
  }
}

}  // namespace
}  // namespace tidal::sim

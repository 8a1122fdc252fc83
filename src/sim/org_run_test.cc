// tidal sim org on a slice of the Philly trace (label slow: a dozen replays):
// before, after and each lever alone, the JSON document's keys, the same
// output for the same seed whatever the thread count, and the report files.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sim/org.h"

namespace tidal::sim {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

// The whole experiment on the first jobs of Philly, on Philly's own machines.
TEST(RunOrg, BeforeAfterAndEachLeverOnAPhillySlice) {
  const std::string philly = std::string(TIDAL_SHARED_DIR) + "/traces/philly/pollux_philly_jobs.csv";
  const std::string machines = std::string(TIDAL_SHARED_DIR) + "/traces/philly/machine_list/cluster_machine_list.csv";
  if (!fs::exists(philly) || !fs::exists(machines)) GTEST_SKIP() << "no Philly trace under " << TIDAL_SHARED_DIR;
  const fs::path dir = fs::temp_directory_path() / fmt::format("tidal_org_run_{}", ::getpid());
  fs::create_directories(dir);
  const std::string data = std::string(TIDAL_SOURCE_DIR) + "/data";
  // One inference service on whole GPUs (Philly's GPUs have no MIG), on the
  // real Azure conversation trace, peaking near 60 GPUs.
  std::ofstream(dir / "services.yaml") << fmt::format(R"(version: 1
goodput: {0}/inference/goodput.yaml
services:
  - name: conv
    model: llama-3.1-8b
    shape: gpu
    trace: {{format: azure2024, path: {0}/inference/traces/azure2024_conv_1week_per_minute.csv, scale_to_peak_rps: 1600}}
    headroom: 0.1
    min_replicas: 2
    slo: "p90 TTFT 2 s, p90 TPOT 100 ms"
)",
                                                      data);
  const std::string cfg = (dir / "org.yaml").string();
  std::ofstream(cfg) << fmt::format(R"(version: 1
name: slice
jobs: {0}
nodes: {1}
format: philly
topology: {2}/topologies/philly-fat-tree.yaml
reference_model: {2}/org/typical-user.yaml
market: {2}/market/reclaim-2h.yaml
load: 0.9
limit: 1000
hoarding: {{share: 0.1, min_tail: 3600, max_tail: 172800, seed: 1}}
inference: {{services: services.yaml, autoscaler: {{error_quantile: 0.97, error_window_s: 90000, error_tod_s: 3600}}}}
before: {{queue: static-partitions, placer: first-fit, workload_model: {2}/org/typical-user.yaml}}
after: {{queue: tidal, placer: topo, workload_model: {2}/org/planned.yaml, market: true, colocation: true}}
)",
                                    philly, machines, data);
  auto c = ReadOrgConfig(cfg);
  ASSERT_TRUE(c) << c.error().message;
  std::vector<std::string> seen;
  auto r = RunOrg(*c, 2, [&](const OrgProgress& p) { seen.push_back(p.last); });
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(seen.size(), 7u);
  EXPECT_EQ(r->jobs, 1000);
  EXPECT_NEAR(r->offered_load, 0.9, 1e-9);
  ASSERT_EQ(r->ablations.size(), 5u);
  EXPECT_EQ(r->ablations[0].name, "no_pool");
  EXPECT_EQ(r->ablations[0].side.queue, "static-partitions");
  EXPECT_EQ(r->ablations[1].side.placer, "first-fit");
  EXPECT_EQ(r->ablations[2].side.workload_model, c->before.workload_model);
  EXPECT_FALSE(r->ablations[3].side.market);
  EXPECT_EQ(r->ablations[4].name, "no_colocation");
  EXPECT_FALSE(r->ablations[4].side.colocation);
  // Inference: the separate fleet holds the peak and meets every minute;
  // co-location holds less and still meets nearly every minute.
  ASSERT_EQ(r->before.inference.size(), 1u);
  ASSERT_EQ(r->after.inference.size(), 1u);
  EXPECT_DOUBLE_EQ(r->before.inference[0].slo_minutes_met, 1.0);
  EXPECT_GT(r->after.inference[0].slo_minutes_met, 0.95);
  EXPECT_LT(r->after.inference_gpu_share, r->before.inference_gpu_share);
  EXPECT_GT(r->after.inference_gpu_share, 0);
  EXPECT_DOUBLE_EQ(r->ablations[4].inference_gpu_share, r->before.inference_gpu_share);
  EXPECT_FALSE(r->after.hourly.empty());
  EXPECT_EQ(r->before.effective_compute_gain, 0);
  // The planner's layouts beat the typical user's, and switching the
  // planner off gives most of it back.
  EXPECT_GT(r->after.training_mfu, r->before.training_mfu * 1.3);
  EXPECT_LT(r->ablations[2].training_mfu, r->after.training_mfu);
  EXPECT_LT(r->after.comm_share, r->before.comm_share);
  EXPECT_LT(r->after.queue_delay_s.mean, r->before.queue_delay_s.mean);
  EXPECT_GT(r->after.effective_compute_gain, 0);
  EXPECT_EQ(r->before.zombies_reclaimed, 0);  // no market before
  EXPECT_GT(r->after.zombies_reclaimed, 0);
  for (const OrgFigures* f : {&r->before, &r->after}) {
    EXPECT_GT(f->training_mfu, 0);
    EXPECT_LT(f->training_mfu, 1);
    EXPECT_LE(f->cluster_mfu, f->training_mfu);
    EXPECT_GE(f->idle_gpu_share, 0);
    EXPECT_LE(f->stranded_gpu_share, f->idle_gpu_share);
    EXPECT_FALSE(f->job_mfu.empty());
  }
  // The JSON has every key of the issue's document; same seed, same output.
  const auto j = OrgJson(*c, *r);
  for (const char* k : {"training_mfu", "training_mfu_native", "cluster_mfu", "comm_share", "queue_delay_s",
                        "queue_delay_mean_s_by_bg", "idle_gpu_share", "stranded_gpu_share", "effective_compute_gain"})
    EXPECT_TRUE(j["after"].contains(k)) << k;
  for (const char* k : {"no_pool", "no_topology", "no_planner", "no_market", "no_colocation"})
    EXPECT_TRUE(j["ablations"].contains(k)) << k;
  EXPECT_TRUE(j["after"]["inference"]["services"].contains("conv"));
  EXPECT_TRUE(j["config"]["inference"].is_object());
  EXPECT_TRUE(j["config"].contains("offered_load"));
  // The market's books: only where the market runs, balanced, one entry per BG.
  EXPECT_TRUE(j["before"]["market_result"].is_null());
  EXPECT_TRUE(j["ablations"]["no_market"]["market_result"].is_null());
  ASSERT_TRUE(j["after"]["market_result"].is_object());
  EXPECT_TRUE(j["after"]["market_result"]["ledger_check"]["ok"].get<bool>());
  EXPECT_GT(j["after"]["market_result"]["ledger_check"]["transfers"].get<int64_t>(), 0);
  EXPECT_EQ(j["after"]["market_result"]["per_tenant"].size(), j["after"]["queue_delay_mean_s_by_bg"].size());
  EXPECT_DOUBLE_EQ(j["config"]["budget_factor"].get<double>(), 1.5);
  auto again = RunOrg(*c, 1);
  ASSERT_TRUE(again);
  EXPECT_EQ(OrgJson(*c, *again).dump(), j.dump());
  // The report directory.
  ASSERT_TRUE(WriteOrgOutputs(*c, *r, (dir / "out").string()));
  for (const char* f : {"summary.json", "figures.csv", "jobs_mfu.csv", "hourly.csv", "report.html"}) EXPECT_TRUE(fs::exists(dir / "out" / f)) << f;
  std::ifstream html(dir / "out" / "report.html");
  std::stringstream ss;
  ss << html.rdbuf();
  EXPECT_THAT(ss.str(), HasSubstr("<svg"));
  EXPECT_THAT(ss.str(), HasSubstr("training MFU"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tidal::sim

// `sim compare`: the config reader (paths, every error), a tiny matrix on the
// Philly trace that must not depend on the thread count, the targets on
// hand-made rows and the three output files; and the workload loading they
// share with sim queue (format detection, nodes from a topology).
#include "sim/compare.h"
#include "sim/workload_input.h"
#include "topology/readers/tidal_yaml.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tidal::sim {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() : path_(fs::temp_directory_path() / fmt::format("tidal_compare_test_{}_{}", ::getpid(), counter_++)) {
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string Write(const std::string& rel, const std::string& text) const {
    const fs::path p = path_ / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
    return p.string();
  }
  const fs::path& path() const { return path_; }

 private:
  static inline int counter_ = 0;
  fs::path path_;
};

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(CompareConfig, PathsAreRelativeToTheConfigFolder) {
  TempDir d;
  const std::string cfg = d.Write("configs/sub/small.yaml", R"(version: 1
jobs: ../../traces/jobs.csv
nodes: machines.csv
topology: /abs/topo.yaml
workload_model: ./wm/model.yaml
format: philly
placers: [topo, first-fit]
loads: [0.5, 0.75]
seeds: [3, 4]
limit: 200
max_wait: 0
slowdown_ok: 1.25
reclaim_slowdown_max: 2.5
single_node_if_fits: true
queue: fifo
)");
  auto c = ReadCompareConfig(cfg);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->source, cfg);
  EXPECT_EQ(c->name, "small");  // the file's stem without name:
  EXPECT_EQ(c->jobs, (d.path() / "traces/jobs.csv").string());
  EXPECT_EQ(c->nodes, (d.path() / "configs/sub/machines.csv").string());
  EXPECT_EQ(c->topology, "/abs/topo.yaml");
  EXPECT_EQ(c->workload_model, (d.path() / "configs/sub/wm/model.yaml").string());
  EXPECT_EQ(c->format, "philly");
  EXPECT_EQ(c->placers, (std::vector<std::string>{"topo", "first-fit"}));
  EXPECT_EQ(c->loads, (std::vector<double>{0.5, 0.75}));
  EXPECT_TRUE(c->time_scales.empty());
  EXPECT_EQ(c->seeds, (std::vector<uint64_t>{3, 4}));
  EXPECT_EQ(c->limit, 200);
  EXPECT_EQ(c->max_wait_s, 0);
  EXPECT_DOUBLE_EQ(c->slowdown_ok, 1.25);
  EXPECT_DOUBLE_EQ(c->reclaim_slowdown_max, 2.5);
  EXPECT_TRUE(c->single_node_if_fits);
  EXPECT_EQ(c->queue, "fifo");

  // Defaults: no nodes / topology / model, one time scale of 1, seed 1.
  auto m = ReadCompareConfig(d.Write("min.yaml", "version: 1\nname: tiny\njobs: j.csv\nplacers: [random]\n"));
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(m->name, "tiny");
  EXPECT_EQ(m->jobs, (d.path() / "j.csv").string());
  EXPECT_EQ(m->nodes, "");
  EXPECT_EQ(m->topology, "");
  EXPECT_EQ(m->workload_model, "");
  EXPECT_EQ(m->format, "auto");
  EXPECT_EQ(m->queue, "fifo-backfill");
  EXPECT_EQ(m->time_scales, (std::vector<double>{1}));
  EXPECT_TRUE(m->loads.empty());
  EXPECT_EQ(m->seeds, (std::vector<uint64_t>{1}));
  EXPECT_EQ(m->max_wait_s, -1);
  EXPECT_DOUBLE_EQ(m->slowdown_ok, 1.0);
  EXPECT_DOUBLE_EQ(m->reclaim_slowdown_max, 0);  // each policy's own
  EXPECT_FALSE(m->single_node_if_fits);
}

TEST(CompareConfig, TheShippedConfigsParse) {
  for (const char* name : {"philly-fat-tree", "philly-lingjun"}) {
    const std::string path = std::string(TIDAL_SOURCE_DIR) + "/data/compare/" + name + ".yaml";
    auto c = ReadCompareConfig(path);
    ASSERT_TRUE(c) << c.error().message;
    EXPECT_EQ(c->name, name);
    EXPECT_EQ(c->loads, (std::vector<double>{0.6, 0.75, 0.9}));
    EXPECT_EQ(c->placers.size(), 6u);
    EXPECT_EQ(c->jobs, fs::path(std::string(TIDAL_SOURCE_DIR) + "/../shared/traces/philly/pollux_philly_jobs.csv")
                           .lexically_normal()
                           .string());
  }
}

struct Bad {
  std::string name, text, want;
};

TEST(CompareConfig, EveryErrorSaysWhere) {
  TempDir d;
  const std::string v = "version: 1\njobs: j.csv\n";
  const std::string p = "placers: [topo]\n";
  const std::vector<Bad> cases = {
      {"unknown key", v + p + "lodas: [0.5]\n", "c.yaml:4: unknown key 'lodas' (known: name, jobs"},
      {"unknown placer", v + "placers:\n  - topo\n  - best-fit\n", "c.yaml:5: unknown placer 'best-fit'; choose from random"},
      {"both scales", v + p + "loads: [0.5]\ntime_scales: [2]\n", "c.yaml: give loads or time_scales, not both"},
      {"empty seeds", v + p + "seeds: []\n", "c.yaml: 'seeds:' is empty"},
      {"zero load", v + p + "loads: [0.5, 0]\n", "c.yaml:4: loads value 0 must be in (0, 100]"},
      {"negative scale", v + p + "time_scales: [-2]\n", "c.yaml:4: time_scales value -2 must be in (0, 1000000]"},
      {"huge scale", v + p + "time_scales:\n  - 1\n  - 2e6\n", "c.yaml:6: time_scales value 2000000 must be in (0, 1000000]"},
      {"load above 100", v + p + "loads: [150]\n", "c.yaml:4: loads value 150 must be in (0, 100]"},
      {"negative limit", v + p + "limit: -1\n", "c.yaml: limit must be >= 0, max_wait >= -1 and slowdown_ok >= 1"},
      {"max_wait -2", v + p + "max_wait: -2\n", "c.yaml: limit must be >= 0, max_wait >= -1"},
      {"slowdown_ok < 1", v + p + "slowdown_ok: 0.9\n", "c.yaml: limit must be >= 0, max_wait >= -1 and slowdown_ok >= 1"},
      {"limit not a number", v + p + "limit: lots\n", "c.yaml:4: "},
      {"reclaim_slowdown_max < 1", v + p + "reclaim_slowdown_max: 0.5\n", "c.yaml:4: reclaim_slowdown_max must be >= 1"},
      {"reclaim_slowdown_max NaN", v + p + "reclaim_slowdown_max: .nan\n", "c.yaml:4: reclaim_slowdown_max must be >= 1"},
      {"no jobs", "version: 1\n" + p, "c.yaml: 'jobs:' (the trace to replay) is required"},
      {"no placers", v, "c.yaml: 'placers:' must list placers"},
      {"empty placers", v + "placers: []\n", "c.yaml: 'placers:' must list placers"},
      {"placers not a list", v + "placers: topo\n", "c.yaml: 'placers:' must list placers"},
      {"no version", "jobs: j.csv\n" + p, "c.yaml:1: a compare config starts with 'version: 1'"},
      {"version 2", "version: 2\njobs: j.csv\n" + p, "c.yaml:1: a compare config starts with 'version: 1'"},
      {"not yaml", v + "placers: [topo\n", "c.yaml:"},
      {"placers and policies", v + p + "policies:\n  - {name: a, queue: tidal, placer: topo}\n", "c.yaml: give placers or policies, not both"},
      {"policy without placer", v + "policies:\n  - {name: a, queue: tidal}\n", "c.yaml:4: each policy needs name, queue and placer"},
      {"policy with unknown queue", v + "policies:\n  - {name: a, queue: lifo, placer: topo}\n", "c.yaml:4: unknown queue policy 'lifo'"},
      {"policy with unknown placer", v + "policies:\n  - {name: a, queue: tidal, placer: best-fit}\n", "c.yaml:4: unknown placer 'best-fit'"},
      {"two policies one name", v + "policies:\n  - {name: a, queue: tidal, placer: topo}\n  - {name: a, queue: kueue, placer: topo}\n",
       "c.yaml:5: policy name 'a' is used twice"},
      {"empty policies", v + "policies: []\n", "c.yaml: 'policies:' lists {name, queue, placer} maps"},
      {"zero checkpoint interval", v + p + "checkpoint_interval: 0\n", "c.yaml: checkpoint_interval must be > 0"},
      {"empty estimates", v + p + "estimates: []\n", "c.yaml:4: 'estimates:' is empty"},
      {"negative start estimates", v + p + "start_estimates: -1\n", "c.yaml: start_estimates must be >= 0"},
      {"zero samples", v + p + "start_estimate_samples: 0\n", "c.yaml: start_estimates must be >= 0 and start_estimate_samples >= 1"},
  };
  for (const Bad& b : cases) {
    SCOPED_TRACE(b.name);
    const std::string path = d.Write("c.yaml", b.text);
    auto r = ReadCompareConfig(path);
    ASSERT_FALSE(r) << b.text;
    EXPECT_EQ(r.error().code, ErrorCode::kParse);
    EXPECT_THAT(r.error().message, HasSubstr(path.substr(0, path.size() - 6) + b.want)) << r.error().message;
  }
  auto missing = ReadCompareConfig((d.path() / "nope.yaml").string());
  ASSERT_FALSE(missing);
  EXPECT_THAT(missing.error().message, HasSubstr("nope.yaml"));
}

TEST(CompareConfig, NegativeSeedIsAnError) {
  TempDir d;
  auto r = ReadCompareConfig(d.Write("c.yaml", "version: 1\njobs: j.csv\nplacers: [topo]\nseeds: [1, -1]\n"));
  ASSERT_FALSE(r) << fmt::format("seed read as {}", r->seeds[1]);
  EXPECT_THAT(r.error().message, HasSubstr("c.yaml:4: "));
}

// Each range's upper end is in: a load of 100, a time scale of 1e6 (found by
// mutation testing, seed 2: `x <= hi` -> `<` refused them).
TEST(CompareConfig, TheRangesUpperEndsAreAccepted) {
  TempDir d;
  auto loads = ReadCompareConfig(d.Write("c.yaml", "version: 1\njobs: j.csv\nplacers: [topo]\nloads: [100]\n"));
  ASSERT_TRUE(loads) << loads.error().message;
  EXPECT_EQ(loads->loads, std::vector<double>{100});
  auto scales = ReadCompareConfig(d.Write("c.yaml", "version: 1\njobs: j.csv\nplacers: [topo]\ntime_scales: [1000000]\n"));
  ASSERT_TRUE(scales) << scales.error().message;
  EXPECT_EQ(scales->time_scales, std::vector<double>{1e6});
}

const std::string kPhilly = std::string(TIDAL_SHARED_DIR) + "/traces/philly/pollux_philly_jobs.csv";
const std::string kMachines = std::string(TIDAL_SHARED_DIR) + "/traces/philly/machine_list/cluster_machine_list.csv";

TEST(RunCompare, RowsDoNotDependOnTheThreadCount) {
  if (!fs::exists(kPhilly) || !fs::exists(kMachines)) GTEST_SKIP() << "no Philly trace under " << TIDAL_SHARED_DIR;
  TempDir d;
  const std::string cfg = d.Write("tiny.yaml", fmt::format(R"(version: 1
name: tiny
jobs: {}
nodes: {}
format: philly
topology: {}/data/topologies/philly-fat-tree.yaml
placers: [topo, first-fit, random]
loads: [0.6, 0.9]
seeds: [1, 2]
limit: 300
)",
                                                           kPhilly, kMachines, TIDAL_SOURCE_DIR));
  auto c = ReadCompareConfig(cfg);
  ASSERT_TRUE(c) << c.error().message;
  std::vector<CompareProgress> seen;
  auto one = RunCompare(*c, 1, [&](const CompareProgress& p) { seen.push_back(p); });
  ASSERT_TRUE(one) << one.error().message;
  auto two = RunCompare(*c, 2);
  ASSERT_TRUE(two) << two.error().message;
  ASSERT_EQ(one->size(), 12u);
  ASSERT_EQ(two->size(), 12u);
  // Row order: placers, then loads, then seeds.
  EXPECT_EQ((*one)[0].policy, "topo");
  EXPECT_EQ((*one)[1].seed, 2u);
  EXPECT_DOUBLE_EQ((*one)[2].load, 0.9);
  EXPECT_EQ((*one)[4].policy, "first-fit");
  EXPECT_EQ(CompareJson(*c, *one).dump(), CompareJson(*c, *two).dump());
  EXPECT_EQ(CompareTable(*one), CompareTable(*two));
  for (const auto& r : *one) {
    EXPECT_EQ(r.result.jobs_total, 300);
    EXPECT_TRUE(r.result.jobs.empty());  // cleared
    EXPECT_NEAR(r.result.offered_load, r.load, 1e-9);
    EXPECT_GE(r.result.comm_share, 0);
    EXPECT_EQ(r.result.topology, fs::path(std::string(TIDAL_SOURCE_DIR) + "/data/topologies/philly-fat-tree.yaml").string());
  }
  ASSERT_EQ(seen.size(), 12u);
  EXPECT_EQ(seen.back().done, 12);
  EXPECT_EQ(seen.back().total, 12);
  EXPECT_EQ(seen.front().last, "topo @ load 0.6 seed 1");
  // An unknown queue policy or a missing trace fails the whole matrix.
  CompareConfig bad = *c;
  bad.queue = "lifo";
  EXPECT_FALSE(RunCompare(bad, 1));
  bad = *c;
  bad.jobs = "/nonexistent.csv";
  EXPECT_FALSE(RunCompare(bad, 2));
}

// The tenant comparison: policies with their own queue and placer, tenants
// and estimates; a row per policy x estimate x load x seed, labelled
// policy@estimate for non-exact estimates; the tenant targets.
TEST(RunCompare, TenantPoliciesOnPhilly) {
  if (!fs::exists(kPhilly) || !fs::exists(kMachines)) GTEST_SKIP() << "no Philly trace under " << TIDAL_SHARED_DIR;
  TempDir d;
  const std::string cfg = d.Write("t.yaml", fmt::format(R"(version: 1
name: tenants
jobs: {}
nodes: {}
format: philly
tenants: proportional
policies:
  - {{name: static-partitions, queue: static-partitions, placer: bestfit}}
  - {{name: kueue, queue: kueue, placer: bestfit}}
  - {{name: tidal, queue: tidal, placer: bestfit}}
estimates: [exact, f-model:10]
loads: [0.9]
limit: 400
start_estimates: 30
start_estimate_samples: 3
)",
                                                        kPhilly, kMachines));
  auto c = ReadCompareConfig(cfg);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->tenants, "proportional");
  ASSERT_EQ(c->policies.size(), 3u);
  auto rows = RunCompare(*c, 1);
  ASSERT_TRUE(rows) << rows.error().message;
  ASSERT_EQ(rows->size(), 6u);
  EXPECT_EQ((*rows)[0].policy, "static-partitions");
  EXPECT_EQ((*rows)[1].policy, "static-partitions@f-model:10");
  EXPECT_EQ((*rows)[5].policy, "tidal@f-model:10");
  for (const auto& r : *rows) {
    EXPECT_EQ(r.result.tenants, "proportional");
    EXPECT_EQ(r.result.jobs_total, 400);
    EXPECT_EQ(r.result.estimate, r.estimate);
    EXPECT_FALSE(r.result.per_tenant.empty());
    // 30 jobs drawn by the seed, estimated at arrival by forward runs.
    EXPECT_EQ(r.result.start_estimate_error.sampled, 30);
    EXPECT_EQ(r.result.start_estimate_error.samples + r.result.start_estimate_error.started_at_once, 30);
  }
  // Static partitions never borrow: no preemption, no guarantee violation.
  EXPECT_EQ((*rows)[0].result.preemptions, 0);
  EXPECT_EQ((*rows)[0].result.guarantee_violations, 0);
  const nlohmann::json j = CompareJson(*c, *rows);
  ASSERT_EQ(j["targets"].size(), 1u);
  EXPECT_TRUE(j["targets"][0].contains("wait_at_most_tenth_static"));
  EXPECT_EQ(j["targets"][0]["tidal_wait_mean"], (*rows)[4].result.wait_s.mean);
  EXPECT_NE(CompareTable(*rows).find("wait_mean"), std::string::npos);
  EXPECT_NE(CompareTable(*rows).find("est_p50"), std::string::npos);
  EXPECT_EQ(j["rows"][0]["start_estimate_error_s"]["sampled"], 30);
}

CompareRow Row(const std::string& policy, double load, uint64_t seed, double comm, double jct, double delay) {
  CompareRow r;
  r.policy = policy;
  r.load = load;
  r.seed = seed;
  r.result.policy = policy;
  r.result.comm_share = comm;
  r.result.jct_s.mean = jct;
  r.result.queue_delay_s.mean = delay;
  r.result.queue_delay_s.p99 = 2 * delay;
  r.result.locality_node = 0.5;
  r.result.locality_leaf = 0.25;
  r.result.slowdown_mean = 1.125;
  r.result.allocation_rate = 0.75;
  r.result.time_scale = 2;
  return r;
}

std::vector<CompareRow> HandRows() {
  return {
      // load 0.5: topo lowest comm and JCT, but first-fit has less delay.
      Row("topo", 0.5, 1, 0.10, 100, 10), Row("first-fit", 0.5, 1, 0.25, 120, 8), Row("random", 0.5, 1, 0.30, 130, 12),
      // load 0.8, two seeds (means): topo comm 0.125 (not < 12%) where first-fit's is 0.21875;
      // JCT 250 ties first-fit's, delay 25 ties random's.
      Row("topo", 0.8, 1, 0.125, 200, 20), Row("topo", 0.8, 2, 0.125, 300, 30), Row("first-fit", 0.8, 1, 0.1875, 260, 30),
      Row("first-fit", 0.8, 2, 0.25, 240, 40), Row("random", 0.8, 1, 0.5, 250, 25), Row("random", 0.8, 2, 0.5, 260, 25),
      // load 0.9: random beats topo on JCT; first-fit below 20%: no 12% target; an unmeasured placer.
      Row("topo", 0.9, 1, 0.05, 500, 50), Row("first-fit", 0.9, 1, 0.15, 600, 50), Row("random", 0.9, 1, 0.04, 450, 60),
      Row("hived", 0.9, 1, -1, 700, 70),
      // load 0.95 without topo: no target entry.
      Row("first-fit", 0.95, 1, 0.3, 1, 1),
      // load 0.7, both thresholds exactly: first-fit at 20% counts, topo at 12% is not below.
      Row("topo", 0.7, 1, 0.12, 1, 1), Row("first-fit", 0.7, 1, 0.20, 2, 2),
  };
}

TEST(CompareTargets, HandMadeRows) {
  const nlohmann::json t = CompareTargets(HandRows());
  ASSERT_EQ(t.size(), 4u);
  EXPECT_DOUBLE_EQ(t[0]["load"].get<double>(), 0.5);
  EXPECT_EQ(t[0]["lowest_comm_share"], true);
  EXPECT_EQ(t[0]["lowest_jct_mean"], true);
  EXPECT_DOUBLE_EQ(t[0]["best_other_delay_mean"].get<double>(), 8);
  EXPECT_EQ(t[0]["best_other_delay_by"], "first-fit");
  EXPECT_EQ(t[0]["delay_no_worse_than_best_other"], false);
  EXPECT_DOUBLE_EQ(t[0]["first_fit_comm_share"].get<double>(), 0.25);
  EXPECT_EQ(t[0]["comm_below_12pct_where_first_fit_20pct"], true);

  EXPECT_DOUBLE_EQ(t[1]["load"].get<double>(), 0.7);
  EXPECT_DOUBLE_EQ(t[1]["first_fit_comm_share"].get<double>(), 0.20);
  EXPECT_EQ(t[1]["comm_below_12pct_where_first_fit_20pct"], false);
  EXPECT_EQ(t[1]["lowest_comm_share"], true);

  EXPECT_DOUBLE_EQ(t[2]["topo_comm_share"].get<double>(), 0.125);
  EXPECT_DOUBLE_EQ(t[2]["topo_jct_mean"].get<double>(), 250);
  EXPECT_DOUBLE_EQ(t[2]["topo_delay_mean"].get<double>(), 25);
  EXPECT_EQ(t[2]["lowest_jct_mean"], true);  // a tie is still lowest
  EXPECT_DOUBLE_EQ(t[2]["best_other_delay_mean"].get<double>(), 25);  // random's, a tie
  EXPECT_EQ(t[2]["best_other_delay_by"], "random");
  EXPECT_EQ(t[2]["delay_no_worse_than_best_other"], true);  // equal is no worse
  EXPECT_DOUBLE_EQ(t[2]["first_fit_comm_share"].get<double>(), 0.21875);
  EXPECT_EQ(t[2]["comm_below_12pct_where_first_fit_20pct"], false);

  EXPECT_EQ(t[3]["lowest_comm_share"], false);  // random's 4% < 5%; hived's -1 is not a measurement
  EXPECT_EQ(t[3]["lowest_jct_mean"], false);
  EXPECT_DOUBLE_EQ(t[3]["best_other_delay_mean"].get<double>(), 50);
  EXPECT_EQ(t[3]["best_other_delay_by"], "first-fit");  // first of the equals in name order
  EXPECT_EQ(t[3]["delay_no_worse_than_best_other"], true);
  EXPECT_TRUE(t[3]["comm_below_12pct_where_first_fit_20pct"].is_null());

  // An unmeasured topo comm share is never "lowest"; the others' unmeasured ones are skipped.
  const nlohmann::json u = CompareTargets({Row("topo", 0.5, 1, -1, 1, 1), Row("first-fit", 0.5, 1, 0.3, 2, 2)});
  EXPECT_EQ(u[0]["lowest_comm_share"], false);
  const nlohmann::json w = CompareTargets({Row("topo", 0.5, 1, 0.2, 1, 1), Row("hived", 0.5, 1, -1, 2, 2)});
  EXPECT_EQ(w[0]["lowest_comm_share"], true);
  EXPECT_FALSE(w[0].contains("first_fit_comm_share"));
  // Time-scale rows are keyed by their scale.
  CompareRow ts = Row("topo", 0, 1, 0.1, 1, 1);
  ts.time_scale = 4;
  EXPECT_DOUBLE_EQ(CompareTargets({ts})[0]["time_scale"].get<double>(), 4);  // keyed by what the matrix varies
  EXPECT_FALSE(CompareTargets({ts})[0].contains("load"));
}

TEST(CompareOutputs, WritesThreeFilesWithOneChartPerMetric) {
  TempDir d;
  CompareConfig c;
  c.name = "hand <rows>";
  c.source = "hand.yaml";
  c.loads = {0.5, 0.7, 0.8, 0.9, 0.95};
  const auto rows = HandRows();
  const std::string out = (d.path() / "out").string();
  ASSERT_TRUE(WriteCompareOutputs(c, rows, out));
  const std::string csv = Slurp(out + "/rows.csv");
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "policy,load,time_scale,seed,delay_mean_s,delay_p99_s,jct_mean_s,allocation_rate,stranded_gpu_share,"
            "locality_node,locality_leaf,comm_share,slowdown_mean");
  EXPECT_THAT(csv, HasSubstr("\ntopo,0.5,2,1,10.0,20.0,100.0,0.750000,0.000000,0.500000,0.250000,0.100000,1.125000\n"));
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), static_cast<long>(rows.size()) + 1);
  const auto j = nlohmann::json::parse(Slurp(out + "/rows.json"));
  EXPECT_EQ(j["name"], "hand <rows>");
  EXPECT_EQ(j["config"], "hand.yaml");
  ASSERT_EQ(j["rows"].size(), rows.size());
  EXPECT_EQ(j["rows"][0]["policy"], "topo");
  EXPECT_DOUBLE_EQ(j["rows"][0]["load"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(j["rows"][0]["comm_share"].get<double>(), 0.10);
  EXPECT_TRUE(j["rows"][12]["comm_share"].is_null());  // hived's unmeasured share
  EXPECT_EQ(j["targets"], CompareTargets(rows));
  const std::string html = Slurp(out + "/report.html");
  size_t svgs = 0;
  for (size_t at = html.find("<svg"); at != std::string::npos; at = html.find("<svg", at + 1)) ++svgs;
  EXPECT_EQ(svgs, 7u);  // comm share, JCT, delay, p99 delay, leaf locality, slowdown, allocation
  EXPECT_THAT(html, HasSubstr("hand &lt;rows&gt;"));
  EXPECT_THAT(html, HasSubstr("<h1>Placement comparison: "));
  EXPECT_THAT(html, HasSubstr("Communication share of step time"));
  EXPECT_EQ(html.find("hand <rows>"), std::string::npos);
  // A metric no row measured gets no chart.
  std::vector<CompareRow> unmeasured = {Row("topo", 0.5, 1, -1, 1, 1)};
  unmeasured[0].result.locality_leaf = -1;
  unmeasured[0].result.slowdown_mean = -1;
  ASSERT_TRUE(WriteCompareOutputs(c, unmeasured, out));
  const std::string html2 = Slurp(out + "/report.html");
  svgs = 0;
  for (size_t at = html2.find("<svg"); at != std::string::npos; at = html2.find("<svg", at + 1)) ++svgs;
  EXPECT_EQ(svgs, 4u);
  // Rows of the tenant policies (tidal among them) make a tenant comparison.
  ASSERT_TRUE(WriteCompareOutputs(c, {Row("tidal", 0.5, 1, -1, 1, 1), Row("kueue", 0.5, 1, -1, 2, 2)}, out));
  EXPECT_THAT(Slurp(out + "/report.html"), HasSubstr("<h1>Tenant comparison: "));
}

// --- workload_input: what sim queue and sim compare load -------------------

TEST(WorkloadInput, DetectJobFormatReadsTheHeader) {
  TempDir d;
  EXPECT_EQ(*DetectJobFormat(d.Write("p.csv", "timestamp,duration,num_gpus,gpu_time,cluster\n")), "philly");
  EXPECT_EQ(*DetectJobFormat(d.Write("o.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
                                              "creation_time,deletion_time,scheduled_time\n")),
            "openb");
  auto untimed = DetectJobFormat(d.Write("m.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"));
  ASSERT_FALSE(untimed);
  EXPECT_THAT(untimed.error().message, HasSubstr("m.csv:1: this openb pod list has no creation_time/deletion_time"));
  auto other = DetectJobFormat(d.Write("x.csv", "a,b,c\n"));
  ASSERT_FALSE(other);
  EXPECT_THAT(other.error().message, HasSubstr("cannot tell the trace format from the header 'a,b,c'"));
  auto none = DetectJobFormat((d.path() / "missing.csv").string());
  ASSERT_FALSE(none);
  EXPECT_THAT(none.error().message, HasSubstr("cannot open job file"));
}

TEST(WorkloadInput, NodesFromTheTopologyAndTheirErrors) {
  auto t = topo::ReadTidalYaml(R"(version: 1
host_types:
  a: {gpus: 8, gpu_model: H100}
  b: {gpus: 2}
  c: {gpus: 0}
root:
  level: leaf
  name: l
  children:
    - {level: node, names: "x[1-2]", host_type: a}
    - {level: node, name: y, host_type: b}
    - {level: node, name: z, host_type: c}
)",
                               "t.yaml");
  ASSERT_TRUE(t) << t.error().message;
  auto nodes = NodesFromTopology(*t);
  ASSERT_TRUE(nodes) << nodes.error().message;
  ASSERT_EQ(nodes->size(), 4u);
  EXPECT_EQ((*nodes)[0].name, "x1");
  EXPECT_EQ((*nodes)[0].gpu_count, 8);
  EXPECT_EQ((*nodes)[0].gpu_model, "H100");
  EXPECT_EQ((*nodes)[2].gpu_model, "gpu");  // GPUs of no stated model
  EXPECT_EQ((*nodes)[3].gpu_count, 0);
  EXPECT_EQ((*nodes)[3].gpu_model, "");  // CPU-only
  auto unknown = topo::ReadTidalYaml("version: 1\nhost_types:\n  u: {}\nroot: {level: leaf, name: l, hosts: h1, host_type: u}\n",
                                     "u.yaml");
  ASSERT_TRUE(unknown) << unknown.error().message;
  auto bad = NodesFromTopology(*unknown);
  ASSERT_FALSE(bad);
  EXPECT_THAT(bad.error().message, HasSubstr("u.yaml: host 'h1' has no GPU count in the topology"));

  TempDir d;
  const std::string jobs = d.Write("j.csv", "timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-01 00:00:00,10.0,2,20.0,vc\n");
  auto w = LoadWorkload("", jobs, "auto", &*t);
  ASSERT_TRUE(w) << w.error().message;
  EXPECT_EQ(w->format, "philly");
  EXPECT_EQ(w->nodes.size(), 4u);
  ASSERT_EQ(w->jobs.size(), 1u);
  EXPECT_EQ(w->jobs[0].num_gpu, 2);
  auto no_nodes = LoadWorkload("", jobs, "philly");
  ASSERT_FALSE(no_nodes);
  EXPECT_THAT(no_nodes.error().message, HasSubstr("no node list"));
  auto fmt_bad = LoadWorkload("", jobs, "helios", &*t);
  ASSERT_FALSE(fmt_bad);
  EXPECT_THAT(fmt_bad.error().message, HasSubstr("unknown --format 'helios'"));
}

}  // namespace
}  // namespace tidal::sim

namespace tidal::sim {
namespace {

TEST(CompareMarketTargets, AgainstStaticPartitionsAtTheSameLoad) {
  auto row = [](std::string name, std::string queue, bool market, double load, double wait, double hoarded) {
    CompareRow r;
    r.policy = std::move(name);
    r.queue = std::move(queue);
    r.market = market;
    r.load = load;
    r.seed = 1;
    r.result.queue_delay_s.mean = wait;
    r.result.hoarded_gpu_hours = hoarded;
    if (market) r.result.market = MarketSimResult{};
    return r;
  };
  const std::vector<CompareRow> rows = {row("static", "static-partitions", false, 0.75, 10000, 1000),
                                        row("m", "tidal", true, 0.75, 2000, 200),      // exactly 5x and 80%
                                        row("m2", "tidal", true, 0.75, 2001, 200.1),   // just short of both
                                        row("m3", "tidal", true, 0.9, 1, 1)};          // no static run at 0.9
  const nlohmann::json t = CompareMarketTargets(rows);
  ASSERT_EQ(t.size(), 3u);
  EXPECT_DOUBLE_EQ(t[0]["queue_delay_cut_x"].get<double>(), 5.0);
  EXPECT_TRUE(t[0]["queue_delay_cut_5x"].get<bool>());
  EXPECT_NEAR(t[0]["hoarded_cut"].get<double>(), 0.8, 1e-12);
  EXPECT_TRUE(t[0]["hoarded_cut_80pct"].get<bool>());
  EXPECT_TRUE(t[0]["ledger_check_ok"].get<bool>());
  EXPECT_FALSE(t[1]["queue_delay_cut_5x"].get<bool>());
  EXPECT_FALSE(t[1]["hoarded_cut_80pct"].get<bool>());
  EXPECT_FALSE(t[2].contains("queue_delay_cut_x"));
}

// The tenant targets by hand (found by mutation testing): per load, each
// policy's mean wait and p99 averaged over its seeds; tidal against the best
// other. Two seeds of tidal (p99 10 and 30: 20) and kueue (p99 40 and 60:
// 50), one of static partitions.
CompareRow TenantRow(const std::string& policy, double load, uint64_t seed, double wait, double p99) {
  CompareRow r;
  r.policy = policy;
  r.load = load;
  r.seed = seed;
  r.result.wait_s.mean = wait;
  r.result.wait_s.p99 = p99;
  return r;
}

TEST(CompareTargets, TenantTargetsAverageEachPolicysSeeds) {
  const std::vector<CompareRow> rows = {TenantRow("tidal", 0.5, 1, 2, 10),  TenantRow("tidal", 0.5, 2, 4, 30),
                                        TenantRow("kueue", 0.5, 1, 6, 40),  TenantRow("kueue", 0.5, 2, 10, 60),
                                        TenantRow("static-partitions", 0.5, 1, 100, 500)};
  const nlohmann::json t = CompareTenantTargets(rows);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_DOUBLE_EQ(t[0]["load"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(t[0]["tidal_wait_mean"].get<double>(), 3);
  EXPECT_DOUBLE_EQ(t[0]["tidal_wait_p99"].get<double>(), 20);
  EXPECT_DOUBLE_EQ(t[0]["best_other_wait_mean"].get<double>(), 8);
  EXPECT_EQ(t[0]["best_other_wait_by"], "kueue");
  EXPECT_DOUBLE_EQ(t[0]["best_other_wait_p99"].get<double>(), 50);
  EXPECT_EQ(t[0]["wait_at_most_half_best_other"], true);  // 3 <= 4
  EXPECT_EQ(t[0]["p99_no_worse_than_best_other"], true);
  EXPECT_DOUBLE_EQ(t[0]["static_partitions_wait_mean"].get<double>(), 100);
  EXPECT_EQ(t[0]["wait_at_most_tenth_static"], true);  // 3 <= 10
  // Time-scale rows (load 0) are keyed by their scale.
  CompareRow a = TenantRow("tidal", 0, 1, 2, 10), b = TenantRow("kueue", 0, 1, 6, 40);
  a.time_scale = b.time_scale = 4;
  const nlohmann::json ts = CompareTenantTargets({a, b});
  ASSERT_EQ(ts.size(), 1u);
  EXPECT_DOUBLE_EQ(ts[0]["time_scale"].get<double>(), 4);
  EXPECT_FALSE(ts[0].contains("load"));
}

// The report's charts plot each placer's mean over its seeds (found by
// mutation testing, seed 2: a seed count going down plotted negative
// means, clamped to the axis). Comm share at one load: topo 60% and 80%
// (mean 70), first-fit 35%. The y axis ends at 1.1 x 70 = 77 on a plot 345
// high from y = 30: topo at 30 + 345 x (1 - 70/77) = 61.4, first-fit at
// 30 + 345 x (1 - 35/77) = 218.2; one load, so x is the middle, 302.0.
TEST(CompareOutputs, ChartsPlotTheMeanOverSeeds) {
  TempDir d;
  CompareConfig c;
  c.name = "means";
  c.loads = {0.5};
  const std::string out = (d.path() / "out").string();
  ASSERT_TRUE(WriteCompareOutputs(c, {Row("topo", 0.5, 1, 0.6, 1, 1), Row("topo", 0.5, 2, 0.8, 1, 1), Row("first-fit", 0.5, 1, 0.35, 1, 1)}, out));
  const std::string html = Slurp(out + "/report.html");
  const size_t chart = html.find("Communication share of step time");
  ASSERT_NE(chart, std::string::npos);
  const std::string comm = html.substr(chart, html.find("</svg>", chart) - chart);
  EXPECT_THAT(comm, HasSubstr("d=\"M302.0,61.4\""));
  EXPECT_THAT(comm, HasSubstr("d=\"M302.0,218.2\""));
}

// rows.json gives a time-scale row's load as null, an offered load as is.
TEST(CompareOutputs, ATimeScaleRowHasNoLoad) {
  CompareConfig c;
  c.name = "x";
  CompareRow ts = TenantRow("tidal", 0, 1, 2, 10);
  ts.time_scale = 4;
  const nlohmann::json j = CompareJson(c, {ts, TenantRow("tidal", 0.75, 1, 2, 10)});
  ASSERT_EQ(j["rows"].size(), 2u);
  EXPECT_TRUE(j["rows"][0]["load"].is_null());
  EXPECT_DOUBLE_EQ(j["rows"][1]["load"].get<double>(), 0.75);
}

// Nothing hoarded under static partitions: no cut to report (0), not a
// division by zero (found by mutation testing).
TEST(CompareMarketTargets, NoHoardingInTheBaseMeansNoCut) {
  CompareRow base, m;
  base.policy = "static";
  base.queue = "static-partitions";
  base.load = m.load = 0.75;
  base.seed = m.seed = 1;
  base.result.queue_delay_s.mean = 100;
  base.result.hoarded_gpu_hours = 0;
  m.policy = "m";
  m.queue = "tidal";
  m.market = true;
  m.result.market = MarketSimResult{};
  m.result.queue_delay_s.mean = 50;
  m.result.hoarded_gpu_hours = 3;
  const nlohmann::json t = CompareMarketTargets({base, m});
  ASSERT_EQ(t.size(), 1u);
  EXPECT_DOUBLE_EQ(t[0]["hoarded_cut"].get<double>(), 0);
  EXPECT_FALSE(t[0]["hoarded_cut_80pct"].get<bool>());
  EXPECT_DOUBLE_EQ(t[0]["queue_delay_cut_x"].get<double>(), 2);
}

}  // namespace
}  // namespace tidal::sim

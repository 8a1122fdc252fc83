// tidal sim org (docs/org.md): the window's integrals and a job's work and
// MFU checked by hand against the planner, the reference model's run-time
// rule (a faster layout finishes the same FLOPs sooner) and the config
// reader's bad inputs. The whole experiment: org_run_test.cc.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "planner/gpu.h"
#include "planner/model.h"
#include "planner/search.h"
#include "sim/org.h"
#include "sim/queue_sim.h"
#include "sim/test_fat_tree.h"

namespace tidal::sim {
namespace {

using ::testing::HasSubstr;
using testing::FatTree;
using testing::MakeJob;
namespace fs = std::filesystem;

std::vector<NodeSpec> Nodes() {
  return {{"h1", 64000, 262144, 8, "H100"}, {"h2", 64000, 262144, 8, "H100"},
          {"h3", 64000, 262144, 8, "H100"}, {"h4", 64000, 262144, 8, "H100"}};
}

WorkloadModel Model(const std::string& strategy, const std::string& one_gpu) {
  auto m = WorkloadModel::Parse("version: 1\ngpu: h100\nstrategy: " + strategy + "\nclasses:\n  - " + one_gpu +
                                    "\n  - {gpus: 8-16, model: llama3-8b, tp: 8, global_batch: 64}\n",
                                "t.yaml");
  EXPECT_TRUE(m) << m.error().message;
  return *m;
}
const std::string kTypical = "{gpus: 1, model: llama3.2-1b, global_batch: 8, recompute: full, overlap: false}";
const std::string kPlanned = "{gpus: 1, model: llama3.2-1b, global_batch: 8}";

// A 1-GPU job's model FLOPs per second under a layout (no links involved).
double Rate(const planner::Strategy& s) {
  const planner::GpuSpec gpu = *planner::FindGpu("h100");
  planner::ModelSpec m = *planner::FindModelPreset("llama3.2-1b");
  m.global_batch = s.GlobalBatch();
  auto p = planner::Predict(m, gpu, planner::DefaultPlacement(gpu, 1), s, planner::DefaultCalibration());
  EXPECT_TRUE(p) << p.error().message;
  return p->model_flops_per_step / p->step_time_s;
}

QueueSimOptions Opts(const WorkloadModel& m) {
  QueueSimOptions o;
  o.policy = "topo";
  o.queue = QueuePolicy::kFifoBackfill;
  o.topology = FatTree();
  o.workload_model = m;
  return o;
}

TEST(OrgWindow, AJobsWorkAndTheWindowsIntegralsByHand) {
  const WorkloadModel typical = Model("launched", kTypical);
  const double rate = Rate(typical.Resolve(1)->strategy);
  const double peak = *planner::FindGpu("h100")->PeakFlops(planner::Precision::kBf16);
  ASSERT_GT(rate, 0);
  // Job 1 runs 0..1000 on one GPU; job 2 arrives at 400 and ends the
  // arrival window [0, 400].
  auto r = RunQueueSim(Nodes(), {MakeJob(1, 0, 1, 1000), MakeJob(2, 400, 1, 100)}, Opts(typical));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->window_s, 400);
  EXPECT_DOUBLE_EQ(r->window_allocated_gpu_s, 400);
  EXPECT_NEAR(r->window_model_flops, rate * 400, rate * 1e-9);
  EXPECT_NEAR(r->window_peak_bf16_flops, peak * 400, peak * 1e-9);
  EXPECT_NEAR(r->window_peak_native_flops, peak * 400, peak * 1e-9);
  EXPECT_DOUBLE_EQ(r->window_hoarded_gpu_s, 0);
  EXPECT_EQ(r->jobs[0].finish_s, 1000);  // no reference: it runs its trace time
  EXPECT_NEAR(r->jobs[0].model_flops, rate * 1000, rate * 1e-9);
  EXPECT_NEAR(r->jobs[0].mfu, rate / peak, 1e-12);
  // A window given explicitly: [0, 1500] sees both jobs whole.
  auto o = Opts(typical);
  o.window_s = 1500;
  auto w = RunQueueSim(Nodes(), {MakeJob(1, 0, 1, 1000), MakeJob(2, 400, 1, 100)}, o);
  ASSERT_TRUE(w) << w.error().message;
  EXPECT_DOUBLE_EQ(w->window_allocated_gpu_s, 1100);
  EXPECT_NEAR(w->window_model_flops, rate * 1100, rate * 1e-9);
  o.window_s = -1;
  EXPECT_FALSE(RunQueueSim(Nodes(), {MakeJob(1, 0, 1, 10)}, o).has_value());
}

TEST(OrgWindow, AZombieHoldsItsGpuButDeliversNothing) {
  const WorkloadModel typical = Model("launched", kTypical);
  const double rate = Rate(typical.Resolve(1)->strategy);
  auto o = Opts(typical);
  o.hoarding = {.share = 1, .min_tail_s = 50, .max_tail_s = 50, .seed = 3};  // every job idles 50 s after its work
  o.window_s = 1000;
  auto r = RunQueueSim(Nodes(), {MakeJob(1, 0, 1, 100), MakeJob(2, 10, 2, 500)}, o);
  ASSERT_TRUE(r) << r.error().message;
  // Job 1: works 0..100, idle 100..150. Job 2 (no model for 2 GPUs): holds
  // 2 GPUs 10..510, idle 510..560, and delivers no modelled FLOPs.
  EXPECT_DOUBLE_EQ(r->window_hoarded_gpu_s, 50 + 2 * 50);
  EXPECT_DOUBLE_EQ(r->window_allocated_gpu_s, 150 + 2 * 550);
  EXPECT_NEAR(r->window_model_flops, rate * 100, rate * 1e-9);
  const double peak = *planner::FindGpu("h100")->PeakFlops(planner::Precision::kBf16);
  EXPECT_NEAR(r->window_peak_bf16_flops, peak * 150, peak * 1e-9);  // only modelled jobs' GPUs
}

TEST(OrgWindow, AFasterLayoutFinishesTheReferencesWorkSooner) {
  const WorkloadModel typical = Model("launched", kTypical);
  const WorkloadModel planned = Model("planned", kPlanned);
  const double ref_rate = Rate(typical.Resolve(1)->strategy);
  // The planner's best layout for one GPU and this global batch.
  const planner::GpuSpec gpu = *planner::FindGpu("h100");
  planner::SearchOptions so;
  so.top = 1;
  so.global_batch = 8;
  auto best = planner::SearchPlans(*planner::FindModelPreset("llama3.2-1b"), gpu, planner::DefaultPlacement(gpu, 1), so,
                                   planner::DefaultCalibration());
  ASSERT_TRUE(best && !best->plans.empty());
  const double planned_rate = best->plans[0].prediction.model_flops_per_step / best->plans[0].prediction.step_time_s;
  ASSERT_GT(planned_rate, ref_rate * 1.1);  // no recomputation, a bigger micro-batch: faster
  auto o = Opts(planned);
  o.reference_model = typical;
  auto r = RunQueueSim(Nodes(), {MakeJob(1, 0, 1, 10000)}, o);
  ASSERT_TRUE(r) << r.error().message;
  const int64_t want = static_cast<int64_t>(std::ceil(10000 * ref_rate / planned_rate - 1e-9));
  EXPECT_EQ(r->jobs[0].finish_s, want);
  // The same work: the reference's FLOPs.
  EXPECT_NEAR(r->jobs[0].model_flops, ref_rate * 10000, ref_rate * 1e-6);
  EXPECT_NEAR(r->jobs[0].mfu, planned_rate / *gpu.PeakFlops(planner::Precision::kBf16), 1e-12);
  // With the reference as the model too, a job runs exactly its trace time.
  auto same = Opts(typical);
  same.reference_model = typical;
  auto s = RunQueueSim(Nodes(), {MakeJob(1, 0, 1, 10000), MakeJob(2, 0, 8, 3000)}, same);
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->jobs[0].finish_s, 10000);
  EXPECT_EQ(s->jobs[1].finish_s, 3000);  // a compact 8-GPU gang: one host
}

TEST(OrgWindow, ThePlannedLayoutIsSearchedForThePlacement) {
  // An 8-GPU job: launched as TP 8; planned, the search's best on one host.
  const WorkloadModel typical = Model("launched", kTypical);
  const WorkloadModel planned = Model("planned", kPlanned);
  auto a = RunQueueSim(Nodes(), {MakeJob(1, 0, 8, 1000)}, Opts(typical));
  auto b = RunQueueSim(Nodes(), {MakeJob(1, 0, 8, 1000)}, Opts(planned));
  ASSERT_TRUE(a && b);
  EXPECT_GT(b->jobs[0].mfu, a->jobs[0].mfu);
  EXPECT_LT(b->comm_share, a->comm_share);
}

struct Bad {
  std::string name, text, want;
};

class OrgConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / fmt::format("tidal_org_test_{}", ::getpid());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Write(const std::string& text) {
    const fs::path p = dir_ / "org.yaml";
    std::ofstream(p) << text;
    return p.string();
  }
  fs::path dir_;
};

const std::string kServices = std::string(TIDAL_SOURCE_DIR) + "/data/org/services.yaml";

constexpr const char* kSides = R"(before: {queue: static-partitions, placer: first-fit, workload_model: t.yaml}
after: {queue: tidal, placer: topo, workload_model: p.yaml, market: true}
)";

TEST_F(OrgConfigTest, ReadsPathsRelativeToTheFile) {
  auto c = ReadOrgConfig(Write(std::string("version: 1\njobs: j.csv\ntopology: t.csv\nreference_model: t.yaml\nload: 0.5\n"
                                           "hoarding: {share: 0.2}\nlimit: 9\nseed: 4\ncore_project: vc7\n") + kSides));
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->name, "org");
  EXPECT_EQ(c->jobs, (dir_ / "j.csv").string());
  EXPECT_EQ(c->after.workload_model, (dir_ / "p.yaml").string());
  EXPECT_EQ(c->tenants, "proportional");
  EXPECT_DOUBLE_EQ(c->load, 0.5);
  EXPECT_DOUBLE_EQ(c->hoarding.share, 0.2);
  EXPECT_EQ(c->limit, 9);
  EXPECT_EQ(c->seed, 4u);
  EXPECT_EQ(c->core_project, "vc7");
  EXPECT_TRUE(c->after.market);
  EXPECT_FALSE(c->before.market);
  EXPECT_EQ(c->before.placer, "first-fit");
}

TEST_F(OrgConfigTest, BadInputsSayWhereAndWhat) {
  const std::string head = "version: 1\njobs: j.csv\ntopology: t.csv\nreference_model: t.yaml\n";
  const std::vector<Bad> cases = {
      {"no version", "jobs: j.csv\n", "org.yaml:1: an org config starts with 'version: 1'"},
      {"unknown key", head + "loads: [1]\n" + kSides, "org.yaml:5: unknown key 'loads'"},
      {"no jobs", "version: 1\ntopology: t.csv\nreference_model: t.yaml\n" + std::string(kSides), "'jobs:' is required"},
      {"no reference", "version: 1\njobs: j.csv\ntopology: t.csv\n" + std::string(kSides), "'reference_model:' is required"},
      {"load zero", head + "load: 0\n" + kSides, "org.yaml:5: load 0 must be in (0, 100]"},
      {"negative limit", head + "limit: -1\n" + kSides, "org.yaml:5: limit must be >= 0"},
      {"bad hoarding", head + "hoarding: {share: 2}\n" + kSides, "org.yaml:5:"},
      {"bad checkpoint", head + "checkpoint_interval: 0\n" + kSides, "checkpoint_interval must be > 0"},
      {"no before", head + "after: {queue: tidal, placer: topo, workload_model: p.yaml}\n", "'before:' is required"},
      {"side key", head + "before: {queue: fifo, placer: topo, workload_model: t.yaml, tp: 8}\nafter: {queue: tidal, placer: topo, workload_model: p.yaml}\n",
       "org.yaml:5: unknown key 'tp' in before"},
      {"side incomplete", head + "before: {queue: fifo, placer: topo}\nafter: {queue: tidal, placer: topo, workload_model: p.yaml}\n",
       "before needs queue, placer and workload_model"},
      {"bad queue", head + "before: {queue: lifo, placer: topo, workload_model: t.yaml}\nafter: {queue: tidal, placer: topo, workload_model: p.yaml}\n",
       "lifo"},
      {"bad placer", head + "before: {queue: fifo, placer: tetris, workload_model: t.yaml}\nafter: {queue: tidal, placer: topo, workload_model: p.yaml}\n",
       "unknown placer 'tetris'"},
      {"market on fifo", head + "before: {queue: fifo, placer: topo, workload_model: t.yaml, market: true}\nafter: {queue: tidal, placer: topo, workload_model: p.yaml}\n",
       "the market needs a tenant queue"},
      {"not yaml", head + "before: [\n", "org.yaml:"},
      {"core project empty", head + "core_project: ''\n" + kSides, "org.yaml:5: core_project names a business group"},
      {"inference no services", head + "inference: {replica: {startup_s: 1}}\n" + kSides,
       "org.yaml:5: inference is a map {services: FILE"},
      {"inference key", head + "inference: {services: s.yaml, lead: 1}\n" + kSides, "unknown key inference.lead"},
      {"inference file", head + "inference: {services: none.yaml}\n" + kSides, "none.yaml"},
      {"inference knob", head + "inference: {services: " + kServices + ", autoscaler: {lead_s: -5}}\n" + kSides,
       "autoscaler.lead_s must be >= 0"},
      {"inference write", head + "inference: {services: " + kServices + ", checkpoint_write_s: -1}\n" + kSides,
       "org.yaml:5: inference.checkpoint_write_s must be >= 0"},
      {"side colocation", head + "before: {queue: fifo, placer: topo, workload_model: t.yaml, colocation: maybe}\nafter: {queue: tidal, placer: topo, workload_model: p.yaml}\n",
       "org.yaml:5:"},
      {"budget factor", head + "budget_factor: -1\n" + kSides, "org.yaml:5: budget_factor -1 must be a number in [0, 1e6]"},
      {"budget factor text", head + "budget_factor: lots\n" + kSides, "org.yaml:5"},
      {"budgets list", head + "budgets: [a, b]\n" + kSides, "org.yaml:5: budgets is a map"},
      {"budget of a bg", head + "budgets: {ads: 2, search: -0.1}\n" + kSides,
       "org.yaml:5: the budget factor of 'search' -0.1 must be a number in [0, 1e6]"},
      {"tiers list", head + "tiers: [ads]\n" + kSides, "org.yaml:5: tiers is a map"},
      {"tier name", head + "tiers: {ads: gold}\n" + kSides, "org.yaml:5: tier of 'ads'"},
  };
  for (const Bad& b : cases) {
    SCOPED_TRACE(b.name);
    auto r = ReadOrgConfig(Write(b.text));
    ASSERT_FALSE(r.has_value()) << b.text;
    EXPECT_EQ(r.error().code, ErrorCode::kParse);
    EXPECT_THAT(r.error().message, HasSubstr(b.want));
  }
  // Budgets and tiers that read.
  auto good = ReadOrgConfig(Write(head + "budget_factor: 2\nbudgets: {ads: 0.5}\ntiers: {ads: spot, search: guaranteed}\n" + kSides));
  ASSERT_TRUE(good) << good.error().message;
  EXPECT_DOUBLE_EQ(good->budget_factor, 2);
  EXPECT_EQ(good->budgets, (std::map<std::string, double>{{"ads", 0.5}}));
  EXPECT_EQ(good->tiers, (std::map<std::string, tenancy::Tier>{{"ads", tenancy::Tier::kSpot}, {"search", tenancy::Tier::kGuaranteed}}));
  auto missing = ReadOrgConfig((dir_ / "none.yaml").string());
  ASSERT_FALSE(missing);
  EXPECT_THAT(missing.error().message, HasSubstr("none.yaml"));
}

TEST(OrgConfig, TheShippedDefaultReads) {
  auto c = ReadOrgConfig(std::string(TIDAL_SOURCE_DIR) + "/data/org/default.yaml");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->before.queue, "static-partitions");
  EXPECT_EQ(c->after.queue, "tidal");
  for (const auto* f : {&c->reference_model, &c->before.workload_model, &c->after.workload_model, &c->market}) {
    EXPECT_TRUE(fs::exists(*f)) << *f;
    if (f != &c->market) {
      EXPECT_TRUE(WorkloadModel::Read(*f).has_value()) << *f;
    }
  }
  EXPECT_FALSE(WorkloadModel::Read(c->before.workload_model)->planned());
  EXPECT_TRUE(WorkloadModel::Read(c->after.workload_model)->planned());
  // Inference: three services on the real traces, a separate fleet before, co-location after.
  ASSERT_TRUE(c->inference.has_value());
  EXPECT_EQ(c->inference->loaded.size(), 3u);
  EXPECT_EQ(c->inference->knobs.lead_s, 1800);
  EXPECT_DOUBLE_EQ(c->inference->knobs.error_quantile, 0.97);
  EXPECT_EQ(c->inference->knobs.checkpoint_write_s, 120);
  EXPECT_FALSE(c->before.colocation);
  EXPECT_TRUE(c->after.colocation);
  EXPECT_EQ(c->core_project, "largest");
}

// The outputs of a run with inference: its keys in the JSON, the hourly CSV
// and the charts of GPU use by tier and queue length in the report.
// Every shipped sensitivity config (docs/org.md) reads, with workload models
// that read and agree with the default's fleet GPU; the budgets and mapping
// rows change what they say they change.
TEST(OrgConfig, TheShippedSensitivityConfigsRead) {
  const fs::path dir = fs::path(TIDAL_SOURCE_DIR) / "data/org/sensitivity";
  int configs = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    if (text.str().find("\nbefore:") == std::string::npos) continue;  // a workload model, not an org config
    SCOPED_TRACE(entry.path().string());
    auto c = ReadOrgConfig(entry.path().string());
    ASSERT_TRUE(c) << c.error().message;
    ++configs;
    for (const std::string* f : {&c->reference_model, &c->before.workload_model, &c->after.workload_model}) {
      auto m = WorkloadModel::Read(*f);
      ASSERT_TRUE(m) << m.error().message;
      EXPECT_EQ(m->gpu(), "h100") << *f;
    }
    EXPECT_EQ(c->limit, 20000);
    const std::string name = entry.path().stem().string();
    EXPECT_EQ(c->name, name);
    EXPECT_DOUBLE_EQ(c->budget_factor, name == "budgets-tight" ? 0.5 : 1.5);
    if (name == "mapping-gpt3") {
      EXPECT_EQ(WorkloadModel::Read(c->after.workload_model)->For(8)->model, "gpt3-20b");
      EXPECT_TRUE(WorkloadModel::Read(c->after.workload_model)->planned());
      EXPECT_FALSE(WorkloadModel::Read(c->before.workload_model)->planned());
    }
  }
  EXPECT_GE(configs, 10);
}

TEST_F(OrgConfigTest, OutputsCarryInferenceAndTheHours) {
  OrgConfig c;
  c.name = "hand";
  c.after.colocation = true;
  OrgResult r;
  r.total_gpus = 16;
  r.window_s = 2 * 86400;
  for (OrgFigures* f : {&r.before, &r.after}) {
    f->name = f == &r.before ? "before" : "after";
    f->side.colocation = f == &r.after;
    f->inference = {{"big", f == &r.after ? 0.995 : 1.0, 2880, 3, 4, 100, {7, 0}}};
    f->inference_gpu_share = f == &r.after ? 0.25 : 0.5;
    f->hourly = {{8, 8, 0, 2}, {16, 0, 1, 0}};
  }
  r.ablations.push_back(r.after);
  r.ablations.back().name = "no_colocation";
  const auto j = OrgJson(c, r);
  EXPECT_DOUBLE_EQ(j["after"]["inference"]["services"]["big"]["slo_minutes_met"].get<double>(), 0.995);
  EXPECT_TRUE(j["after"]["inference"]["colocation"].get<bool>());
  EXPECT_DOUBLE_EQ(j["before"]["inference"]["gpu_share"].get<double>(), 0.5);
  EXPECT_TRUE(j["ablations"].contains("no_colocation"));
  EXPECT_THAT(OrgTable(r), HasSubstr("SLOmin"));
  EXPECT_THAT(OrgTable(r), HasSubstr("99.50%"));
  ASSERT_TRUE(WriteOrgOutputs(c, r, (dir_ / "out").string()));
  std::ifstream hourly(dir_ / "out" / "hourly.csv");
  std::stringstream hs;
  hs << hourly.rdbuf();
  EXPECT_THAT(hs.str(), HasSubstr("side,hour,training_gpus,inference_gpus,hoarded_gpus,waiting_jobs\n"));
  EXPECT_THAT(hs.str(), HasSubstr("after,1,16.000,0.000,1,0\n"));
  std::ifstream html(dir_ / "out" / "report.html");
  std::stringstream ss;
  ss << html.rdbuf();
  EXPECT_THAT(ss.str(), HasSubstr("GPUs in use by tier, after"));
  EXPECT_THAT(ss.str(), HasSubstr("training jobs waiting"));
  EXPECT_THAT(ss.str(), HasSubstr(">inference<"));
}

}  // namespace
}  // namespace tidal::sim

// The placement-charged queue replay: on a 2-leaf x 2-host x 8-GPU fat tree
// with a 2:1 oversubscribed spine, a job's run time is stretched by its
// planner slowdown (ceil), and the summary's locality / communication keys
// are the GPU-time-weighted sums of the per-job records. Expected step times
// come from the planner directly (PlacementFromTopology + Predict), not from
// the simulator's cost object.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "planner/gpu.h"
#include "planner/topology_placement.h"
#include "sim/queue_sim.h"
#include "tenancy/tenant_tree.h"
#include "sim/test_fat_tree.h"

namespace tidal::sim {
namespace {

using ::testing::HasSubstr;
using testing::FatTree;
using testing::MakeJob;

// Node-list order interleaves the leaves: first-fit's gang takes h1 + h3.
std::vector<NodeSpec> Interleaved() {
  return {{"h1", 64000, 262144, 8, "H100"}, {"h3", 64000, 262144, 8, "H100"},
          {"h2", 64000, 262144, 8, "H100"}, {"h4", 64000, 262144, 8, "H100"}};
}

QueueSimOptions Opts(const std::string& policy, std::shared_ptr<const topo::Topology> t = FatTree()) {
  QueueSimOptions o;
  o.policy = policy;
  o.queue = QueuePolicy::kFifoBackfill;
  o.seed = 1;
  o.topology = std::move(t);
  return o;
}

QueueSimResult Replay(const std::vector<Job>& jobs, const QueueSimOptions& o, const std::vector<NodeSpec>& nodes = Interleaved()) {
  auto r = RunQueueSim(nodes, jobs, o);
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().message);
  return r ? std::move(*r) : QueueSimResult{};
}

const QueueJobRecord& Rec(const QueueSimResult& r, JobId id) {
  for (const auto& j : r.jobs)
    if (j.id == id) return j;
  ADD_FAILURE() << "no job " << id;
  static const QueueJobRecord none;
  return none;
}

// The planner's prediction for the default workload model's job on these hosts' GPUs.
planner::Prediction Predict(const std::vector<std::string>& hosts) {
  auto t = FatTree();
  std::vector<topo::DomainId> gpus;
  for (const auto& h : hosts)
    for (int i = 0; i < 8; ++i) gpus.push_back(t->host_gpu(*t->FindHost(h), i));
  auto r = WorkloadModel::Default().Resolve(static_cast<int>(gpus.size()));
  EXPECT_TRUE(r.has_value());
  auto p = planner::Predict(r->model, *planner::FindGpu("h100"), planner::PlacementFromTopology(*t, gpus), r->strategy,
                            planner::DefaultCalibration());
  EXPECT_TRUE(p.has_value());
  return *p;
}

TEST(PlacementSim, BadPlacementIsStretchedByItsSlowdown) {
  const auto spine = Predict({"h1", "h3"}), leaf = Predict({"h1", "h2"});
  const double slowdown = spine.step_time_s / leaf.step_time_s;
  ASSERT_GT(slowdown, 1.0);
  const int64_t d = 3600;
  const double stretched = static_cast<double>(d) * slowdown;
  ASSERT_NE(std::floor(stretched), stretched);  // so ceil, floor and +1 all differ
  const auto want_finish = static_cast<int64_t>(std::ceil(stretched));

  const std::vector<Job> jobs = {MakeJob(1, 0, 16, d)};
  const QueueSimResult ff = Replay(jobs, Opts("first-fit"));
  const QueueJobRecord& f = Rec(ff, 1);
  EXPECT_EQ(f.start_s, 0);
  EXPECT_EQ(f.finish_s, want_finish);
  EXPECT_DOUBLE_EQ(f.slowdown, slowdown);
  EXPECT_DOUBLE_EQ(f.comm_share, spine.comm_share);
  EXPECT_EQ(f.nodes, 2);
  EXPECT_EQ(f.switches, 2);
  EXPECT_EQ(ff.makespan_s, want_finish);
  EXPECT_EQ(ff.jct_s.mean, static_cast<double>(want_finish));

  const QueueSimResult tp = Replay(jobs, Opts("topo"));
  const QueueJobRecord& t = Rec(tp, 1);
  EXPECT_EQ(t.finish_s, d);  // compact: exactly its trace run time
  EXPECT_DOUBLE_EQ(t.slowdown, 1.0);
  EXPECT_DOUBLE_EQ(t.comm_share, leaf.comm_share);
  EXPECT_LT(leaf.comm_share, spine.comm_share);
  EXPECT_EQ(t.nodes, 2);
  EXPECT_EQ(t.switches, 1);
  EXPECT_DOUBLE_EQ(tp.locality_node, 1.0);
  EXPECT_DOUBLE_EQ(tp.locality_leaf, 0.0);
  EXPECT_DOUBLE_EQ(ff.locality_leaf, 1.0);
  EXPECT_DOUBLE_EQ(ff.slowdown_mean, slowdown);
}

std::vector<Job> Mixed() {
  return {MakeJob(1, 0, 16, 3600), MakeJob(2, 0, 8, 1000), MakeJob(3, 0, 4, 2000), MakeJob(4, 0, 2, 500),
          MakeJob(5, 0, 1, 100),   MakeJob(6, 50, 4, 700), MakeJob(7, 60, 12, 800), MakeJob(8, 70, 6, 900),
          MakeJob(9, 80, 3, 1300)};
}

void ExpectAggregatesFromRecords(const QueueSimResult& r) {
  double multi = 0, multi_node = 0, multi_leaf = 0, modelled = 0, comm = 0, slow = 0;
  int64_t n_multi = 0, n_modelled = 0;
  for (const auto& j : r.jobs) {
    ASSERT_EQ(j.outcome, JobOutcome::kFinished) << j.id;
    if (j.num_gpu < 2) {
      EXPECT_EQ(j.comm_share, -1);
      EXPECT_EQ(j.slowdown, 1);
      continue;
    }
    const double g = static_cast<double>(j.num_gpu) * static_cast<double>(j.finish_s - j.start_s);
    ++n_multi;
    multi += g;
    if (j.nodes > 1) multi_node += g;
    if (j.switches > 1) multi_leaf += g;
    if (j.comm_share >= 0) {
      ++n_modelled;
      modelled += g;
      comm += g * j.comm_share;
      slow += j.slowdown;
    }
  }
  EXPECT_EQ(r.jobs_multi_gpu, n_multi);
  EXPECT_EQ(r.jobs_modelled, n_modelled);
  ASSERT_GT(multi, 0);
  EXPECT_DOUBLE_EQ(r.locality_node, multi_node / multi);
  EXPECT_DOUBLE_EQ(r.locality_leaf, multi_leaf / multi);
  EXPECT_DOUBLE_EQ(r.comm_share, comm / modelled);
  EXPECT_DOUBLE_EQ(r.slowdown_mean, slow / static_cast<double>(n_modelled));
  const nlohmann::json j = QueueSimJson(r);
  EXPECT_DOUBLE_EQ(j["comm_share"].get<double>(), r.comm_share);
  EXPECT_DOUBLE_EQ(j["slowdown_mean"].get<double>(), r.slowdown_mean);
  EXPECT_DOUBLE_EQ(j["locality_node"].get<double>(), r.locality_node);
  EXPECT_DOUBLE_EQ(j["locality_leaf"].get<double>(), r.locality_leaf);
  EXPECT_EQ(j["jobs_multi_gpu"].get<int64_t>(), n_multi);
  EXPECT_EQ(j["jobs_modelled"].get<int64_t>(), n_modelled);
  EXPECT_EQ(j["topology"].get<std::string>(), "fat.yaml");
}

TEST(PlacementSim, SummaryIsTheGpuTimeWeightedRecords) {
  for (const char* policy : {"first-fit", "topo"}) {
    SCOPED_TRACE(policy);
    const QueueSimResult r = Replay(Mixed(), Opts(policy));
    ASSERT_EQ(r.jobs_finished, 9);
    EXPECT_EQ(r.jobs_multi_gpu, 8);
    EXPECT_EQ(r.jobs_modelled, 8);  // every count 2..16 has a class in the default
    ExpectAggregatesFromRecords(r);
    // Every job ran at least its trace time, stretched exactly by its slowdown.
    for (const auto& j : r.jobs) {
      const int64_t d = *Mixed()[static_cast<size_t>(j.id - 1)].duration_s;
      EXPECT_EQ(j.finish_s - j.start_s, static_cast<int64_t>(std::ceil(static_cast<double>(d) * j.slowdown - 1e-9))) << j.id;
    }
  }
  // The interleaved first-fit run really mixes placements (else the weighting is untested).
  const QueueSimResult ff = Replay(Mixed(), Opts("first-fit"));
  EXPECT_GT(ff.locality_leaf, 0);
  EXPECT_LT(ff.locality_leaf, 1);
  EXPECT_GT(ff.slowdown_mean, 1);
  EXPECT_EQ(Rec(ff, 2).nodes, 1);
  EXPECT_DOUBLE_EQ(Rec(ff, 2).slowdown, 1.0);  // 8 GPUs on one host is compact
  EXPECT_DOUBLE_EQ(Rec(ff, 2).comm_share, Predict({"h2"}).comm_share);
}

TEST(PlacementSim, LoadAndTimeScaleCompressArrivals) {
  // 32 GPUs; submits 0, 100, 250, 400 (span 400); GPU-seconds 8*100 + 16*50 + 4*200 + 2*10 = 2420.
  const std::vector<Job> jobs = {MakeJob(1, 0, 8, 100), MakeJob(2, 100, 16, 50), MakeJob(3, 250, 4, 200),
                                 MakeJob(4, 400, 2, 10)};
  const double native = 2420.0 / (32 * 400);
  auto o = Opts("topo");
  const QueueSimResult base = Replay(jobs, o);
  EXPECT_DOUBLE_EQ(base.offered_load_native, native);
  EXPECT_DOUBLE_EQ(base.offered_load, native);
  EXPECT_DOUBLE_EQ(base.time_scale, 1);

  o.time_scale = 3;  // submits t0 + floor((s - t0) / 3)
  const QueueSimResult ts = Replay(jobs, o);
  EXPECT_EQ(Rec(ts, 2).submit_s, 33);
  EXPECT_EQ(Rec(ts, 3).submit_s, 83);
  EXPECT_EQ(Rec(ts, 4).submit_s, 133);
  EXPECT_DOUBLE_EQ(ts.offered_load, native * 3);
  EXPECT_DOUBLE_EQ(ts.offered_load_native, native);
  const nlohmann::json j = QueueSimJson(ts);
  EXPECT_DOUBLE_EQ(j["time_scale"].get<double>(), 3);
  EXPECT_DOUBLE_EQ(j["offered_load"].get<double>(), native * 3);
  EXPECT_DOUBLE_EQ(j["offered_load_native"].get<double>(), native);

  o.time_scale = 0;
  o.load = 0.5;  // k = 0.5 / native = 2.6446...
  const double k = 0.5 / native;
  const QueueSimResult ld = Replay(jobs, o);
  EXPECT_DOUBLE_EQ(ld.time_scale, k);
  EXPECT_DOUBLE_EQ(ld.offered_load, 0.5);
  EXPECT_EQ(Rec(ld, 2).submit_s, static_cast<int64_t>(std::floor(100 / k)));
  EXPECT_EQ(Rec(ld, 2).submit_s, 37);
  EXPECT_EQ(Rec(ld, 3).submit_s, 94);
  EXPECT_EQ(Rec(ld, 4).submit_s, 151);

  o.time_scale = 2;  // both: an error
  auto both = RunQueueSim(Interleaved(), jobs, o);
  ASSERT_FALSE(both);
  EXPECT_THAT(both.error().message, HasSubstr("give --load or --time-scale, not both"));
  o.time_scale = 0;
  o.load = 101;
  auto high = RunQueueSim(Interleaved(), jobs, o);
  ASSERT_FALSE(high);
  EXPECT_THAT(high.error().message, HasSubstr("--load must be in (0, 100]"));
}

// Four 8-GPU jobs fill the hosts (topo: h1, h2 in leaf1, then h3, h4); the
// ones on h1 and h3 end at 10, so at 10 the 16-GPU job can only span the
// spine. max_wait 0 takes that now; -1 waits for a leaf (at 100).
std::vector<Job> WaitScenario() {
  return {MakeJob(1, 0, 8, 10), MakeJob(2, 0, 8, 100), MakeJob(3, 0, 8, 10), MakeJob(4, 0, 8, 100),
          MakeJob(5, 5, 16, 1000)};
}

TEST(PlacementSim, MaxWaitDecidesWhetherAJobTakesASlowerPlacement) {
  const auto spine = Predict({"h1", "h3"}), leaf = Predict({"h1", "h2"});
  const double slowdown = spine.step_time_s / leaf.step_time_s;
  auto o = Opts("topo");
  o.max_wait_s = 0;
  const QueueSimResult now = Replay(WaitScenario(), o);
  const QueueJobRecord& a = Rec(now, 5);
  EXPECT_EQ(a.start_s, 10);
  EXPECT_EQ(a.switches, 2);
  EXPECT_DOUBLE_EQ(a.slowdown, slowdown);
  EXPECT_EQ(a.finish_s, 10 + static_cast<int64_t>(std::ceil(1000 * slowdown)));

  o.max_wait_s = -1;
  const QueueSimResult wait = Replay(WaitScenario(), o);
  const QueueJobRecord& b = Rec(wait, 5);
  EXPECT_EQ(b.start_s, 100);
  EXPECT_EQ(b.switches, 1);
  EXPECT_DOUBLE_EQ(b.slowdown, 1.0);
  EXPECT_EQ(b.finish_s, 1100);
  // slowdown_ok above the spine's slowdown: the spine placement is good enough.
  o.slowdown_ok = slowdown + 0.01;
  EXPECT_EQ(Rec(Replay(WaitScenario(), o), 5).start_s, 10);
}

// A finite max_wait ends on its own: the job below may wait 30 s (until 35)
// for a compact placement; no other event falls between 10 and 100, so the
// replay wakes the queue at 35 and it starts on the spine then (once the
// replay had no such event and it started at 100).
TEST(PlacementSim, FiniteMaxWaitEndsWhenTheWaitRunsOut) {
  auto o = Opts("topo");
  o.max_wait_s = 30;
  const QueueSimResult r = Replay(WaitScenario(), o);
  EXPECT_EQ(Rec(r, 5).start_s, 35);
  EXPECT_EQ(Rec(r, 5).switches, 2);
}

// --require-level: even when the job would take the spine now (max wait 0),
// a gang required in one leaf waits for one; --prefer-level does not.
TEST(PlacementSim, RequiredLevelKeepsEveryGangInOneLeaf) {
  auto o = Opts("topo");
  o.max_wait_s = 0;
  o.require_level = topo::Level::kLeaf;
  const QueueJobRecord& a = Rec(Replay(WaitScenario(), o), 5);
  EXPECT_EQ(a.start_s, 100);
  EXPECT_EQ(a.switches, 1);
  o.require_level.reset();
  o.prefer_level = topo::Level::kLeaf;
  EXPECT_EQ(Rec(Replay(WaitScenario(), o), 5).switches, 2);  // fell back to the spine at 10
}

TEST(PlacementSim, WithoutTopologyTheNewKeysAreNull) {
  auto o = Opts("first-fit", nullptr);
  const QueueSimResult r = Replay(Mixed(), o);
  EXPECT_TRUE(r.topology.empty());
  EXPECT_EQ(r.jobs_modelled, 0);
  EXPECT_EQ(r.jobs_multi_gpu, 8);
  EXPECT_LT(r.comm_share, 0);
  EXPECT_LT(r.slowdown_mean, 0);
  EXPECT_LT(r.locality_leaf, 0);
  for (const auto& j : r.jobs) {
    EXPECT_EQ(j.slowdown, 1);
    EXPECT_EQ(j.comm_share, -1);
    EXPECT_EQ(j.switches, 0);
    EXPECT_EQ(j.finish_s - j.start_s, *Mixed()[static_cast<size_t>(j.id - 1)].duration_s);
  }
  const nlohmann::json j = QueueSimJson(r);
  for (const char* k : {"topology", "comm_share", "slowdown_mean", "locality_leaf"}) EXPECT_TRUE(j[k].is_null()) << k;
  // Hosts are known without a topology: the node share is measured.
  EXPECT_TRUE(j["locality_node"].is_number());
  for (const char* placer : {"slurm-tree", "kueue-tas", "hived"}) {
    auto bad = RunQueueSim(Interleaved(), Mixed(), Opts(placer, nullptr));
    ASSERT_FALSE(bad) << placer;
    EXPECT_EQ(bad.error().message, fmt::format("placer '{}' places by switches and needs --topology FILE", placer));
  }
  EXPECT_TRUE(RunQueueSim(Interleaved(), Mixed(), Opts("topo", nullptr)));
}

TEST(PlacementSim, RunsAreDeterministic) {
  for (const char* policy : {"topo", "first-fit", "slurm-tree", "kueue-tas", "hived", "random"}) {
    SCOPED_TRACE(policy);
    auto o = Opts(policy);
    o.load = 0.9;
    const QueueSimResult a = Replay(Mixed(), o), b = Replay(Mixed(), o);
    EXPECT_EQ(QueueSimJson(a).dump(), QueueSimJson(b).dump());
    ASSERT_EQ(a.jobs.size(), b.jobs.size());
    for (size_t i = 0; i < a.jobs.size(); ++i) {
      EXPECT_EQ(a.jobs[i].finish_s, b.jobs[i].finish_s);
      EXPECT_EQ(a.jobs[i].slowdown, b.jobs[i].slowdown);
    }
  }
}

TEST(PlacementSim, JobsCsvHasThePlacementColumns) {
  const std::vector<Job> jobs = {MakeJob(1, 0, 16, 3600), MakeJob(2, 0, 1, 10)};
  const QueueSimResult r = Replay(jobs, Opts("first-fit"));
  const std::string dir = (std::filesystem::temp_directory_path() / fmt::format("tidal_psim_{}", ::getpid())).string();
  ASSERT_TRUE(WriteQueueSimOutputs(r, dir));
  std::ifstream in(dir + "/jobs.csv");
  std::string header, row1, row2;
  std::getline(in, header);
  std::getline(in, row1);
  std::getline(in, row2);
  EXPECT_EQ(header,
            "id,name,num_gpu,gpu_milli,submit_s,start_s,finish_s,queue_delay_s,jct_s,reserved_s,nodes,switches,slowdown,"
            "comm_share,outcome,reason,tenant,preemptions,lost_gpu_s,estimate_p50_s,estimate_p90_s");
  const QueueJobRecord& a = Rec(r, 1);
  EXPECT_EQ(row1, fmt::format("1,j1,16,1000,0,0,{0},0,{0},,2,2,{1:.4f},{2:.4f},finished,,,0,0,,", a.finish_s, a.slowdown,
                              a.comm_share));
  EXPECT_EQ(row2, "2,j2,1,1000,0,0,10,0,10,,,,1.0000,,finished,,,0,0,,");
  std::ifstream sj(dir + "/summary.json");
  std::stringstream ss;
  ss << sj.rdbuf();
  const auto summary = nlohmann::json::parse(ss.str());
  EXPECT_EQ(summary["jobs_modelled"], 1);
  EXPECT_EQ(summary["locality_leaf"], 1.0);
  std::filesystem::remove_all(dir);
}

// A preempted run gives back only the multi-leaf time it added (found by
// mutation testing, seed 2: a run under one leaf switch counted as
// multi-leaf there). org (32) -> A (16), B (16) on the fat tree, tidal: A's
// four 8-GPU jobs fill it from 0 (A borrows 16); B's b1 (8) reclaims one at
// 10. Every run stays on one host under one leaf: the multi-leaf share is
// 0, not negative.
TEST(PlacementSim, APreemptedOneLeafRunLeavesTheMultiLeafShareAtZero) {
  std::vector<tenancy::TenantSpec> specs;
  tenancy::TenantSpec root{.name = "org"};
  root.quotas.push_back({"gpu", tenancy::Quota{.nominal = 32000}});
  specs.push_back(root);
  for (const char* n : {"A", "B"}) {
    tenancy::TenantSpec t{.name = n, .parent = "org"};
    t.quotas.push_back({"gpu", tenancy::Quota{.nominal = 16000}});
    specs.push_back(t);
  }
  auto tree = tenancy::TenantTree::Build(specs);
  ASSERT_TRUE(tree.has_value()) << tree.error().message;
  std::vector<Job> jobs;
  for (JobId id = 1; id <= 4; ++id) {
    jobs.push_back(MakeJob(id, 0, 8, 10000));
    jobs.back().group = "A";
  }
  jobs.push_back(MakeJob(5, 10, 8, 100));
  jobs.back().group = "B";
  QueueSimOptions o = Opts("topo");
  o.queue = QueuePolicy::kTidal;
  o.tenant_tree = std::make_shared<const tenancy::TenantTree>(std::move(*tree));
  const QueueSimResult r = Replay(jobs, o);
  EXPECT_EQ(r.preemptions, 1);
  EXPECT_EQ(Rec(r, 5).start_s, 10);
  for (const QueueJobRecord& j : r.jobs) {
    EXPECT_EQ(j.nodes, 1) << j.id;
    EXPECT_EQ(j.switches, 1) << j.id;
  }
  EXPECT_EQ(r.locality_leaf, 0);
  EXPECT_EQ(r.locality_node, 0);
}

}  // namespace
}  // namespace tidal::sim

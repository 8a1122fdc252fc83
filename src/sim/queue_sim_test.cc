// The queue experiment: hand-computed FIFO and EASY-backfill timelines, the
// metrics on them, stranded capacity, unresolvable jobs, determinism and a
// replay of the start of the real Philly trace.
#include "sim/queue_sim.h"

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "sim/metrics.h"
#include "sim/tenant_metrics.h"
#include "workload/traces/philly.h"

namespace tidal::sim {
namespace {

Job MakeJob(JobId id, int64_t submit, int32_t gpus, int64_t duration, int32_t milli = kMilliPerGpu,
            bool single_node = true) {
  Job j;
  j.id = id;
  j.name = fmt::format("j{}", id);
  j.source = fmt::format("test:{}", id);
  j.cpu_milli = 1000;
  j.memory_mib = 1024;
  j.num_gpu = gpus;
  j.gpu_milli = milli;
  j.single_node = single_node;
  j.submit_time_s = submit;
  j.duration_s = duration;
  return j;
}

std::vector<NodeSpec> OneNode(int32_t gpus) { return {{"n0", 64000, 262144, gpus, "A"}}; }

QueueSimResult Replay(const std::vector<NodeSpec>& nodes, const std::vector<Job>& jobs, QueuePolicy queue,
                   const std::string& policy = "bestfit", uint64_t seed = 42) {
  QueueSimOptions o;
  o.policy = policy;
  o.queue = queue;
  o.seed = seed;
  auto r = RunQueueSim(nodes, jobs, o);
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().ToString());
  return r ? std::move(*r) : QueueSimResult{};
}

const QueueJobRecord& Rec(const QueueSimResult& r, JobId id) {
  for (const auto& j : r.jobs)
    if (j.id == id) return j;
  ADD_FAILURE() << "no job " << id;
  return r.jobs.front();
}

// One node with 4 GPUs.
//   j0 t=0 2 GPUs 10 s    runs [0,10)
//   j1 t=1 4 GPUs  5 s    the head: reservation at 10 (when j0 ends)
//   j2 t=2 1 GPU   5 s    ends at 7 <= 10: backfill starts it at 2; FIFO waits
//   j3 t=3 1 GPU  20 s    would hold a GPU the head needs at 10: never backfilled
std::vector<Job> Scenario1() {
  return {MakeJob(0, 0, 2, 10), MakeJob(1, 1, 4, 5), MakeJob(2, 2, 1, 5), MakeJob(3, 3, 1, 20)};
}

TEST(QueueSim, FifoKeepsArrivalOrder) {
  const QueueSimResult r = Replay(OneNode(4), Scenario1(), QueuePolicy::kFifo);
  ASSERT_EQ(r.jobs_finished, 4);
  EXPECT_EQ(Rec(r, 0).start_s, 0);
  EXPECT_EQ(Rec(r, 1).start_s, 10);
  EXPECT_EQ(Rec(r, 2).start_s, 15);  // blocked behind the head although it fit at t=2
  EXPECT_EQ(Rec(r, 3).start_s, 15);
  EXPECT_EQ(r.backfilled, 0);
  // delays 0, 9, 13, 12; JCT 10, 14, 18, 32
  EXPECT_DOUBLE_EQ(r.queue_delay_s.mean, 34.0 / 4);
  EXPECT_DOUBLE_EQ(r.queue_delay_s.p50, 10.5);
  EXPECT_DOUBLE_EQ(r.jct_s.mean, 74.0 / 4);
  EXPECT_EQ(r.makespan_s, 35);
}

TEST(QueueSim, BackfillStartsShortJobWithoutDelayingTheHead) {
  const QueueSimResult r = Replay(OneNode(4), Scenario1(), QueuePolicy::kFifoBackfill);
  ASSERT_EQ(r.jobs_finished, 4);
  EXPECT_EQ(Rec(r, 0).start_s, 0);
  EXPECT_EQ(Rec(r, 1).start_s, 10);  // exactly its reservation, as under FIFO
  EXPECT_EQ(Rec(r, 2).start_s, 2);   // backfilled
  EXPECT_EQ(Rec(r, 2).finish_s, 7);
  EXPECT_EQ(Rec(r, 3).start_s, 15);  // fit at t=3 but would have delayed the head
  EXPECT_EQ(r.backfilled, 1);
  // delays 0, 9, 0, 12; JCT 10, 14, 5, 32
  EXPECT_DOUBLE_EQ(r.queue_delay_s.mean, 21.0 / 4);
  EXPECT_DOUBLE_EQ(r.queue_delay_s.p50, 4.5);
  EXPECT_DOUBLE_EQ(r.jct_s.mean, 61.0 / 4);
  EXPECT_DOUBLE_EQ(r.jct_s.p50, 12.0);
  // Allocated GPUs: [0,2) 2, [2,7) 3, [7,10) 2, [10,15) 4, [15,35) 1
  // = 65 GPU-s over 4 GPUs x 35 s.
  EXPECT_DOUBLE_EQ(r.allocation_rate, 65.0 / 140.0);
  // Someone waits during [1,15). Stranded: [1,2) 2 GPUs idle that only the
  // 4-GPU head wants; [2,3) 1 GPU; from t=3 the idle GPU fits waiting j3.
  EXPECT_DOUBLE_EQ(r.stranded_gpu_share, 3.0 / (4.0 * 14.0));
  // Idle while someone waits: [1,2) 2, [2,3) 1, [3,7) 1, [7,10) 2, [10,15) 0.
  EXPECT_DOUBLE_EQ(r.idle_gpu_share_while_waiting, 13.0 / (4.0 * 14.0));
  EXPECT_DOUBLE_EQ(r.waiting_time_share, 14.0 / 35.0);
}

// One node with 8 GPUs: the head (6 GPUs) has 2 GPUs to spare at its
// reservation, so two long 1-GPU jobs may run past it; a third may not.
TEST(QueueSim, BackfillUsesOnlyTheCapacityTheHeadLeavesSpare) {
  const std::vector<Job> jobs = {MakeJob(0, 0, 4, 10), MakeJob(1, 1, 6, 5), MakeJob(2, 2, 1, 100),
                                 MakeJob(3, 3, 1, 100), MakeJob(4, 4, 1, 100)};
  const QueueSimResult b = Replay(OneNode(8), jobs, QueuePolicy::kFifoBackfill);
  EXPECT_EQ(Rec(b, 1).start_s, 10);
  EXPECT_EQ(Rec(b, 2).start_s, 2);
  EXPECT_EQ(Rec(b, 3).start_s, 3);
  EXPECT_EQ(Rec(b, 4).start_s, 15);
  const QueueSimResult f = Replay(OneNode(8), jobs, QueuePolicy::kFifo);
  EXPECT_EQ(Rec(f, 1).start_s, 10);
  EXPECT_EQ(Rec(f, 2).start_s, 10);  // 6 + 1 + 1 fit at 10 once j0 left
  EXPECT_EQ(Rec(f, 3).start_s, 10);
  EXPECT_EQ(Rec(f, 4).start_s, 15);
}

// Gangs (multi-node, whole GPUs) on two 4-GPU nodes: the 8-GPU head needs
// both nodes; its reservation is when the last running job ends.
TEST(QueueSim, GangHeadReservationAcrossNodes) {
  const std::vector<NodeSpec> nodes = {{"a", 64000, 262144, 4, "A"}, {"b", 64000, 262144, 4, "A"}};
  const std::vector<Job> jobs = {MakeJob(0, 0, 2, 10, 1000, false), MakeJob(1, 0, 2, 20, 1000, false),
                                 MakeJob(2, 1, 8, 5, 1000, false), MakeJob(3, 2, 4, 18, 1000, false),
                                 MakeJob(4, 2, 2, 30, 1000, false)};
  const QueueSimResult r = Replay(nodes, jobs, QueuePolicy::kFifoBackfill);
  EXPECT_EQ(Rec(r, 2).start_s, 20);  // reservation: j1 ends at 20
  EXPECT_EQ(Rec(r, 3).start_s, 2);   // ends at 20 <= 20: backfilled
  EXPECT_EQ(Rec(r, 4).start_s, 25);  // would run past 20: waits for the head
  const QueueSimResult f = Replay(nodes, jobs, QueuePolicy::kFifo);
  EXPECT_EQ(Rec(f, 2).start_s, 20);
  EXPECT_EQ(Rec(f, 3).start_s, 25);
  EXPECT_EQ(Rec(f, 4).start_s, 25);
}

// Two 4-GPU nodes each left with one free GPU: a 2-GPU gang may span them,
// unless gangs that fit one node must run on one node.
TEST(QueueSim, SingleNodeIfFitsKeepsSmallGangsOnOneNode) {
  const std::vector<NodeSpec> nodes = {{"a", 64000, 262144, 4, "A"}, {"b", 64000, 262144, 4, "A"}};
  const std::vector<Job> jobs = {MakeJob(0, 0, 3, 10, 1000, false), MakeJob(1, 0, 3, 10, 1000, false),
                                 MakeJob(2, 1, 2, 5, 1000, false), MakeJob(3, 1, 6, 5, 1000, false)};
  QueueSimOptions o;
  o.queue = QueuePolicy::kFifo;
  auto spread = RunQueueSim(nodes, jobs, o);
  ASSERT_TRUE(spread.has_value());
  EXPECT_EQ(Rec(*spread, 2).start_s, 1);
  EXPECT_EQ(Rec(*spread, 3).start_s, 10);
  o.single_node_if_fits = true;
  auto local = RunQueueSim(nodes, jobs, o);
  ASSERT_TRUE(local.has_value());
  EXPECT_EQ(Rec(*local, 2).start_s, 10);  // waits for a node with 2 free GPUs
  EXPECT_EQ(Rec(*local, 3).start_s, 10);  // 6 > 4 GPUs: still a gang spanning both nodes
  EXPECT_EQ(QueueSimJson(*local)["single_node_if_fits"], true);
}

TEST(QueueSim, EqualTimesFinishBeforeArrivalsAndZeroDurationJobs) {
  // j1 arrives exactly when j0 ends: the finish is processed first, so j1
  // starts at once. j2 runs for 0 s.
  const std::vector<Job> jobs = {MakeJob(0, 0, 4, 10), MakeJob(1, 10, 4, 3), MakeJob(2, 13, 4, 0),
                                 MakeJob(3, 13, 4, 1)};
  const QueueSimResult r = Replay(OneNode(4), jobs, QueuePolicy::kFifo);
  EXPECT_EQ(Rec(r, 1).start_s, 10);
  EXPECT_EQ(Rec(r, 2).start_s, 13);
  EXPECT_EQ(Rec(r, 2).finish_s, 13);
  EXPECT_EQ(Rec(r, 3).start_s, 13);
  EXPECT_EQ(r.queue_delay_s.mean, 0);
}

// The run's shares at their smallest spans (found by mutation testing, seed
// 2). One 4-GPU node: j0 (3 GPUs, 1 s) and j1 (2 GPUs, 5 s) at 0: j1 waits
// exactly [0, 1), with 1 GPU idle and stranded (j1 needs 2): both shares 1/4
// of that second; someone waits 1 s of the 6. A run whose only job takes 0 s
// has a makespan of 0 and its shares stay 0 (not 0/0).
TEST(QueueSim, SharesOverOneSecondOfWaitingAndOverNoTime) {
  const QueueSimResult r = Replay(OneNode(4), {MakeJob(0, 0, 3, 1), MakeJob(1, 0, 2, 5)}, QueuePolicy::kFifo);
  EXPECT_EQ(Rec(r, 1).start_s, 1);
  EXPECT_EQ(r.makespan_s, 6);
  EXPECT_DOUBLE_EQ(r.idle_gpu_share_while_waiting, 0.25);
  EXPECT_DOUBLE_EQ(r.stranded_gpu_share, 0.25);
  EXPECT_DOUBLE_EQ(r.waiting_time_share, 1.0 / 6);
  const QueueSimResult z = Replay(OneNode(4), {MakeJob(0, 0, 4, 0)}, QueuePolicy::kFifo);
  EXPECT_EQ(z.makespan_s, 0);
  EXPECT_EQ(z.allocation_rate, 0);
  EXPECT_EQ(z.waiting_time_share, 0);
}

TEST(QueueSim, UnresolvableJobsAreReportedAndExcluded) {
  std::vector<Job> jobs = {MakeJob(0, 0, 2, 10), MakeJob(1, 1, 8, 5),  // 8 GPUs on one 4-GPU node
                           MakeJob(2, 2, 16, 5, 1000, false),           // gang larger than the cluster
                           MakeJob(3, 3, 1, 5)};
  jobs[3].gpu_spec = {"H100"};  // no such model here
  const QueueSimResult r = Replay(OneNode(4), jobs, QueuePolicy::kFifoBackfill);
  EXPECT_EQ(r.jobs_total, 4);
  EXPECT_EQ(r.jobs_finished, 1);
  EXPECT_EQ(r.jobs_unresolvable, 3);
  for (JobId id : {1, 2, 3}) {
    EXPECT_EQ(Rec(r, id).outcome, JobOutcome::kUnresolvable);
    EXPECT_FALSE(Rec(r, id).reason.empty());
  }
  EXPECT_NE(Rec(r, 3).reason.find("H100"), std::string::npos);
  EXPECT_EQ(r.queue_delay_s.count, 1);
  const auto json = QueueSimJson(r);
  EXPECT_EQ(json["jobs_unresolvable"], 3);
  EXPECT_EQ(json["jobs_finished"], 1);
}

TEST(QueueSim, FgdWithOnlyUnresolvableJobsReportsThem) {
  std::vector<Job> jobs = {MakeJob(0, 0, 1, 10)};
  jobs[0].gpu_spec = {"H100"};
  const QueueSimResult r = Replay(OneNode(4), jobs, QueuePolicy::kFifoBackfill, "fgd");
  EXPECT_EQ(r.jobs_unresolvable, 1);
  EXPECT_EQ(r.jobs_finished, 0);
}

TEST(QueueSim, JobsWithoutTimesAreAClearError) {
  std::vector<Job> jobs = {MakeJob(0, 0, 1, 10)};
  jobs[0].submit_time_s.reset();
  jobs[0].source = "pods.csv:2";
  auto r = RunQueueSim(OneNode(4), jobs, {});
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("pods.csv:2"), std::string::npos);
  EXPECT_NE(r.error().message.find("time-stamped"), std::string::npos);
}

// The JSON carries the run's figures, not just their names: Scenario1 under
// backfill has delays 0, 9, 0, 12 (sorted 0 0 9 12) and JCTs 10, 14, 5, 32
// (sorted 5 10 14 32), worked out in BackfillStartsShortJobWithoutDelayingTheHead.
TEST(QueueSim, JsonCarriesTheStartEstimateErrorFromOneSample) {
  QueueSimResult r;
  EXPECT_TRUE(QueueSimJson(r)["start_estimate_error_s"].is_null());
  r.start_estimate_error.sampled = 1;
  r.start_estimate_error.samples = 1;
  r.start_estimate_error.p50 = 30;
  const auto j = QueueSimJson(r);
  ASSERT_TRUE(j["start_estimate_error_s"].is_object());
  EXPECT_DOUBLE_EQ(j["start_estimate_error_s"]["p50"].get<double>(), 30);
  EXPECT_EQ(j["start_estimate_error_s"]["sampled"].get<int64_t>(), 1);
}

TEST(QueueSim, JsonCarriesTheRunsFigures) {
  const QueueSimResult r = Replay(OneNode(4), Scenario1(), QueuePolicy::kFifoBackfill);
  const auto j = QueueSimJson(r);
  EXPECT_DOUBLE_EQ(j["queue_delay_s"]["mean"].get<double>(), 21.0 / 4);
  EXPECT_DOUBLE_EQ(j["queue_delay_s"]["p50"].get<double>(), 4.5);
  EXPECT_NEAR(j["queue_delay_s"]["p95"].get<double>(), 9 + 0.85 * 3, 1e-9);
  EXPECT_NEAR(j["queue_delay_s"]["p99"].get<double>(), 9 + 0.97 * 3, 1e-9);
  EXPECT_DOUBLE_EQ(j["jct_s"]["mean"].get<double>(), 61.0 / 4);
  EXPECT_DOUBLE_EQ(j["jct_s"]["p50"].get<double>(), 12.0);
  EXPECT_NEAR(j["jct_s"]["p95"].get<double>(), 14 + 0.85 * 18, 1e-9);
  EXPECT_NEAR(j["jct_s"]["p99"].get<double>(), 14 + 0.97 * 18, 1e-9);
  EXPECT_DOUBLE_EQ(j["allocation_rate"].get<double>(), 65.0 / 140.0);
  EXPECT_DOUBLE_EQ(j["stranded_gpu_share"].get<double>(), 3.0 / (4.0 * 14.0));
  EXPECT_EQ(j["jobs_finished"].get<int64_t>(), 4);
  EXPECT_EQ(j["jobs_backfilled"].get<int64_t>(), 1);
  EXPECT_EQ(j["makespan_s"].get<int64_t>(), 35);
}

// --- properties on random workloads ---------------------------------------

// Small clusters and workloads mixing gangs (whole GPUs, may span nodes),
// single-node whole-GPU jobs and GPU-sharing jobs; some can never fit.
struct RandomCase {
  std::vector<NodeSpec> nodes;
  std::vector<Job> jobs;
};

RandomCase GenCase() {
  RandomCase c;
  const int nodes = *rc::gen::inRange(1, 4);
  for (int i = 0; i < nodes; ++i) {
    const int32_t gpus = *rc::gen::element(1, 2, 4, 8);
    c.nodes.push_back({fmt::format("n{}", i), 8000, 65536, gpus, i % 2 ? "B" : "A"});
  }
  const int jobs = *rc::gen::inRange(1, 40);
  for (int i = 0; i < jobs; ++i) {
    const int64_t submit = *rc::gen::inRange(0, 60);
    const int64_t duration = *rc::gen::inRange(0, 50);
    Job j;
    switch (*rc::gen::inRange(0, 3)) {
      case 0:  // gang
        j = MakeJob(i, submit, *rc::gen::inRange(1, 12), duration, kMilliPerGpu, false);
        j.cpu_milli = 0;  // GangPack splits CPU by GPUs; keep gangs GPU-only
        j.memory_mib = 0;
        break;
      case 1:  // single node, whole GPUs
        j = MakeJob(i, submit, *rc::gen::inRange(1, 5), duration);
        j.cpu_milli = *rc::gen::inRange(0, 4001);
        break;
      default:  // shares one GPU
        j = MakeJob(i, submit, 1, duration, *rc::gen::inRange(50, 1000));
        if (*rc::gen::arbitrary<bool>()) j.gpu_spec = {"A"};
        break;
    }
    c.jobs.push_back(std::move(j));
  }
  return c;
}

RC_GTEST_PROP(QueueSimProperty, EveryJobFinishesOrIsReportedAndFifoKeepsOrder, ()) {
  const RandomCase c = GenCase();
  QueueSimOptions o;
  o.queue = QueuePolicy::kFifo;
  auto r = RunQueueSim(c.nodes, c.jobs, o);
  RC_ASSERT(r.has_value());
  RC_ASSERT(r->jobs_finished + r->jobs_unresolvable == static_cast<int64_t>(c.jobs.size()));
  int64_t last_start = 0;
  for (const auto& j : r->jobs) {  // arrival order
    if (j.outcome != JobOutcome::kFinished) continue;
    RC_ASSERT(j.start_s >= j.submit_s);
    RC_ASSERT(j.start_s >= last_start);  // nobody overtakes under FIFO
    last_start = j.start_s;
  }
}

RC_GTEST_PROP(QueueSimProperty, BackfillNeverDelaysTheHeadPastItsReservation, ()) {
  const RandomCase c = GenCase();
  const std::string policy = *rc::gen::element<std::string>("random", "bestfit", "gpupacking", "fgd");
  QueueSimOptions o;
  o.queue = QueuePolicy::kFifoBackfill;
  o.policy = policy;
  o.seed = *rc::gen::inRange<uint64_t>(0, 1000);
  auto r = RunQueueSim(c.nodes, c.jobs, o);
  RC_ASSERT(r.has_value());
  RC_ASSERT(r->jobs_finished + r->jobs_unresolvable == static_cast<int64_t>(c.jobs.size()));
  bool reserved = false, backfilled = r->backfilled > 0;
  for (const auto& j : r->jobs) reserved |= j.reserved_s >= 0;
  RC_CLASSIFY(reserved, "a head got a reservation");
  RC_CLASSIFY(backfilled, "some job was backfilled");
  for (const auto& j : r->jobs) {
    if (j.outcome != JobOutcome::kFinished) continue;
    RC_ASSERT(j.start_s >= j.submit_s);
    RC_ASSERT(j.finish_s == j.start_s + *c.jobs[static_cast<size_t>(j.id)].duration_s);
    if (j.reserved_s >= 0) RC_ASSERT(j.start_s <= j.reserved_s);
  }
  // Same seed, same result.
  auto again = RunQueueSim(c.nodes, c.jobs, o);
  RC_ASSERT(again.has_value());
  RC_ASSERT(QueueSimJson(*r).dump() == QueueSimJson(*again).dump());
}

// --- stranded capacity -------------------------------------------------

std::map<JobShape, WaitingShape> Shapes(const ClusterState& c, const std::vector<Job>& jobs) {
  std::map<JobShape, WaitingShape> m;
  for (const Job& j : jobs) {
    auto pod = ResolveRequest(j, c.models());
    EXPECT_TRUE(pod.has_value());
    auto& w = m.try_emplace(JobShape::Of(*pod), WaitingShape{*pod, 0}).first->second;
    ++w.count;
  }
  return m;
}

TEST(StrandedTracker, IdleCapacityNoWaitingShapeCanUse) {
  auto c = ClusterState::Build({{"a", 64000, 262144, 2, "A"}, {"b", 64000, 262144, 1, "B"}});
  ASSERT_TRUE(c.has_value());
  // Device a/0 keeps 300 milli free, a/1 and b/0 are fully free.
  Placement p;
  p.assignments.push_back({0, 1000, 1024, {0}, {700}});
  ASSERT_TRUE(c->Bind(99, p).has_value());

  std::vector<Job> waiting = {MakeJob(1, 0, 1, 10, 500)};
  waiting[0].gpu_spec = {"A"};
  {
    StrandedTracker t;
    const auto shapes = Shapes(*c, waiting);
    // a/0's 300 < 500 and b is of the wrong model.
    EXPECT_EQ(t.Compute(*c, shapes, 1), 300 + 1000);
  }
  waiting.push_back(MakeJob(2, 0, 1, 10, 200));
  {
    StrandedTracker t;
    EXPECT_EQ(t.Compute(*c, Shapes(*c, waiting), 2), 0);
  }
  // A gang of 3 whole GPUs cannot be placed (2 whole GPUs free): all idle
  // capacity is stranded. A gang of 2 can use both whole GPUs.
  {
    // The shapes point at their jobs: keep the jobs alive while in use.
    const std::vector<Job> gang3 = {MakeJob(3, 0, 3, 10, 1000, false)};
    const std::vector<Job> gang2 = {MakeJob(4, 0, 2, 10, 1000, false)};
    StrandedTracker t;
    EXPECT_EQ(t.Compute(*c, Shapes(*c, gang3), 3), 2300);
    EXPECT_EQ(t.Compute(*c, Shapes(*c, gang2), 4), 300);
  }
  // Incremental: after a change on one node only that node is recomputed,
  // and the answer equals a fresh computation.
  StrandedTracker t;
  const std::vector<Job> share = {MakeJob(1, 0, 1, 10, 500)};
  const auto shapes = Shapes(*c, share);
  EXPECT_EQ(t.Compute(*c, shapes, 7), 300);
  Placement q;
  q.assignments.push_back({1, 1000, 1024, {0}, {600}});
  ASSERT_TRUE(c->Bind(100, q).has_value());
  StrandedTracker fresh;
  EXPECT_EQ(t.Compute(*c, shapes, 7), fresh.Compute(*c, shapes, 7));
  EXPECT_EQ(t.Compute(*c, shapes, 7), 300 + 400);
}

// Data whose mean (26.75), median (3) and middle values (2, 4) all differ,
// so a percentile that took the mean, a middle value or the wrong rank fails.
TEST(Metrics, PercentilesInterpolateLinearly) {
  const Summary s = Summarize({100, 1, 4, 2});  // sorted 1 2 4 100
  EXPECT_EQ(s.count, 4);
  EXPECT_DOUBLE_EQ(s.mean, 107.0 / 4);
  EXPECT_DOUBLE_EQ(s.p50, 3.0);                  // rank 1.5: 2 + 0.5 x (4 - 2)
  EXPECT_NEAR(s.p95, 4 + 0.85 * 96, 1e-9);       // rank 2.85
  EXPECT_NEAR(s.p99, 4 + 0.97 * 96, 1e-9);       // rank 2.97
  const std::vector<int64_t> sorted = {1, 2, 4, 100};
  EXPECT_DOUBLE_EQ(Percentile(sorted, 0), 1);
  EXPECT_DOUBLE_EQ(Percentile(sorted, 100), 100);
  EXPECT_DOUBLE_EQ(Percentile(sorted, 25), 1.75);  // rank 0.75
  EXPECT_DOUBLE_EQ(Percentile({}, 50), 0);
  // Odd count: the middle value itself (mean 22.4).
  const Summary odd = Summarize({100, 3, 1, 7, 1});
  EXPECT_DOUBLE_EQ(odd.p50, 3);
  EXPECT_DOUBLE_EQ(odd.mean, 22.4);
  EXPECT_EQ(Summarize({}).count, 0);
  EXPECT_DOUBLE_EQ(Summarize({7}).p99, 7);
  EXPECT_DOUBLE_EQ(Summarize({7}).p50, 7);
}

// --- the real Philly trace --------------------------------------------

struct Philly {
  std::vector<NodeSpec> nodes;
  std::vector<Job> jobs;
};

std::optional<Philly> LoadPhilly() {
  const std::string dir = std::string(TIDAL_SHARED_DIR) + "/traces/philly";
  if (!std::filesystem::exists(dir + "/pollux_philly_jobs.csv")) return std::nullopt;
  auto nodes = traces::ReadPhillyMachines(dir + "/machine_list/cluster_machine_list.csv");
  auto jobs = traces::ReadPhillyJobs(dir + "/pollux_philly_jobs.csv");
  EXPECT_TRUE(nodes.has_value() && jobs.has_value());
  if (!nodes || !jobs) return std::nullopt;
  return Philly{std::move(*nodes), std::move(jobs->jobs)};
}

TEST(QueueSimPhilly, First3000JobsOnASmallerCluster) {
  auto philly = LoadPhilly();
  if (!philly) GTEST_SKIP() << "shared Philly trace not present";
  // The full 2,490-GPU cluster never queues this trace; 16 8-GPU machines
  // (128 GPUs) make the first 3,000 jobs queue.
  std::vector<NodeSpec> nodes;
  for (const auto& n : philly->nodes)
    if (n.gpu_count == 8 && nodes.size() < 16) nodes.push_back(n);
  QueueSimOptions o;
  o.limit = 3000;
  int calls = 0;
  o.progress = [&](const QueueProgress&) { ++calls; };
  o.queue = QueuePolicy::kFifo;
  auto fifo = RunQueueSim(nodes, philly->jobs, o);
  o.queue = QueuePolicy::kFifoBackfill;
  auto bf = RunQueueSim(nodes, philly->jobs, o);
  ASSERT_TRUE(fifo.has_value()) << fifo.error().ToString();
  ASSERT_TRUE(bf.has_value()) << bf.error().ToString();
  EXPECT_GT(calls, 10);
  for (const QueueSimResult* r : {&*fifo, &*bf}) {
    EXPECT_EQ(r->jobs_total, 3000);
    EXPECT_EQ(r->jobs_finished + r->jobs_unresolvable, 3000);
    EXPECT_GT(r->queue_delay_s.mean, 0);
    EXPECT_GT(r->allocation_rate, 0);
    EXPECT_LE(r->allocation_rate, 1);
    EXPECT_GE(r->stranded_gpu_share, 0);
    EXPECT_LE(r->stranded_gpu_share, 1);
    int64_t prev_submit = 0;
    for (const auto& j : r->jobs) {
      EXPECT_GE(j.submit_s, prev_submit);  // arrival order
      prev_submit = j.submit_s;
      if (j.outcome != JobOutcome::kFinished) continue;
      EXPECT_GE(j.start_s, j.submit_s);
      EXPECT_GT(j.finish_s, j.start_s - 1);
    }
  }
  EXPECT_EQ(fifo->backfilled, 0);
  EXPECT_GT(bf->backfilled, 0);
  EXPECT_LT(bf->queue_delay_s.mean, fifo->queue_delay_s.mean);
}

TEST(QueueSimPhilly, First3000JobsNeverQueueOnTheFullMachineList) {
  auto philly = LoadPhilly();
  if (!philly) GTEST_SKIP() << "shared Philly trace not present";
  QueueSimOptions o;
  o.limit = 3000;
  auto r = RunQueueSim(philly->nodes, philly->jobs, o);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->total_gpus, 2490);
  EXPECT_EQ(r->jobs_finished, 3000);
  EXPECT_EQ(r->jobs_unresolvable, 0);
  // 2,490 GPUs are far more than this job list keeps busy (docs/queue.md).
  EXPECT_EQ(r->queue_delay_s.p99, 0);
  EXPECT_EQ(r->max_waiting, 0);
  EXPECT_EQ(r->stranded_gpu_share, 0);
  EXPECT_GT(r->allocation_rate, 0);
}

TEST(QueueSimPhilly, SameSeedSameJson) {
  auto philly = LoadPhilly();
  if (!philly) GTEST_SKIP() << "shared Philly trace not present";
  std::vector<NodeSpec> nodes;
  for (const auto& n : philly->nodes)
    if (nodes.size() < 60) nodes.push_back(n);
  // 60 nodes: 2-GPU machines only, so gangs of more than 120 GPUs are unresolvable.
  QueueSimOptions o;
  o.policy = "random";
  o.limit = 2000;
  o.seed = 7;
  auto a = RunQueueSim(nodes, philly->jobs, o);
  auto b = RunQueueSim(nodes, philly->jobs, o);
  ASSERT_TRUE(a.has_value() && b.has_value());
  EXPECT_EQ(QueueSimJson(*a).dump(), QueueSimJson(*b).dump());
  for (size_t i = 0; i < a->jobs.size(); ++i) ASSERT_EQ(a->jobs[i].start_s, b->jobs[i].start_s) << i;
}

TEST(QueueSimPhilly, EveryPlacerReplays) {
  auto philly = LoadPhilly();
  if (!philly) GTEST_SKIP() << "shared Philly trace not present";
  std::vector<NodeSpec> nodes;
  for (const auto& n : philly->nodes)
    if (n.gpu_count == 8 && nodes.size() < 16) nodes.push_back(n);
  for (const char* policy : {"random", "dotprod", "gpuclustering", "gpupacking", "bestfit", "fgd"}) {
    QueueSimOptions o;
    o.policy = policy;
    o.limit = 500;
    auto r = RunQueueSim(nodes, philly->jobs, o);
    ASSERT_TRUE(r.has_value()) << policy << ": " << r.error().ToString();
    EXPECT_EQ(r->jobs_finished + r->jobs_unresolvable, 500) << policy;
  }
}

}  // namespace
}  // namespace tidal::sim

namespace tidal::sim {
namespace {

// Backfill plans with the estimate, the job runs its real time. In
// Scenario1 j2 (5 s) is backfilled at 2 because it ends by the head's
// reservation at 10; told it runs 20 s it would not, so it waits behind the
// head, which takes all 4 GPUs for [10, 15): j2 starts at 15.
TEST(QueueSimEstimates, AnOverestimateKeepsAJobFromBackfilling) {
  std::vector<Job> jobs = Scenario1();
  EXPECT_EQ(Rec(Replay(OneNode(4), jobs, QueuePolicy::kFifoBackfill), 2).start_s, 2);
  jobs[2].estimate_s = 20;
  const QueueSimResult r = Replay(OneNode(4), jobs, QueuePolicy::kFifoBackfill);
  EXPECT_EQ(Rec(r, 1).start_s, 10);
  EXPECT_EQ(Rec(r, 2).start_s, 15);
  EXPECT_EQ(Rec(r, 2).finish_s, 20);  // it still runs its real 5 s
}

TEST(QueueSimEstimates, FModelIsSeededAndNeverUnderestimates) {
  std::vector<Job> jobs;
  for (int i = 0; i < 40; ++i) jobs.push_back(MakeJob(i, i * 3, 1 + i % 4, 10 + 7 * i));
  QueueSimOptions o;
  o.queue = QueuePolicy::kFifoBackfill;
  o.estimate = "f-model:10";
  auto a = RunQueueSim(OneNode(4), jobs, o);
  auto b = RunQueueSim(OneNode(4), jobs, o);
  ASSERT_TRUE(a.has_value()) << a.error().ToString();
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(QueueSimJson(*a).dump(), QueueSimJson(*b).dump());
  EXPECT_EQ(QueueSimJson(*a)["estimate"], "f-model:10");
  EXPECT_EQ(a->jobs_finished, 40);
  // Every job ran its real time (estimates only plan).
  for (const auto& rec : a->jobs) EXPECT_EQ(rec.finish_s - rec.start_s, 10 + 7 * rec.id);
  for (const char* bad : {"f-model:0.5", "f-model:", "guess", "f-model:x"}) {
    o.estimate = bad;
    auto r = RunQueueSim(OneNode(4), jobs, o);
    ASSERT_FALSE(r.has_value()) << bad;
    EXPECT_NE(r.error().message.find("f-model:F"), std::string::npos) << r.error().message;
  }
}

// --- Found by mutation testing (issue 11) ----------------------------------

// The f-model's estimates lie in [d, F x d]: with F 2 a 100 s job is
// estimated 100..200 s, which a blocked head's reservation shows (seed 2: a
// factor drawn from [1, 1 + F) went past F x d). One 4-GPU node: j0 (4
// GPUs, 100 s) at 0, j1 (4 GPUs) at 1 is reserved at j0's estimated end,
// for every seed.
TEST(QueueSimEstimates, FModelEstimatesStayWithinTheFactor) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    SCOPED_TRACE(seed);
    QueueSimOptions o;
    o.queue = QueuePolicy::kFifoBackfill;
    o.estimate = "f-model:2";
    o.seed = seed;
    auto r = RunQueueSim(OneNode(4), {MakeJob(0, 0, 4, 100), MakeJob(1, 1, 4, 10), MakeJob(2, 2, 4, 10)}, o);
    ASSERT_TRUE(r.has_value()) << r.error().ToString();
    const int64_t reserved = Rec(*r, 1).reserved_s;
    EXPECT_GE(reserved, 100);
    EXPECT_LE(reserved, 200);
  }
}

// A reservation at time 0 is one (times may be negative): jobs.csv writes
// it, not an empty field (seed 2: `>= 0` -> `> 0`). j0 (4 GPUs) runs
// [-10, 0); j1, blocked from -5, is reserved at 0.
TEST(QueueSim, AReservationAtTimeZeroIsWritten) {
  const QueueSimResult r = Replay(OneNode(4), {MakeJob(0, -10, 4, 10), MakeJob(1, -5, 4, 5), MakeJob(2, -4, 4, 5)},
                                  QueuePolicy::kFifoBackfill);
  ASSERT_EQ(Rec(r, 1).reserved_s, 0);
  const std::string dir = (std::filesystem::temp_directory_path() / fmt::format("tidal_qsim_res0_{}", ::getpid())).string();
  ASSERT_TRUE(WriteQueueSimOutputs(r, dir));
  std::ifstream in(dir + "/jobs.csv");
  std::string line, row;
  while (std::getline(in, line))
    if (line.starts_with("1,")) row = line;
  std::filesystem::remove_all(dir);
  EXPECT_TRUE(row.starts_with("1,j1,4,1000,-5,0,5,5,10,0,")) << row;  // ... jct_s, reserved_s, nodes
}

// A node with exactly 1 milli-GPU idle: stranded unless a waiting shape can
// use it (a 500-milli shape cannot).
TEST(StrandedTracker, OneIdleMilliIsStranded) {
  auto c = ClusterState::Build({{"a", 64000, 262144, 1, "A"}});
  ASSERT_TRUE(c.has_value());
  ASSERT_TRUE(c->Bind(99, Placement{{{0, 1000, 1024, {0}, {999}}}}).has_value());
  const std::vector<Job> waiting = {MakeJob(1, 0, 1, 10, 500)};
  StrandedTracker t;
  EXPECT_EQ(t.Compute(*c, Shapes(*c, waiting), 1), 1);
}

// A node with exactly the CPU and memory a waiting shape asks is usable by
// it: its idle half GPU is not stranded.
TEST(StrandedTracker, ANodeWithExactlyTheCpuAndMemoryAskedIsUsable) {
  auto c = ClusterState::Build({{"a", 64000, 262144, 1, "A"}});
  ASSERT_TRUE(c.has_value());
  ASSERT_TRUE(c->Bind(99, Placement{{{0, 63000, 262144 - 1024, {0}, {500}}}}).has_value());
  const std::vector<Job> waiting = {MakeJob(1, 0, 1, 10, 500)};  // 1,000 milli-CPU, 1,024 MiB
  StrandedTracker t;
  EXPECT_EQ(t.Compute(*c, Shapes(*c, waiting), 1), 0);
  std::vector<Job> more = waiting;
  more[0].cpu_milli = 1001;
  StrandedTracker u;
  EXPECT_EQ(u.Compute(*c, Shapes(*c, more), 1), 500);
  more[0].cpu_milli = 1000;
  more[0].memory_mib = 1025;
  StrandedTracker v;
  EXPECT_EQ(v.Compute(*c, Shapes(*c, more), 1), 500);
}

// The whole free GPUs per model that decide whether a waiting gang fits are
// kept from the nodes that changed, with the shapes unchanged: a, b (2 x
// model A each), c (2 x model B). A gang of 3 whole A GPUs waits.
//  - Job 99 holds both of a's GPUs: 2 whole A GPUs free, the gang does not
//    fit, all idle GPUs (b's 2000, c's 2000) are stranded.
//  - 99 leaves: 4 whole A GPUs, the gang fits on a and b; c's stay stranded.
//  - Job 100 takes one of b's: 3 free, it still fits (c stays stranded);
//    job 101 one of a's: 2, it no longer does.
// Each answer equals a fresh tracker's.
TEST(StrandedTracker, AGangFitsAsTheWholeFreeGpusOfItsModelMove) {
  auto c = ClusterState::Build({{"a", 64000, 262144, 2, "A"}, {"b", 64000, 262144, 2, "A"}, {"c", 64000, 262144, 2, "B"}});
  ASSERT_TRUE(c.has_value());
  std::vector<Job> gang = {MakeJob(1, 0, 3, 10, kMilliPerGpu, false)};
  gang[0].gpu_spec = {"A"};
  const auto shapes = Shapes(*c, gang);
  StrandedTracker t;
  auto check = [&](int64_t want) {
    StrandedTracker fresh;
    EXPECT_EQ(fresh.Compute(*c, shapes, 1), want);
    EXPECT_EQ(t.Compute(*c, shapes, 1), want);
  };
  ASSERT_TRUE(c->Bind(99, Placement{{{0, 1000, 1024, {0, 1}, {1000, 1000}}}}).has_value());
  check(4000);
  ASSERT_TRUE(c->Unbind(99).has_value());
  check(2000);
  ASSERT_TRUE(c->Bind(100, Placement{{{1, 1000, 1024, {0}, {1000}}}}).has_value());
  check(2000);
  ASSERT_TRUE(c->Bind(101, Placement{{{0, 1000, 1024, {0}, {1000}}}}).has_value());
  check(4000);
}

// The guarantee tracker by hand: org -> A (floor 8 GPUs), B (floor 8) on 16.
// A runs 16 (8 borrowed from B). B's waiting job is a violation while it
// fits what is left of B's floor and others hold that capacity.
TEST(GuaranteeTracker, ViolationWhileOthersHoldAFloorTheWaitingJobFits) {
  std::vector<tenancy::TenantSpec> specs;
  tenancy::TenantSpec root{.name = "org"};
  root.quotas.push_back({"gpu", tenancy::Quota{.nominal = 16000}});
  specs.push_back(root);
  for (const char* n : {"A", "B"}) {
    tenancy::TenantSpec s{.name = n, .parent = "org"};
    s.quotas.push_back({"gpu", tenancy::Quota{.nominal = 8000}});
    specs.push_back(s);
  }
  auto tree = tenancy::TenantTree::Build(specs);
  ASSERT_TRUE(tree.has_value()) << tree.error().message;
  const tenancy::TenantId b = tree->Find("B");
  auto job = [](const char* tenant, int32_t gpus) {
    Job j = MakeJob(1, 0, gpus, 100);
    j.group = tenant;
    return j;
  };
  GuaranteeTracker g(*tree);
  g.SetTotal(16000);
  const Job a8 = job("A", 8), b4 = job("B", 4), b6 = job("B", 6);
  g.Running(a8, +1);
  g.Running(a8, +1);
  g.Waiting(b4, +1);
  EXPECT_EQ(g.Violating(0), (std::vector<tenancy::TenantId>{b}));
  EXPECT_TRUE(g.Violating(8000).empty());  // B's whole floor is free
  // B runs 4 of its 8: a waiting 6 no longer fits what is left, a 4 does.
  g.Running(b4, +1);
  g.Waiting(b4, -1);
  g.Waiting(b6, +1);
  EXPECT_TRUE(g.Violating(0).empty());
  g.Waiting(b4, +1);
  EXPECT_EQ(g.Violating(0), (std::vector<tenancy::TenantId>{b}));
  // B at its floor: nothing owed.
  g.Running(b4, +1);
  g.Waiting(b4, -1);
  EXPECT_TRUE(g.Violating(0).empty());
}

// Per-tenant wait is the time a finished job was not running: finish -
// submit - run (100 - 0 - 60 = 40 and 50 - 10 - 30 = 10: mean 25).
TEST(QueueSimTenants, WaitMeanIsTimeNotRunning) {
  std::vector<tenancy::TenantSpec> specs;
  tenancy::TenantSpec root{.name = "org"};
  root.quotas.push_back({"gpu", tenancy::Quota{.nominal = 8000}});
  specs.push_back(root);
  tenancy::TenantSpec a{.name = "A", .parent = "org"};
  a.quotas.push_back({"gpu", tenancy::Quota{.nominal = 8000}});
  specs.push_back(a);
  auto tree = tenancy::TenantTree::Build(specs);
  ASSERT_TRUE(tree.has_value()) << tree.error().message;
  std::vector<Job> jobs = {MakeJob(1, 0, 1, 60), MakeJob(2, 10, 1, 30)};
  for (Job& j : jobs) j.group = "A";
  QueueSimResult r;
  r.total_gpus = 8;
  QueueJobRecord x, y;
  x.id = 1, x.num_gpu = 1, x.submit_s = 0, x.start_s = 20, x.finish_s = 100, x.run_s = 60;
  y.id = 2, y.num_gpu = 1, y.submit_s = 10, y.start_s = 20, y.finish_s = 50, y.run_s = 30;
  r.jobs = {x, y};
  SummarizeTenants(*tree, jobs, std::vector<double>(static_cast<size_t>(tree->size()), 0), r);
  ASSERT_EQ(r.per_tenant.size(), 1u);
  EXPECT_EQ(r.per_tenant[0].jobs, 2);
  EXPECT_DOUBLE_EQ(r.per_tenant[0].wait_mean_s, 25);
}

// Progress is reported when jobs have finished since the last report, not
// on every batch: Scenario1's arrivals at 1, 2 and 3 s finish nothing.
// (The run ends with one more report.)
TEST(QueueSim, ProgressIsReportedAsJobsFinish) {
  QueueSimOptions o;
  o.policy = "bestfit";
  o.queue = QueuePolicy::kFifoBackfill;
  std::vector<int64_t> done;
  o.progress = [&](const QueueProgress& p) { done.push_back(p.jobs_done); };
  auto r = RunQueueSim(OneNode(4), Scenario1(), o);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  ASSERT_FALSE(done.empty());
  EXPECT_EQ(done.back(), 4);  // and a last report at the end
  for (size_t i = 1; i + 1 < done.size(); ++i) EXPECT_GT(done[i], done[i - 1]) << i;
}

// A tenant's job that waits from its arrival while others hold its floor is
// a guarantee violation (slurm-multifactor does not reclaim): A's 8-GPU job
// holds the node from 0 to 1000, B's 4-GPU job (floor 4) arrives at 10 and
// waits until 1000.
TEST(QueueSimTenants, WaitingFromArrivalInsideTheFloorIsAViolation) {
  std::vector<tenancy::TenantSpec> specs;
  tenancy::TenantSpec root{.name = "org"};
  root.quotas.push_back({"gpu", tenancy::Quota{.nominal = 8000}});
  specs.push_back(root);
  for (const char* n : {"A", "B"}) {
    tenancy::TenantSpec s{.name = n, .parent = "org"};
    s.quotas.push_back({"gpu", tenancy::Quota{.nominal = 4000}});
    specs.push_back(s);
  }
  auto tree = tenancy::TenantTree::Build(specs);
  ASSERT_TRUE(tree.has_value()) << tree.error().message;
  std::vector<Job> jobs = {MakeJob(1, 0, 4, 1000), MakeJob(2, 0, 4, 1000), MakeJob(3, 10, 4, 100)};
  jobs[0].group = jobs[1].group = "A";
  jobs[2].group = "B";
  QueueSimOptions o;
  o.policy = "bestfit";
  o.queue = QueuePolicy::kSlurmMultifactor;
  o.tenant_tree = std::make_shared<const tenancy::TenantTree>(std::move(*tree));
  auto r = RunQueueSim(OneNode(8), jobs, o);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(Rec(*r, 3).start_s, 1000);
  EXPECT_GE(r->guarantee_violations, 1);
  EXPECT_NEAR(r->guarantee_violation_hours, 990.0 / 3600, 1e-9);
}

// A preempted run gives back only the multi-node time it added (a one-node
// run counted as multi-node there would make the share negative; the
// multi-leaf twin of this mutant, found by mutation testing, seed 2, is
// PlacementSim.APreemptedOneLeafRunLeavesTheMultiLeafShareAtZero).
// org (8) -> A (4), B (4) on one 8-GPU node, tidal: A's a1 (8 GPUs) borrows
// from 0; B's b1 (4) reclaims its floor at 10. No run spans nodes: the
// multi-node share is 0, not negative.
TEST(QueueSimTenants, APreemptedOneNodeRunLeavesTheMultiNodeShareAtZero) {
  std::vector<tenancy::TenantSpec> specs;
  tenancy::TenantSpec root{.name = "org"};
  root.quotas.push_back({"gpu", tenancy::Quota{.nominal = 8000}});
  specs.push_back(root);
  for (const char* n : {"A", "B"}) {
    tenancy::TenantSpec s{.name = n, .parent = "org"};
    s.quotas.push_back({"gpu", tenancy::Quota{.nominal = 4000}});
    specs.push_back(s);
  }
  auto tree = tenancy::TenantTree::Build(specs);
  ASSERT_TRUE(tree.has_value()) << tree.error().message;
  std::vector<Job> jobs = {MakeJob(1, 0, 8, 10000), MakeJob(2, 10, 4, 100)};
  jobs[0].group = "A";
  jobs[1].group = "B";
  QueueSimOptions o;
  o.policy = "bestfit";
  o.queue = QueuePolicy::kTidal;
  o.tenant_tree = std::make_shared<const tenancy::TenantTree>(std::move(*tree));
  auto r = RunQueueSim(OneNode(8), jobs, o);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  ASSERT_EQ(Rec(*r, 1).preemptions, 1);
  EXPECT_EQ(Rec(*r, 2).start_s, 10);
  EXPECT_EQ(r->locality_node, 0);
}

}  // namespace
}  // namespace tidal::sim

// Start-time estimates by forward runs of the queue (sim/start_estimate.h):
// the conditioned run-time draw, a hand-derived estimate, exact estimates
// reproducing the actual start when nothing arrives later (for every queue
// and placer kind, with and without a topology), determinism, and the error
// metric on a hand-made case.
#include "sim/start_estimate.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "sim/metrics.h"
#include "sim/queue_sim.h"
#include "sim/test_fat_tree.h"
#include "topology/readers/tidal_yaml.h"

namespace tidal::sim {
namespace {

Job MakeJob(JobId id, int64_t submit, int32_t gpus, int64_t duration, const std::string& group = "a") {
  Job j;
  j.id = id;
  j.name = fmt::format("j{}", id);
  j.source = fmt::format("test:{}", id);
  j.cpu_milli = 1000;
  j.memory_mib = 1024;
  j.num_gpu = gpus;
  j.gpu_milli = kMilliPerGpu;
  j.single_node = true;
  j.submit_time_s = submit;
  j.duration_s = duration;
  j.group = group;
  return j;
}

std::vector<NodeSpec> OneNode(int32_t gpus) { return {{"n0", 64000, 262144, gpus, "A"}}; }

QueueSimResult Sim(const std::vector<NodeSpec>& nodes, const std::vector<Job>& jobs, const QueueSimOptions& o) {
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

// --- the conditioned draw ----------------------------------------------------

TEST(StartEstimate, RunTimeDrawIsTheFModelConditionedOnWhatIsKnown) {
  // D' = floor(E / u'), u' = 1 + (min(F, E / L) - 1) v.
  struct Row {
    int64_t e;
    double f;
    int64_t at_least;
    double v;
    int64_t want;
  };
  const Row rows[] = {
      {1000, 1, 0, 0.7, 1000},         // F = 1: the estimate is the run time
      {1000, 10, 0, 0.0, 1000},        // u' = 1: the largest run time, E
      {1000, 10, 0, 0.5, 181},         // u' = 5.5: 1000 / 5.5 = 181.8
      {1000, 10, 0, 0.999999, 100},    // u' -> 10: E / F
      {1000, 10, 500, 0.5, 666},       // ran 499 s: u' in [1, 2], u' = 1.5
      {1000, 10, 500, 0.999999, 500},  // u' -> 2: exactly the least it can be
      {1000, 10, 1000, 0.3, 1000},     // ran 999 s: it can only be E
      {1000, 10, 2000, 0.3, 1000},     // past its estimate (not under the f-model): E
      {0, 10, 1, 0.5, 0},              // a zero-length job ends now
      {3600, 2, 100, 0.25, 2880},      // u' = 1.25
      {3600, 1e4, 3000, 0.5, 3272},    // min(F, 1.2) = 1.2: u' = 1.1
  };
  for (const Row& r : rows) {
    EXPECT_EQ(DrawRunTime(r.e, r.f, r.at_least, r.v), r.want) << r.e << " " << r.f << " " << r.at_least << " " << r.v;
  }
  // Always within [L, E] and E is reached at v = 0.
  for (int64_t e : {1, 7, 100, 86400})
    for (int64_t l : {int64_t{0}, int64_t{1}, e / 2, e})
      for (double v : {0.0, 0.1, 0.5, 0.9, 0.9999999}) {
        const int64_t d = DrawRunTime(e, 10, l, v);
        EXPECT_GE(d, l);
        EXPECT_LE(d, e);
      }
  EXPECT_EQ(EstimateFactor("exact").value(), 1);
  EXPECT_EQ(EstimateFactor("f-model:10").value(), 10);
  EXPECT_FALSE(EstimateFactor("f-model:0.5").has_value());
  EXPECT_FALSE(EstimateFactor("guess").has_value());
}

// --- a start derived by hand ---------------------------------------------------

// One node with 4 GPUs, FIFO + EASY backfill, exact estimates:
//   j0 t=0  4 GPUs 100 s   runs [0, 100)
//   j1 t=10 2 GPUs  50 s   the head; starts at 100 when j0 ends, runs to 150
//   j2 t=20 4 GPUs  30 s   the next head: at 100 only 2 GPUs are free, so it
//                          is reserved 150 (j1's end) and starts then, to 180
//   j3 t=30 2 GPUs 200 s   fits at 100 beside j1 but would run past 150 on
//                          GPUs j2 needs: not backfilled; starts at 180
// Asked at t=40, nothing arrives later: j2 starts at 150, j3 at 180.
std::vector<Job> HandCase() {
  return {MakeJob(0, 0, 4, 100), MakeJob(1, 10, 2, 50), MakeJob(2, 20, 4, 30), MakeJob(3, 30, 2, 200)};
}

TEST(StartEstimate, HandDerivedStartsOfABackfillQueue) {
  for (auto [job, want] : {std::pair{2, 150}, std::pair{3, 180}, std::pair{1, 100}}) {
    QueueSimOptions o;
    o.queue = QueuePolicy::kFifoBackfill;
    o.explain_job = job;
    o.explain_at_s = 40;
    const QueueSimResult r = Sim(OneNode(4), HandCase(), o);
    EXPECT_EQ(r.explain.state, "waiting");
    EXPECT_EQ(r.explain.start_samples, 1);  // exact: one forward run is the distribution
    EXPECT_EQ(r.explain.start_p50_s, want) << job;
    EXPECT_EQ(r.explain.start_p90_s, want) << job;
    EXPECT_EQ(Rec(r, job).start_s, want);
    const auto j = QueueSimJson(r);
    EXPECT_EQ(j["explain"]["start_estimate"]["p50_s"], want);
    EXPECT_EQ(j["explain"]["start_estimate"]["samples"], 1);
  }
  // A running job gets no estimate.
  QueueSimOptions o;
  o.explain_job = 0;
  o.explain_at_s = 40;
  const QueueSimResult r = Sim(OneNode(4), HandCase(), o);
  EXPECT_EQ(r.explain.state, "running");
  EXPECT_EQ(r.explain.start_samples, 0);
  EXPECT_FALSE(QueueSimJson(r)["explain"].contains("start_estimate"));
}

// With the f-model the forward runs redraw j0's true run time: j2 starts
// when j1 ends, 1 + 50 / u s after j0's redrawn end (j1's own run is
// redrawn too), so every sample lies in (40, 100 + 50 + ...]: j0 has run
// 40 s of at most E0 = its estimate, j1 runs at most E1.
TEST(StartEstimate, FModelSamplesStayWithinWhatTheEstimatesAllowAndAreSeeded) {
  QueueSimOptions o;
  o.queue = QueuePolicy::kFifoBackfill;
  o.estimate = "f-model:4";
  o.explain_job = 2;
  o.explain_at_s = 40;
  o.seed = 3;
  const QueueSimResult a = Sim(OneNode(4), HandCase(), o);
  const QueueSimResult b = Sim(OneNode(4), HandCase(), o);
  ASSERT_EQ(a.explain.state, "waiting");
  EXPECT_EQ(a.explain.start_samples, 20);
  EXPECT_GE(a.explain.start_p50_s, 41);
  EXPECT_LE(a.explain.start_p50_s, a.explain.start_p90_s);
  EXPECT_LE(a.explain.start_p90_s, 4 * 100 + 4 * 50);
  // Same seed, same estimate.
  EXPECT_EQ(a.explain.start_p50_s, b.explain.start_p50_s);
  EXPECT_EQ(a.explain.start_p90_s, b.explain.start_p90_s);
  // Fewer samples are a prefix of the same draws: still deterministic.
  o.start_estimate_samples = 5;
  const QueueSimResult c = Sim(OneNode(4), HandCase(), o);
  const QueueSimResult d = Sim(OneNode(4), HandCase(), o);
  EXPECT_EQ(c.explain.start_samples, 5);
  EXPECT_EQ(c.explain.start_p50_s, d.explain.start_p50_s);
  EXPECT_EQ(c.explain.start_p90_s, d.explain.start_p90_s);
}

// --- exact estimates reproduce the replay ----------------------------------

// The forward run is the replay itself when the estimates are exact and
// nothing arrives after the question: for every job still waiting after
// the last arrival, the estimate is its actual start.
void ExpectExactEstimatesAreActualStarts(const std::vector<NodeSpec>& nodes, const std::vector<Job>& jobs,
                                         QueueSimOptions o) {
  auto base = RunQueueSim(nodes, jobs, o);
  if (!base) {
    fmt::print(stderr, "{}\n", base.error().ToString());
    RC_FAIL("the replay failed");
  }
  int64_t last = 0;
  for (const Job& j : jobs) last = std::max(last, *j.submit_time_s);
  const int64_t t0 = base->start_s;
  int checked = 0;
  for (const QueueJobRecord& rec : base->jobs) {
    if (rec.outcome != JobOutcome::kFinished || rec.start_s <= last || checked >= 3) continue;
    ++checked;
    o.explain_job = rec.id;
    o.explain_at_s = last - t0;
    auto r = RunQueueSim(nodes, jobs, o);
    if (!r) {
      fmt::print(stderr, "{}\n", r.error().ToString());
      RC_FAIL("the replay with --explain failed");
    }
    RC_ASSERT(r->explain.state == std::string("waiting"));
    RC_ASSERT(r->explain.start_samples == 1);
    RC_ASSERT(r->explain.start_p50_s == rec.start_s - t0);
    // Asking changes nothing in the replay.
    RC_ASSERT(Rec(*r, rec.id).start_s == rec.start_s);
    RC_ASSERT(r->makespan_s == base->makespan_s);
  }
  RC_TAG(checked > 0 ? "checked" : "nothing waited");
}

RC_GTEST_PROP(StartEstimateProperty, ExactEstimateIsTheActualStartWithoutLaterArrivals, ()) {
  std::vector<NodeSpec> nodes;
  const int n = *rc::gen::inRange(1, 4);
  for (int i = 0; i < n; ++i) nodes.push_back({fmt::format("n{}", i), 64000, 262144, *rc::gen::element(2, 4, 8), "A"});
  std::vector<Job> jobs;
  const int count = *rc::gen::inRange(2, 30);
  for (int i = 0; i < count; ++i) {
    Job j = MakeJob(i, *rc::gen::inRange(0, 40), *rc::gen::element(1, 1, 2, 4), *rc::gen::inRange(1, 120),
                    *rc::gen::element<std::string>("a", "b", "c"));
    j.single_node = *rc::gen::arbitrary<bool>();
    j.priority = *rc::gen::inRange(0, 3);
    jobs.push_back(std::move(j));
  }
  QueueSimOptions o;
  o.policy = *rc::gen::element<std::string>("bestfit", "random", "gpuclustering");
  o.queue = *rc::gen::element(QueuePolicy::kFifo, QueuePolicy::kFifoBackfill, QueuePolicy::kStaticPartitions,
                              QueuePolicy::kSlurmMultifactor, QueuePolicy::kKueue, QueuePolicy::kLas, QueuePolicy::kTidal);
  if (o.queue != QueuePolicy::kFifo && o.queue != QueuePolicy::kFifoBackfill) o.tenants = "proportional";
  o.seed = *rc::gen::inRange<uint64_t>(1, 1000);
  o.checkpoint_interval_s = *rc::gen::element<int64_t>(10, 1800);
  o.restart_penalty_s = *rc::gen::element<int64_t>(0, 5);
  ExpectExactEstimatesAreActualStarts(nodes, jobs, o);
}


// The same on a fat tree with the topology placer, where multi-GPU jobs run
// longer on worse placements (the run-time hook) and may wait for compact ones.
RC_GTEST_PROP(StartEstimateProperty, ExactEstimateIsTheActualStartOnATopology, ()) {
  auto t = topo::ReadTidalYaml(testing::kFatTree, "fat.yaml");
  RC_ASSERT(t.has_value());
  const std::vector<NodeSpec> nodes = {{"h1", 64000, 262144, 8, "H100"}, {"h2", 64000, 262144, 8, "H100"},
                                       {"h3", 64000, 262144, 8, "H100"}, {"h4", 64000, 262144, 8, "H100"}};
  std::vector<Job> jobs;
  const int count = *rc::gen::inRange(2, 25);
  for (int i = 0; i < count; ++i) {
    Job j = MakeJob(i, *rc::gen::inRange(0, 300), *rc::gen::element(1, 2, 4, 8, 16), *rc::gen::inRange(1, 3600),
                    *rc::gen::element<std::string>("a", "b"));
    j.single_node = false;
    j.cpu_milli = 0;
    j.memory_mib = 0;
    jobs.push_back(std::move(j));
  }
  QueueSimOptions o;
  o.policy = *rc::gen::element<std::string>("topo", "slurm-tree", "kueue-tas");
  o.queue = *rc::gen::element(QueuePolicy::kFifoBackfill, QueuePolicy::kTidal, QueuePolicy::kKueue);
  if (o.queue != QueuePolicy::kFifoBackfill) o.tenants = "proportional";
  o.topology = std::make_shared<const topo::Topology>(std::move(*t));
  o.seed = 1;
  if (*rc::gen::arbitrary<bool>()) {
    o.max_wait_s = *rc::gen::inRange<int64_t>(1, 900);
    o.slowdown_ok = 1.0;
  }
  ExpectExactEstimatesAreActualStarts(nodes, jobs, o);
}

// --- the error on a replay --------------------------------------------------

TEST(StartEstimate, ErrorMetricOnAHandMadeCase) {
  // |P50 - actual|: 0, 10, 30, 100 -> p50 20, p90 79 (linear), mean 35;
  // signed: 0, +10, -30, +100 -> bias 20; actual <= P90 for 3 of 4.
  const std::vector<EstimatedStart> e = {
      {100, 120, 100},  // exact
      {210, 260, 200},  // 10 s late, covered
      {270, 290, 300},  // 30 s early, actual after P90: not covered
      {600, 700, 500},  // 100 s late, covered
  };
  const StartEstimateError s = SummarizeStartEstimates(e, 7, 3);
  EXPECT_EQ(s.sampled, 7);
  EXPECT_EQ(s.started_at_once, 3);
  EXPECT_EQ(s.samples, 4);
  EXPECT_DOUBLE_EQ(s.p50, 20);
  EXPECT_DOUBLE_EQ(s.p90, 79);
  EXPECT_DOUBLE_EQ(s.mean, 35);
  EXPECT_DOUBLE_EQ(s.bias_mean, 20);
  EXPECT_DOUBLE_EQ(s.coverage_p90, 0.75);
  const StartEstimateError none = SummarizeStartEstimates({}, 2, 2);
  EXPECT_EQ(none.samples, 0);
  EXPECT_EQ(none.coverage_p90, 0);
}

// All jobs arrive at once and the estimates are exact: every estimate given
// at arrival is the actual start (error 0, all covered), and estimating
// changes nothing in the replay.
TEST(StartEstimate, ErrorIsZeroWhenNothingArrivesLater) {
  std::vector<Job> jobs;
  for (int i = 0; i < 8; ++i) jobs.push_back(MakeJob(i, 0, 1 + i % 3, 30 + 17 * i));
  QueueSimOptions o;
  o.queue = QueuePolicy::kFifoBackfill;
  const QueueSimResult plain = Sim(OneNode(4), jobs, o);
  o.start_estimates = 8;
  const QueueSimResult r = Sim(OneNode(4), jobs, o);
  const StartEstimateError& e = r.start_estimate_error;
  EXPECT_EQ(e.sampled, 8);
  EXPECT_GT(e.started_at_once, 0);
  EXPECT_EQ(e.samples, 8 - e.started_at_once);
  EXPECT_GT(e.samples, 0);
  EXPECT_EQ(e.p90, 0);
  EXPECT_EQ(e.mean, 0);
  EXPECT_EQ(e.coverage_p90, 1);
  auto pj = QueueSimJson(plain), rj = QueueSimJson(r);
  EXPECT_TRUE(pj["start_estimate_error_s"].is_null());
  EXPECT_EQ(rj["start_estimate_error_s"]["samples"], e.samples);
  rj.erase("start_estimate_error_s");
  pj.erase("start_estimate_error_s");
  EXPECT_EQ(pj.dump(), rj.dump());
}

// Later arrivals make the error real: a job that arrives after the
// estimate and goes first delays the estimated job.
TEST(StartEstimate, LaterArrivalsMakeTheErrorReal) {
  // slurm-multifactor (fair share, no preemption), 4 GPUs: j0 (tenant a)
  // runs [0, 100); j1 (a, 4 GPUs) waits and is estimated 100; j2 (b) arrives
  // at 50 and, b having used nothing, goes first at 100: j1 starts at 200.
  // j2 itself is estimated right (100).
  const std::vector<Job> jobs = {MakeJob(0, 0, 4, 100, "a"), MakeJob(1, 10, 4, 100, "a"), MakeJob(2, 50, 4, 100, "b")};
  QueueSimOptions o;
  o.queue = QueuePolicy::kSlurmMultifactor;
  o.tenants = "proportional";
  o.start_estimates = 3;
  const QueueSimResult r = Sim(OneNode(4), jobs, o);
  EXPECT_EQ(Rec(r, 2).start_s, 100);
  EXPECT_EQ(Rec(r, 1).start_s, 200);
  const StartEstimateError& e = r.start_estimate_error;
  EXPECT_EQ(e.sampled, 3);
  EXPECT_EQ(e.started_at_once, 1);  // j0
  ASSERT_EQ(e.samples, 2);          // j1: 100 for 200; j2: 100 for 100
  EXPECT_DOUBLE_EQ(e.mean, 50);
  EXPECT_DOUBLE_EQ(e.bias_mean, -50);  // too early on average
  EXPECT_DOUBLE_EQ(e.coverage_p90, 0.5);
}

}  // namespace
}  // namespace tidal::sim

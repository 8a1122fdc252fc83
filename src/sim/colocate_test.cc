// The co-location experiment by hand: 2 x 8 H100, one service on TP2
// replicas (goodput 10 rps, no headroom) whose demand is 0 from 00:00 to
// 12:00 and 40 rps (4 replicas, 8 GPUs) from 12:00 to 24:00, every day, and
// two 8-GPU training jobs that run for ten days, both waiting at the start.
// Checkpoints every 5000 s, restart penalty 60 s, write on notice 120 s,
// replica start-up 120 s; two days.
#include "sim/colocate.h"

#include <filesystem>
#include <functional>
#include <fstream>

#include <gtest/gtest.h>

namespace tidal::sim {
namespace {

constexpr int64_t kT0 = 1'000'000;

inference::DemandSeries NoonStep() {
  inference::DemandSeries d;
  d.name = "noon";
  d.step_s = 60;
  for (int m = 0; m < 1440; ++m) d.rate.push_back(m < 720 ? 0.0 : 40.0);
  return d;
}

ColocateConfig Hand() {
  ColocateConfig c;
  c.name = "hand";
  c.nodes = {{"n0", 64000, 1 << 20, 8, "H100"}, {"n1", 64000, 1 << 20, 8, "H100"}};
  inference::Service s;
  s.name = "big";
  s.model = "m";
  s.shape = "tp2";
  s.goodput_rps = 10;
  s.gpus_per_replica = 2;
  s.headroom = 0;
  s.min_replicas = 0;
  s.demand = NoonStep();
  c.services = {s};
  for (int i = 0; i < 2; ++i) {
    Job j;
    j.id = i + 1;
    j.name = "train" + std::to_string(i + 1);
    j.num_gpu = 8;
    j.gpu_milli = kMilliPerGpu;
    j.single_node = true;
    j.submit_time_s = kT0;
    j.duration_s = 10 * 86400;
    c.training.push_back(j);
  }
  c.load = 0;
  c.days = 2;
  c.checkpoint_interval_s = 5000;
  c.restart_penalty_s = 60;
  c.checkpoint_write_s = 120;
  c.startup_s = 120;
  c.lead_s = 1800;
  c.cooldown_s = 1800;
  c.error_quantile = 0;
  c.day_start_hour = 12;
  c.day_end_hour = 24;
  return c;
}

const ColocateRow& Row(const ColocateResult& r, const std::string& policy) {
  for (const ColocateRow& row : r.rows)
    if (row.policy == policy) return row;
  ADD_FAILURE() << "no row " << policy;
  return r.rows.front();
}

// Another training job of the hand config's kind.
Job TrainingJob(JobId id, const std::string& name, int32_t gpus, int64_t duration_s, int64_t submit_s) {
  Job j = Hand().training[0];
  j.id = id;
  j.name = name;
  j.num_gpu = gpus;
  j.single_node = gpus <= 8;
  j.duration_s = duration_s;
  j.submit_time_s = submit_s;
  return j;
}

class ColocateHand : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto r = RunColocate(Hand());
    ASSERT_TRUE(r) << r.error().message;
    result_ = new ColocateResult(std::move(*r));
  }
  static void TearDownTestSuite() { delete result_; }
  static ColocateResult* result_;
};
ColocateResult* ColocateHand::result_ = nullptr;

// static: 4 replicas (the peak) from the start, serving at once; one
// training job runs all 48 h, the other never starts.
TEST_F(ColocateHand, StaticHoldsThePeakAndNeverPreempts) {
  const ColocateRow& s = Row(*result_, "static");
  EXPECT_EQ(s.preemptions, 0);
  EXPECT_DOUBLE_EQ(s.services[0].slo_minutes_met, 1.0);
  EXPECT_EQ(s.services[0].max_replicas, 4);
  EXPECT_DOUBLE_EQ(s.training_gpu_hours, 8 * 48);
  EXPECT_DOUBLE_EQ(s.inference_gpu_hours, 8 * 48);
  EXPECT_DOUBLE_EQ(s.services[0].gpu_hours, 4 * 2 * 48);  // replicas x GPUs x hours
  EXPECT_DOUBLE_EQ(s.services[0].mean_replicas, 4);
  EXPECT_EQ(s.training_started, 1);
  EXPECT_EQ(s.training_waiting_at_end, 1);
  EXPECT_DOUBLE_EQ(s.allocation_rate, 1.0);
}

// lyra (day = 12:00-24:00): no replicas at night, so both jobs start at 0.
// Noon of day 1 (43200 s in): one is preempted at once; both have run
// 43200 s, saved 40000 (checkpoints every 5000): (3200 + 60) x 8 = 26080
// GPU-s. At 24:00 the replicas end and it resumes (restart penalty 60). Noon
// of day 2: the resumed one has run 43200 s, 43140 useful, saved 40000:
// (3200 + 60) x 8 = 26080; the other (129600 s, saved 125000) would lose
// (4600 + 60) x 8 = 37280, so the resumed one goes. Replicas started at
// 12:00 serve from 12:02: minutes 12:00 and 12:01 are missed each day.
TEST_F(ColocateHand, LyraPreemptsAtOnceWhenTheDayBegins) {
  const ColocateRow& l = Row(*result_, "lyra");
  EXPECT_EQ(l.preemptions, 2);
  EXPECT_EQ(l.preemptions_with_notice, 0);
  EXPECT_DOUBLE_EQ(l.lost_gpu_hours, 2 * 26080 / 3600.0);
  EXPECT_EQ(l.services[0].missed_by_day, (std::vector<int64_t>{2, 2}));
  EXPECT_DOUBLE_EQ(l.services[0].slo_minutes_met, 1.0 - 4.0 / 2880.0);
  EXPECT_DOUBLE_EQ(l.inference_gpu_hours, 8 * 24);
  EXPECT_DOUBLE_EQ(l.services[0].gpu_hours, 4 * 2 * 24);
  EXPECT_EQ(l.training_started, 2);
}

// reactive: at 12:00 it has seen 11:59 (0 rps); at 12:01 it sees 12:00 and
// starts 4 replicas, serving from 12:03: three minutes missed a day; its
// victims lose their work since the last periodic checkpoint.
TEST_F(ColocateHand, ReactiveIsAMinuteLateAndPreemptsAtOnce) {
  const ColocateRow& r = Row(*result_, "reactive");
  EXPECT_EQ(r.services[0].missed_by_day, (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(r.preemptions, 2);
  EXPECT_EQ(r.preemptions_with_notice, 0);
  // Day 1: preempted at 43260 s: saved 40000, (3260 + 60) x 8 = 26560.
  EXPECT_GE(r.lost_gpu_hours, 26560 / 3600.0);
}

// tidal: day 1 has no history (the forecast is the last value: like
// reactive); on day 2 the forecast of yesterday's noon step scales out 30
// minutes ahead, with notice: no minute missed, and the victim loses only
// the write and the restart.
TEST_F(ColocateHand, TidalScalesOutAheadWithNoticeOnceItHasADayOfHistory) {
  const ColocateRow& t = Row(*result_, "tidal");
  EXPECT_EQ(t.services[0].missed_by_day, (std::vector<int64_t>{3, 0}));
  EXPECT_EQ(t.preemptions, 2);
  EXPECT_EQ(t.preemptions_with_notice, 1);
  const ColocateRow& r = Row(*result_, "reactive");
  // Day 1 as reactive: (3260 + 60) x 8 = 26560. Day 2, with notice, the
  // resumed job would lose (60 + 120 + 60) x 8 = 1920 (its run began with a
  // 60 s restart penalty), the other one (0 + 120 + 60) x 8 = 1440: it goes.
  EXPECT_DOUBLE_EQ(t.lost_gpu_hours, (26560 + 1440) / 3600.0);
  EXPECT_LT(t.lost_gpu_hours, r.lost_gpu_hours);
}

// Every row: GPU time in use = training (useful + lost) + inference.
TEST_F(ColocateHand, AccountingAddsUp) {
  for (const ColocateRow& row : result_->rows) {
    const double in_use = row.allocation_rate * 16 * 48;
    EXPECT_NEAR(in_use, row.training_gpu_hours + row.lost_gpu_hours + row.inference_gpu_hours, 1e-6)
        << row.policy;
  }
}

TEST_F(ColocateHand, SameInputSameOutput) {
  auto again = RunColocate(Hand());
  ASSERT_TRUE(again);
  EXPECT_EQ(ColocateJson(*again).dump(), ColocateJson(*result_).dump());
}

}  // namespace
}  // namespace tidal::sim

namespace tidal::sim {
namespace {

// A placement on one H100 MIG instance of node 0.
Placement MigOnN0(int32_t gpu, const char* profile, int32_t start) {
  NodeAssignment a;
  a.node = 0;
  a.mig = {{gpu, mig::FindGeometry("H100")->FindProfile(profile), start}};
  return Placement{{a}};
}

// ChooseScaleInVictim on a hand-made state: n0 has two H100 in MIG mode —
// GPU 0 holds job 1 (3g@0) and job 2 (2g@4), 5 busy slices; GPU 1 holds job 3
// (1g@6), 1 busy slice. Whole-GPU replicas: job 4 (2 GPUs) on n1, which has 6
// free; job 5 (2 GPUs) on n2, which has 2 free (a training job holds 4).
TEST(ScaleIn, NotServingFirstThenNewestOrEmptiest) {
  ClusterState c = *ClusterState::Build({{"n0", 64000, 1 << 20, 2, "H100"}, {"n1", 64000, 1 << 20, 8, "H100"}, {"n2", 64000, 1 << 20, 8, "H100"}});
  ASSERT_TRUE(c.Bind(1, MigOnN0(0, "3g.40gb", 0)));
  ASSERT_TRUE(c.Bind(2, MigOnN0(0, "2g.20gb", 4)));
  ASSERT_TRUE(c.Bind(3, MigOnN0(1, "1g.10gb", 6)));
  ASSERT_TRUE(c.Bind(4, Placement{{{1, 0, 0, {0, 1}, {1000, 1000}}}}));
  ASSERT_TRUE(c.Bind(5, Placement{{{2, 0, 0, {0, 1}, {1000, 1000}}}}));
  ASSERT_TRUE(c.Bind(6, Placement{{{2, 0, 0, {2, 3, 4, 5}, {1000, 1000, 1000, 1000}}}}));
  const int64_t now = 1000;
  std::unordered_map<JobId, int64_t> ready = {{1, 0}, {2, 0}, {3, 0}, {4, 0}, {5, 0}};
  // The replicas as the fleets hold them, not located (the victims look
  // their placement up) or located (as the fleets cache it).
  auto R = [&](const std::vector<JobId>& ids, bool located = false) {
    std::vector<RunningReplica> v;
    for (JobId id : ids) {
      RunningReplica r{id, ready.at(id)};
      if (located) {
        const NodeAssignment& a = c.FindAllocation(id)->assignments[0];
        r.node = a.node;
        r.mig_gpu = a.mig.empty() ? -1 : a.mig[0].gpu;
      }
      v.push_back(r);
    }
    return v;
  };
  for (const bool located : {false, true}) {
    SCOPED_TRACE(located ? "located" : "not located");
    const std::vector<JobId> migs = {3, 1, 2};  // start order: 2 is the newest
    ready[1] = 0;
    EXPECT_EQ(ChooseScaleInVictim(R(migs, located), now, c, false), 2u);  // newest
    EXPECT_EQ(ChooseScaleInVictim(R(migs, located), now, c, true), 0u);   // job 3: its GPU has 1 busy slice
    ready[1] = now + 1;                                                   // job 1 not serving yet
    EXPECT_EQ(ChooseScaleInVictim(R(migs, located), now, c, false), 1u);
    EXPECT_EQ(ChooseScaleInVictim(R(migs, located), now, c, true), 1u);
    ready[1] = now;  // serving from now on
    EXPECT_EQ(ChooseScaleInVictim(R(migs, located), now, c, true), 0u);
    EXPECT_EQ(ChooseScaleInVictim(R({1, 2}, located), now, c, true), 1u);  // a tie: the newest
    const std::vector<JobId> whole = {4, 5};
    EXPECT_EQ(ChooseScaleInVictim(R(whole, located), now, c, false), 1u);
    EXPECT_EQ(ChooseScaleInVictim(R(whole, located), now, c, true), 0u);  // n1 has 6 free, n2 2
    EXPECT_EQ(ChooseScaleInVictim(R({5, 4}, located), now, c, true), 1u);
    // Several at once: the same victims, in the same order, as one at a time.
    for (bool emptiest : {false, true}) {
      for (int64_t r1 : {now, now + 1}) {
        ready[1] = r1;
        const std::vector<RunningReplica> all = R({3, 1, 4, 2, 5}, located);
        for (size_t k = 0; k <= all.size() + 1; ++k) {
          std::vector<RunningReplica> left = all;
          std::vector<JobId> one_by_one;
          for (size_t n = 0; n < k && !left.empty(); ++n) {
            const size_t v = ChooseScaleInVictim(left, now, c, emptiest);
            one_by_one.push_back(left[v].id);
            left.erase(left.begin() + static_cast<std::ptrdiff_t>(v));
          }
          std::vector<JobId> at_once;
          for (size_t v : ChooseScaleInVictims(all, now, c, emptiest, k)) at_once.push_back(all[v].id);
          EXPECT_EQ(at_once, one_by_one) << "k " << k << " emptiest " << emptiest << " ready " << r1;
        }
      }
    }
  }
}

}  // namespace
}  // namespace tidal::sim

namespace tidal::sim {
namespace {

// Training arrivals between minute ticks arrive at their own second: a job
// due 90 s in starts then (not at the 60 s tick), with nothing queued.
TEST(ColocateArrivals, JobsArriveAtTheirOwnSecond) {
  ColocateConfig c = Hand();
  c.services[0].demand.rate.assign(1440, 0.0);
  c.training.resize(1);
  c.training.push_back(TrainingJob(2, "late", 1, 1000, kT0 + 90));
  c.policies = {ColocatePolicy::kStatic};
  c.days = 1;
  auto r = RunColocate(c);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->rows[0].training_started, 2);
  EXPECT_DOUBLE_EQ(r->rows[0].training_queue_delay_s, 0.0);
  // 8 GPUs for the day, 1 GPU for 1000 s.
  EXPECT_DOUBLE_EQ(r->rows[0].training_gpu_hours, 8 * 24 + 1000 / 3600.0);
}

}  // namespace
}  // namespace tidal::sim

namespace tidal::sim {
namespace {

// ColocateConfig::skip_gaps on the hand fleet (16 GPUs, no inference
// demand, one day): job 1 (8 GPUs, 1000 s) at 0, job 2 (16 GPUs, 1000 s)
// at 10000, job 3 (1 GPU, 100 s) at 100000 — past the day.
// Gaps kept: job 2 starts on arrival, job 3 never arrives, nothing ever
// waits, so all idle time is idle with no training waiting.
// Gaps skipped: at the 60 s tick nothing waits, so the trace moves 9940 s
// earlier: job 2 arrives at 60 and waits for job 1's 8 GPUs until 1000
// (940 s, 8 GPUs idle meanwhile with training waiting); no move while it
// waits (job 3 would backfill then); at the 1020 tick nothing waits again:
// job 3 arrives at 1020 and waits for job 2 until 2000 (980 s, nothing idle).
TEST(ColocateGaps, SkippedGapsBringTheNextArrivalForward) {
  ColocateConfig c = Hand();
  c.services[0].demand.rate.assign(1440, 0.0);
  c.training = {TrainingJob(1, "first", 8, 1000, kT0), TrainingJob(2, "big", 16, 1000, kT0 + 10000),
                TrainingJob(3, "small", 1, 100, kT0 + 100000)};
  c.policies = {ColocatePolicy::kStatic};
  c.days = 1;
  for (const bool skip : {false, true}) {
    SCOPED_TRACE(skip ? "skip" : "keep");
    c.skip_gaps = skip;
    auto r = RunColocate(c);
    ASSERT_TRUE(r) << r.error().message;
    const ColocateRow& row = r->rows[0];
    const double work = 8 * 1000 + 16 * 1000 + (skip ? 100 : 0);
    const double idle_s = 16.0 * 86400 - work;
    EXPECT_EQ(row.training_started, skip ? 3 : 2);
    EXPECT_DOUBLE_EQ(row.training_gpu_hours, work / 3600);
    EXPECT_DOUBLE_EQ(row.idle_gpu_hours, idle_s / 3600);
    EXPECT_DOUBLE_EQ(row.training_queue_delay_s, skip ? (0 + 940 + 980) / 3.0 : 0.0);
    EXPECT_DOUBLE_EQ(row.idle_no_training_waiting_gpu_hours, (idle_s - (skip ? 8 * 940 : 0)) / 3600);
  }
}

}  // namespace
}  // namespace tidal::sim

namespace tidal::sim {
namespace {

// The ladder per replica: the hand fleet, tidal, plus a second service,
// "spike" (TP2, 10 rps a replica, no minimum), idle but for 20 rps on day 2
// from 11:30 to 12:00 — a surprise no forecast saw. At the 11:31 tick of
// day 2 both scale out in one pass: "big" for noon from the forecast, with
// notice (one training job goes, as in
// TidalScalesOutAheadWithNoticeOnceItHasADayOfHistory), and spike, which
// has seen 11:30, by preempting the other training job at once: its victim
// gets no notice, and its replicas do not wait for big's victim's
// checkpoint write. They serve from 11:33 (start-up 120 s): 11:30, 11:31
// and 11:32 are missed (5 minutes if they waited for a write).
TEST(ColocateLadder, ASurpriseInOneServicePreemptsAtOnceWhileAnotherScalesOutWithNotice) {
  ColocateConfig c = Hand();
  inference::Service spike = c.services[0];
  spike.name = "spike";
  spike.demand.name = "spike";
  spike.demand.rate.assign(2 * 1440, 0.0);
  for (int m = 1440 + 11 * 60 + 30; m < 1440 + 12 * 60; ++m) spike.demand.rate[static_cast<size_t>(m)] = 20;
  c.services[0].demand.rate.resize(2 * 1440);
  for (int m = 0; m < 1440; ++m) c.services[0].demand.rate[static_cast<size_t>(1440 + m)] = c.services[0].demand.rate[static_cast<size_t>(m)];
  c.services.push_back(spike);
  c.policies = {ColocatePolicy::kTidal};
  auto r = RunColocate(c);
  ASSERT_TRUE(r) << r.error().message;
  const ColocateRow& t = r->rows[0];
  EXPECT_EQ(t.services[0].missed_by_day, (std::vector<int64_t>{3, 0}));
  EXPECT_EQ(t.services[1].missed_by_day, (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(t.preemptions, 3);
  EXPECT_EQ(t.preemptions_with_notice, 1);
}

}  // namespace
}  // namespace tidal::sim

namespace tidal::sim {
namespace {

// A partial scale-in ends only the replicas the target no longer needs:
// reactive, demand 40 rps (4 replicas) from 12:00 and 20 rps (2) from 18:00.
// The two that go end after the cool-down; the two that stay keep serving,
// so the day misses only the three minutes of the noon rise (ending all
// four and starting two again would miss the minutes of their start-up).
TEST(ColocateScaleIn, APartialScaleInKeepsTheReplicasStillNeeded) {
  ColocateConfig c = Hand();
  for (int m = 1080; m < 1440; ++m) c.services[0].demand.rate[static_cast<size_t>(m)] = 20;
  c.policies = {ColocatePolicy::kReactive};
  c.days = 1;
  auto r = RunColocate(c);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->rows[0].services[0].missed_by_day, (std::vector<int64_t>{3}));
  EXPECT_EQ(r->rows[0].services[0].max_replicas, 4);
  EXPECT_LT(r->rows[0].services[0].mean_replicas, 4 * 720 / 1440.0);  // two ended before midnight
}

// backlog_s: the jobs submitted within the first backlog_s are all waiting
// at the start (submit moved to the first job's); one exactly backlog_s
// after it is not. The hand fleet, no inference: two 16-GPU jobs of 1000 s
// at 0 and 999 (backlog 999: at 999 is not within it) run one after the
// other: the second waits 1000 - 999 = 1 s. With backlog 1000 both are at
// 0 and the second waits 1000 s.
TEST(ColocateBacklog, JobsWithinTheBacklogWaitAtTheStart) {
  ColocateConfig c = Hand();
  c.services[0].demand.rate.assign(1440, 0.0);
  c.training = {TrainingJob(1, "a", 16, 1000, kT0), TrainingJob(2, "b", 16, 1000, kT0 + 999)};
  c.policies = {ColocatePolicy::kStatic};
  c.days = 1;
  for (const int64_t backlog : {999, 1000}) {
    SCOPED_TRACE(backlog);
    c.backlog_s = backlog;
    auto r = RunColocate(c);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_DOUBLE_EQ(r->rows[0].training_queue_delay_s, backlog == 999 ? 0.5 : 500.0);
  }
}

// RunColocate checks what a config file would have refused.
TEST(ColocateBadInput, RunSaysWhat) {
  struct Case {
    const char* name;
    std::function<void(ColocateConfig&)> edit;
    const char* error;
  };
  const std::vector<Case> cases = {
      {"days 0", [](ColocateConfig& c) { c.days = 0; }, "days must be in [1, 366]"},
      {"days 367", [](ColocateConfig& c) { c.days = 367; }, "days must be in [1, 366]"},
      {"no services", [](ColocateConfig& c) { c.services.clear(); }, "no inference services"},
      {"start < 0", [](ColocateConfig& c) { c.day_start_hour = -1; }, "day hours must satisfy"},
      {"end > 24", [](ColocateConfig& c) { c.day_end_hour = 25; }, "day hours must satisfy"},
      {"start >= end", [](ColocateConfig& c) { c.day_start_hour = c.day_end_hour; }, "day hours must satisfy"},
  };
  for (const Case& k : cases) {
    ColocateConfig c = Hand();
    k.edit(c);
    auto r = RunColocate(c);
    ASSERT_FALSE(r) << k.name;
    EXPECT_NE(r.error().message.find(k.error), std::string::npos) << k.name << ": " << r.error().message;
  }
}

}  // namespace
}  // namespace tidal::sim

namespace tidal::sim {
namespace {

// MigBefore: what a pass reconfigured for each replica, not for the pass as
// a whole. Before the "pass", n0's GPU 0 is in MIG mode with job 1 on 3g@0
// and a free 1g instance at 6 (its job ended). In the pass: job 2 takes the
// free 1g@6 (nothing reconfigured for it), job 3 a new 2g@4 on GPU 0
// (created), job 4 1g@0 on GPU 1, which was not in MIG mode (mode changed),
// job 5 two whole GPUs of n1 (no MIG), and job 6 nothing (not bound).
TEST(MigBefore, TellsEachReplicaWhatThePassReconfiguredForIt) {
  ClusterState c = *ClusterState::Build({{"n0", 64000, 1 << 20, 2, "H100"}, {"n1", 64000, 1 << 20, 8, "H100"}});
  ASSERT_TRUE(c.Bind(1, MigOnN0(0, "3g.40gb", 0)));
  ASSERT_TRUE(c.Bind(9, MigOnN0(0, "1g.10gb", 6)));
  ASSERT_TRUE(c.Unbind(9));
  MigBefore before(c);
  ASSERT_TRUE(c.Bind(2, MigOnN0(0, "1g.10gb", 6)));
  ASSERT_TRUE(c.Bind(3, MigOnN0(0, "2g.20gb", 4)));
  ASSERT_TRUE(c.Bind(4, MigOnN0(1, "1g.10gb", 0)));
  ASSERT_TRUE(c.Bind(5, Placement{{{1, 0, 0, {0, 1}, {1000, 1000}}}}));
  auto of = [&](JobId j) {
    const MigReconfigured r = before.Of(c, j);
    return std::pair{r.created, r.mode_changed};
  };
  EXPECT_EQ(of(1), std::pair(false, false));
  EXPECT_EQ(of(2), std::pair(false, false));
  EXPECT_EQ(of(3), std::pair(true, false));
  EXPECT_EQ(of(4), std::pair(true, true));
  EXPECT_EQ(of(5), std::pair(false, false));
  EXPECT_EQ(of(6), std::pair(false, false));
  // Taken again (before the next pass; the record is reused only while no
  // layout changed): what the last pass created is no longer new.
  before.Take(c);
  EXPECT_EQ(of(3), std::pair(false, false));
  EXPECT_EQ(of(4), std::pair(false, false));
  // A pass that changes no layout (job 8 takes the 1g@6 job 2 left): the
  // record holds. Then job 7 takes 1g@0 on n1's GPU 2, which enters MIG
  // mode (a Bind that creates): a new Take sees it.
  ASSERT_TRUE(c.Unbind(2));
  ASSERT_TRUE(c.Bind(8, MigOnN0(0, "1g.10gb", 6)));
  before.Take(c);
  EXPECT_EQ(of(8), std::pair(false, false));
  Placement on_n1 = MigOnN0(0, "1g.10gb", 0);
  on_n1.assignments[0].node = 1;
  on_n1.assignments[0].mig[0].gpu = 2;
  ASSERT_TRUE(c.Bind(7, on_n1));
  EXPECT_EQ(of(7), std::pair(true, true));
  before.Take(c);
  EXPECT_EQ(of(7), std::pair(false, false));
}

// The record is of one cluster: another one at the same layout version (two
// fresh clusters, one change each) is recorded anew.
TEST(MigBefore, ARecordIsOfOneCluster) {
  auto build = [] { return *ClusterState::Build({{"n0", 64000, 1 << 20, 2, "H100"}}); };
  ClusterState a = build(), b = build();
  ASSERT_TRUE(a.SetMigLayout(0, 0, *mig::ParseLayout(*mig::FindGeometry("H100"), "1g.10gb@6")));
  ASSERT_TRUE(b.SetMigLayout(0, 1, *mig::ParseLayout(*mig::FindGeometry("H100"), "1g.10gb@6")));
  ASSERT_EQ(a.mig_layout_version(), b.mig_layout_version());
  MigBefore before(a);
  before.Take(b);
  ASSERT_TRUE(b.Bind(1, MigOnN0(1, "1g.10gb", 6)));
  EXPECT_EQ(before.Of(b, 1).created, false);  // b's GPU 1 had it: nothing new
}

}  // namespace
}  // namespace tidal::sim

// The daemon's core on both store backends, with a manual wall clock and no
// thread: jobs run and end on the daemon clock, cancels, idempotency,
// tenant scoping, explain and what-if, and the restart replay — a second
// daemon on the same store reaches the state the first had, and corrects
// what a crash kept from the store.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <thread>

#include "server/daemon.h"
#include "market/market_config.h"
#include "server/job_rows.h"
#include "server/server_test_util.h"
#include "store/store_testing.h"
#include "tenancy/tenants_file.h"

namespace tidal::server {
namespace {

constexpr double kEpoch = 1'800'000'000;

DaemonConfig SmallConfig(std::vector<Job> trace = {}) { return testing::SmallDaemonConfig("test-digest", std::move(trace)); }

const Principal kAdmin{.token_id = "admin", .role = Role::kAdmin};
const Principal kAds{.token_id = "ads-m", .role = Role::kMember, .tenant = "ads"};
const Principal kSearch{.token_id = "search-m", .role = Role::kMember, .tenant = "search"};
const Audit kAudit{.method = "POST", .path = "/v1/jobs"};

SubmitRequest Req(int gpus, int64_t est, int64_t run = 0, std::string key = {}) {
  SubmitRequest r;
  r.gpus = gpus;
  r.estimated_runtime_s = est;
  r.runtime_s = run;
  r.idempotency_key = std::move(key);
  return r;
}

// The stored jobs agree in what the scheduler decided.
void ExpectSameJobs(const std::map<JobId, JobView>& before, const std::map<JobId, JobView>& after) {
  ASSERT_EQ(before.size(), after.size());
  for (const auto& [id, v] : before) {
    SCOPED_TRACE(id);
    const JobView& w = after.at(id);
    EXPECT_EQ(v.state, w.state);
    EXPECT_EQ(v.started_at, w.started_at);
    EXPECT_EQ(v.ended_at, w.ended_at);
    EXPECT_EQ(v.placement, w.placement);
  }
}

class DaemonTest : public ::testing::TestWithParam<store::testing::Backend> {
 protected:
  void SetUp() override {
    auto db = store::testing::FreshStore(GetParam());
    if (!db) GTEST_SKIP() << db.error().message;
    db_ = std::move(*db);
    Open();
  }
  // A new, empty store and a daemon on it with `c` (and a clock other than
  // the manual one, when given).
  void OpenFresh(DaemonConfig c, WallClock clock = nullptr) {
    d_.reset();
    auto db = store::testing::FreshStore(GetParam());
    ASSERT_TRUE(db) << db.error().message;
    db_ = std::move(*db);
    auto d = Daemon::Open(std::move(c), db_->store(), clock ? clock : WallClock([this] { return wall_; }));
    ASSERT_TRUE(d) << d.error().message;
    d_ = std::move(*d);
  }
  void Open(DaemonConfig c = SmallConfig()) {
    d_.reset();
    auto d = Daemon::Open(std::move(c), db_->store(), [this] { return wall_; });
    ASSERT_TRUE(d) << d.error().message;
    d_ = std::move(*d);
  }
  void Step() { ASSERT_TRUE(d_->Step()); }
  JobId Submit(const Principal& p, SubmitRequest r) {
    auto s = d_->Submit(std::move(r), p, kAudit);
    EXPECT_TRUE(s) << (s ? "" : s.error().message);
    return s ? s->job.id : 0;
  }
  JobView Get(JobId id) {
    auto v = d_->GetJob(id, kAdmin);
    EXPECT_TRUE(v) << id;
    return v ? *v : JobView{};
  }
  // Every job's stored row, by id.
  std::map<JobId, JobView> Stored() {
    std::map<JobId, JobView> out;
    EXPECT_TRUE(db_->store().Read([&](store::Tx& tx) -> Status {
      TIDAL_ASSIGN_OR_RETURN(store::Rows rows, tx.Query(std::string(kJobSelect) + " ORDER BY id"));
      for (const store::Row& r : rows.rows) {
        TIDAL_ASSIGN_OR_RETURN(StoredJob s, JobFromRow(r));
        out[s.view.id] = s.view;
      }
      return Ok();
    }));
    return out;
  }

  double wall_ = kEpoch;
  std::unique_ptr<store::testing::TestStore> db_;
  std::unique_ptr<Daemon> d_;
};

TEST_P(DaemonTest, AJobRunsOnTheDaemonClockAndEnds) {
  const JobId id = Submit(kAds, Req(8, 100, 50));
  EXPECT_EQ(id, 1);  // API ids count from 1 on a fresh store
  EXPECT_EQ(Get(id).state, "accepted");
  EXPECT_EQ(Stored().at(id).state, "accepted");  // durable before the answer
  wall_ += 1;
  Step();
  JobView v = Get(id);
  EXPECT_EQ(v.state, "running");
  EXPECT_EQ(v.started_at, static_cast<int64_t>(kEpoch) + 1);
  ASSERT_EQ(v.placement.size(), 1u);
  EXPECT_EQ(v.placement[0]["gpus"].size(), 8u);
  EXPECT_EQ(Stored().at(id).state, "running");
  // A submission in the same second as that batch goes into the next second:
  // never into a batch that already ran (a replay would merge them).
  const JobId same = Submit(kSearch, Req(1, 10));
  Step();
  EXPECT_EQ(Get(same).started_at, static_cast<int64_t>(kEpoch) + 2);
  ASSERT_TRUE(d_->Cancel(same, kSearch, kAudit));
  Step();
  EXPECT_EQ(Get(same).ended_at, static_cast<int64_t>(kEpoch) + 3);
  auto s = d_->snapshot();
  EXPECT_EQ(s->running, 1);
  EXPECT_DOUBLE_EQ(s->gpus_allocated, 8);
  wall_ += 49;
  Step();
  EXPECT_EQ(Get(id).state, "running");  // runs 50 s: ends at +51
  wall_ += 1;
  Step();
  v = Get(id);
  EXPECT_EQ(v.state, "succeeded");
  EXPECT_EQ(v.ended_at, static_cast<int64_t>(kEpoch) + 51);
  EXPECT_EQ(Stored().at(id).state, "succeeded");
  EXPECT_DOUBLE_EQ(d_->snapshot()->gpus_allocated, 0);
}

TEST_P(DaemonTest, CancelsAWaitingAndARunningJob) {
  // Each tenant fills its floor; a third job has no room.
  const JobId big = Submit(kAds, Req(16, 1000));
  const JobId full = Submit(kSearch, Req(16, 1000));
  const JobId next = Submit(kSearch, Req(8, 100));
  Step();
  EXPECT_EQ(Get(big).state, "running");
  EXPECT_EQ(Get(full).state, "running");
  EXPECT_EQ(Get(next).state, "pending");
  // Another tenant cannot even see it: 404, not 403.
  auto other = d_->Cancel(big, kSearch, kAudit);
  ASSERT_FALSE(other);
  EXPECT_EQ(other.error().status, 404);
  ASSERT_TRUE(d_->Cancel(next, kSearch, kAudit));
  EXPECT_TRUE(Stored().at(next).cancel_requested);
  wall_ += 5;
  Step();
  EXPECT_EQ(Get(next).state, "cancelled");
  EXPECT_EQ(Get(next).ended_at, static_cast<int64_t>(kEpoch) + 5);
  ASSERT_TRUE(d_->Cancel(big, kAds, kAudit));
  wall_ += 5;
  Step();
  EXPECT_EQ(Get(big).state, "cancelled");
  EXPECT_DOUBLE_EQ(d_->snapshot()->gpus_allocated, 16);
  auto again = d_->Cancel(big, kAds, kAudit);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().status, 409);
}

TEST_P(DaemonTest, IdempotencyKeyReturnsTheFirstJobOrConflicts) {
  auto a = d_->Submit(Req(2, 100, 0, "k1"), kAds, kAudit);
  ASSERT_TRUE(a);
  EXPECT_TRUE(a->created);
  auto b = d_->Submit(Req(2, 100, 0, "k1"), kAds, kAudit);
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_FALSE(b->created);
  EXPECT_EQ(b->job.id, a->job.id);
  auto c = d_->Submit(Req(3, 100, 0, "k1"), kAds, kAudit);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().status, 409);
  EXPECT_EQ(c.error().field, "idempotency_key");
  // Keys are per tenant.
  auto other = d_->Submit(Req(3, 100, 0, "k1"), kSearch, kAudit);
  ASSERT_TRUE(other);
  EXPECT_TRUE(other->created);
  EXPECT_EQ(Stored().size(), 2u);
}

TEST_P(DaemonTest, RefusesWhatCannotBeSubmitted) {
  SubmitRequest r = Req(2, 100);
  r.tenant = "search";
  auto forbidden = d_->Submit(r, kAds, kAudit);
  ASSERT_FALSE(forbidden);
  EXPECT_EQ(forbidden.error().status, 404);  // another tenant is not even named
  r.tenant = "nobody";
  auto unknown = d_->Submit(r, kAdmin, kAudit);
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().status, 400);
  EXPECT_EQ(unknown.error().field, "tenant");
  SubmitRequest m = Req(2, 100);
  m.gpu_model = {"B200"};
  auto model = d_->Submit(m, kAds, kAudit);
  ASSERT_FALSE(model);
  EXPECT_NE(model.error().message.find("it has: H100"), std::string::npos) << model.error().message;
  auto huge = d_->Submit(Req(33, 100), kAds, kAudit);
  ASSERT_FALSE(huge);
  EXPECT_EQ(huge.error().field, "gpus");
  const Principal viewer{.token_id = "v", .role = Role::kViewer, .tenant = "ads"};
  auto v = d_->Submit(Req(1, 100), viewer, kAudit);
  ASSERT_FALSE(v);
  EXPECT_EQ(v.error().status, 403);
  EXPECT_TRUE(Stored().empty());  // nothing refused was written
}

TEST_P(DaemonTest, ListingIsScopedToTheTokensTenant) {
  const JobId a = Submit(kAds, Req(1, 100));
  const JobId s = Submit(kSearch, Req(1, 100));
  Step();
  auto mine = d_->ListJobs({.state = "running"}, kAds);
  ASSERT_TRUE(mine);
  ASSERT_EQ(mine->jobs.size(), 1u);
  EXPECT_EQ(mine->jobs[0].id, a);
  auto asked = d_->ListJobs({.tenant = "search"}, kAds);
  ASSERT_FALSE(asked);
  EXPECT_EQ(asked.error().status, 404);
  auto all = d_->ListJobs({}, kAdmin);
  ASSERT_TRUE(all);
  EXPECT_EQ(all->jobs.size(), 2u);
  EXPECT_EQ(all->jobs[0].id, s);  // newest first
  EXPECT_FALSE(d_->GetJob(s, kAds));
  auto bad = d_->ListJobs({.state = "sleeping"}, kAdmin);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().field, "state");
  // Paging: one per page, then none.
  auto p1 = d_->ListJobs({.limit = 1}, kAdmin);
  ASSERT_TRUE(p1);
  ASSERT_EQ(p1->jobs.size(), 1u);
  ASSERT_TRUE(p1->next);
  auto p2 = d_->ListJobs({.limit = 1, .before = p1->next}, kAdmin);
  ASSERT_TRUE(p2);
  ASSERT_EQ(p2->jobs.size(), 1u);
  EXPECT_EQ(p2->jobs[0].id, a);
  EXPECT_FALSE(p2->next);
}

TEST_P(DaemonTest, ExplainAndWhatIf) {
  Submit(kAds, Req(16, 1000, 1000));
  Submit(kSearch, Req(16, 1000, 1000));
  const JobId waiting = Submit(kSearch, Req(8, 500, 500));
  Step();
  ASSERT_EQ(Get(waiting).state, "pending");
  auto e = d_->Explain(waiting, kSearch);
  ASSERT_TRUE(e) << e.error().message;
  EXPECT_EQ((*e)["state"], "pending");
  EXPECT_FALSE((*e)["causes"].empty());
  // Its quota shortfall is in GPUs (the queue counts milli-GPU): search is at
  // its 16-GPU floor and the cohort's other 16 are in use.
  bool quota_seen = false;
  for (const auto& c : (*e)["causes"]) {
    if (c["kind"] != "quota") continue;
    quota_seen = true;
    EXPECT_EQ(c["shortfall_unit"], "gpu");
    EXPECT_DOUBLE_EQ(c["shortfall"].get<double>(), 8);
  }
  EXPECT_TRUE(quota_seen) << e->dump();
  ASSERT_TRUE((*e)["start_estimate"]["p50"].is_number());
  // It starts when a 16-GPU job ends (its estimate: 1000 s), or earlier.
  const int64_t p50 = (*e)["start_estimate"]["p50"];
  EXPECT_GE(p50, static_cast<int64_t>(kEpoch));
  EXPECT_LE(p50, static_cast<int64_t>(kEpoch) + 1000);
  EXPECT_FALSE(d_->Explain(waiting, kAds));  // not its tenant's

  auto w = d_->Simulate({.submit = {Req(8, 2000)}}, kSearch);
  ASSERT_TRUE(w) << w.error().message;
  ASSERT_EQ((*w)["jobs"].size(), 1u);
  EXPECT_EQ((*w)["jobs"][0]["id"], waiting);
  EXPECT_EQ((*w)["jobs"][0]["start_before"], static_cast<int64_t>(kEpoch) + 1000);
  EXPECT_GE((*w)["jobs"][0]["delta_s"].get<int64_t>(), 0);
  ASSERT_TRUE((*w)["submitted"][0]["start"].is_number());
  EXPECT_EQ((*w)["submitted"][0]["start"], static_cast<int64_t>(kEpoch) + 1000);  // behind the running ones
  EXPECT_EQ(d_->Quote("H100", "standard", 8, 3600).error().status, 404);  // no market in this config
  // A what-if changes nothing.
  EXPECT_EQ(Get(waiting).state, "pending");
  EXPECT_EQ(d_->snapshot()->running, 2);
}

TEST_P(DaemonTest, ARestartReplaysToTheSameState) {
  std::vector<JobId> ids;
  for (int i = 0; i < 12; ++i) {
    ids.push_back(Submit(i % 2 ? kAds : kSearch, Req(1 + (i * 5) % 16, 300 + 100 * i, 200 + 50 * i)));
    if (i % 3 == 2) {
      wall_ += 37;
      Step();
    }
  }
  ASSERT_TRUE(d_->Cancel(ids[4], kSearch, kAudit));
  wall_ += 120;
  Step();
  ASSERT_TRUE(d_->Cancel(ids[11], kAds, kAudit));
  wall_ += 400;
  Step();
  const auto before = Stored();
  std::map<JobId, std::string> states;
  for (JobId id : ids) states[id] = Get(id).state;
  // A second daemon on the same store, at the same moment.
  Open();
  EXPECT_EQ(d_->reconciled(), 0);
  // Its counters start afresh: the replay of the past is not counted again.
  EXPECT_EQ(d_->metrics().scheduled.load(), 0);
  EXPECT_EQ(d_->metrics().unschedulable.load(), 0);
  ExpectSameJobs(before, Stored());
  for (JobId id : ids) EXPECT_EQ(Get(id).state, states[id]) << id;
  // New jobs get new ids after the restart.
  const JobId next = Submit(kAds, Req(1, 10));
  EXPECT_EQ(next, ids.back() + 1);
  EXPECT_EQ(Get(next).state, "accepted");
  // And both go on alike: the restarted one ends the jobs when the first would have.
  wall_ += 3000;
  Step();
  EXPECT_GT(d_->metrics().scheduled.load(), 0);
  for (JobId id : ids) EXPECT_NE(Get(id).state, "running") << id;
}

TEST_P(DaemonTest, ARestartCorrectsWhatACrashKeptFromTheStore) {
  const JobId run = Submit(kAds, Req(8, 1000));
  wall_ += 1;
  Step();
  ASSERT_EQ(Get(run).state, "running");
  // Accepted but never seen by a cycle (a crash right after the answer).
  const JobId late = Submit(kSearch, Req(4, 100));
  // A crash that lost the step's write: the stored state is stale.
  ASSERT_TRUE(db_->store().Write([&](store::Tx& tx) -> Status {
    const store::Value p[] = {run};
    TIDAL_RETURN_IF_ERROR(tx.Exec("UPDATE jobs SET state = 'pending', started_at = NULL, placement = '[]' WHERE id = ?", p));
    return Ok();
  }));
  wall_ += 10;
  Open();
  EXPECT_EQ(d_->reconciled(), 1);
  EXPECT_EQ(Stored().at(run).state, "running");
  EXPECT_EQ(Stored().at(run).started_at, static_cast<int64_t>(kEpoch) + 1);
  EXPECT_EQ(Get(late).state, "accepted");
  Step();
  EXPECT_EQ(Get(late).state, "running");
  EXPECT_EQ(Get(late).started_at, static_cast<int64_t>(kEpoch) + 11);
  // No GPU is held twice: 8 + 4 allocated.
  EXPECT_DOUBLE_EQ(d_->snapshot()->gpus_allocated, 12);
}

TEST_P(DaemonTest, TraceJobsArriveOnTheirOwn) {
  std::vector<Job> trace;
  for (int i = 0; i < 3; ++i) {
    Job j;
    j.id = kTraceIdBase + i;
    j.name = "t" + std::to_string(i);
    j.group = i % 2 ? "ads" : "search";
    j.num_gpu = 4;
    j.gpu_milli = 1000;
    j.submit_time_s = 100 * i;
    j.duration_s = 150;
    trace.push_back(j);
  }
  // A fresh store: the config digest is the store's.
  OpenFresh(SmallConfig(trace));
  wall_ += 150;
  Step();
  EXPECT_EQ(Get(kTraceIdBase + 0).state, "succeeded");
  EXPECT_EQ(Get(kTraceIdBase + 1).state, "running");
  EXPECT_EQ(Get(kTraceIdBase + 1).source, "trace");
  EXPECT_FALSE(d_->GetJob(kTraceIdBase + 2, kAdmin));  // not arrived yet
  // Lists are newest first by submission, though trace ids are the larger.
  const JobId api = Submit(kAds, Req(1, 1000));
  Step();
  for (const char* state : {"", "running"}) {
    auto l = d_->ListJobs({.state = state}, kAdmin);
    ASSERT_TRUE(l);
    ASSERT_GE(l->jobs.size(), 2u);
    EXPECT_EQ(l->jobs[0].id, api) << state;
    EXPECT_EQ(l->jobs[1].id, kTraceIdBase + 1) << state;
  }
  // Trace jobs are not the API's to cancel.
  auto cancel = d_->Cancel(kTraceIdBase + 1, kAdmin, kAudit);
  ASSERT_FALSE(cancel);
  EXPECT_EQ(cancel.error().status, 409);
  // Another config on this store is refused.
  d_.reset();
  DaemonConfig other = SmallConfig(trace);
  other.digest = "another";
  auto refused = Daemon::Open(other, db_->store(), [this] { return wall_; });
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("differs"), std::string::npos) << refused.error().message;
  EXPECT_NE(refused.error().message.find("(digest test-digest)"), std::string::npos) << refused.error().message;
  EXPECT_NE(refused.error().message.find("(digest another)"), std::string::npos) << refused.error().message;
}

TEST_P(DaemonTest, PricesFollowTheClustersUtilisation) {
  // The default market: base 4.0 per H100-hour, multiplier 1 until the first
  // announcements (lead 2 periods of 1 h), then the curve at the moving
  // average of utilisation, up by at most 0.1 a period. A full cluster for
  // 6 hours must raise the standard price; an idle one lowers it.
  DaemonConfig c = SmallConfig();
  c.market = market::DefaultMarketConfig();
  OpenFresh(std::move(c));
  auto standard = [&] {
    for (const Price& p : d_->snapshot()->prices)
      if (p.gpu_model == "H100" && p.tier == "standard") return p.per_gpu_hour;
    return -1.0;
  };
  Step();
  EXPECT_DOUBLE_EQ(standard(), 4.0);
  // A quote: 8 GPUs for an hour at 4.0 per GPU-hour, announced, so exact.
  auto q = d_->Quote("H100", "standard", 8, 3600);
  ASSERT_TRUE(q) << q.error().message;
  EXPECT_EQ((*q)["total"], "32.000000");
  EXPECT_EQ((*q)["upper_bound_total"], "32.000000");
  EXPECT_EQ((*q)["beyond_announced_s"], 0);
  EXPECT_EQ(d_->Quote("A100", "standard", 8, 3600).error().status, 404);
  EXPECT_EQ(d_->Quote("H100", "gold", 8, 3600).error().status, 400);
  Submit(kAds, Req(16, 100000));
  Submit(kSearch, Req(16, 100000));
  for (int h = 1; h <= 6; ++h) {
    wall_ += 3600;
    Step();
  }
  EXPECT_GT(standard(), 4.0);
  auto later = d_->Quote("H100", "standard", 8, 3600);
  ASSERT_TRUE(later) << later.error().message;
  EXPECT_GT(std::stod((*later)["total"].get<std::string>()), 32.0);  // the price rose with the utilisation
  EXPECT_FALSE(d_->snapshot()->price_history.empty());
  EXPECT_GE(d_->snapshot()->price_history[0].entries.size(), 6u);
}

TEST_P(DaemonTest, TheSchedulingThreadTakesInputsAndEventsWhenTheyAreDue) {
  // On its own thread, at 60x: a submission runs at once, and a trace job due
  // 30 daemon seconds (0.5 wall s) after the start runs by 0.8 s — the thread
  // sleeps until the next event, not a fixed second.
  std::vector<Job> trace;
  Job j;
  j.id = kTraceIdBase;
  j.name = "due";
  j.group = "ads";
  j.num_gpu = 1;
  j.gpu_milli = 1000;
  j.submit_time_s = 30;
  j.duration_s = 100000;
  trace.push_back(j);
  DaemonConfig c = SmallConfig(trace);
  c.speed = 60;
  // The clock stands at kEpoch while the store and the daemon open (slow on
  // a loaded PostgreSQL) and runs from when the thread starts.
  struct Clock {
    std::atomic<bool> running{false};
    std::chrono::steady_clock::time_point t0;
    double Elapsed() const { return running ? std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() : 0; }
  };
  auto clock = std::make_shared<Clock>();
  OpenFresh(std::move(c), [clock] { return kEpoch + clock->Elapsed(); });
  clock->t0 = std::chrono::steady_clock::now();
  clock->running = true;
  d_->Start();
  const JobId id = Submit(kAds, Req(1, 100000));
  auto state_at = [&](JobId job, double by_s) {
    std::string st;
    while (clock->Elapsed() < by_s) {
      auto v = d_->GetJob(job, kAdmin);
      st = v ? v->state : "";
      if (st == "running") break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return st;
  };
  // Without a wake on input the thread would sleep its full second; without
  // the due-time wake, until 1.0 s.
  EXPECT_EQ(state_at(id, 0.45), "running");
  EXPECT_EQ(state_at(kTraceIdBase, 0.9), "running");
  d_->Stop();
}

// --- Operator inputs: drains and quota changes ---------------------------

const Principal kOperator{.token_id = "op", .role = Role::kOperator};
const Audit kOpAudit{.method = "POST", .path = "/v1/nodes/x/drain"};

// The host a running job sits on (its placement's only node).
std::string HostOf(const JobView& v) {
  EXPECT_EQ(v.placement.size(), 1u) << v.ToJson().dump();
  return v.placement.empty() ? "" : v.placement[0]["node"].get<std::string>();
}

const NodeView* NodeNamed(const Snapshot& s, const std::string& name) {
  for (const NodeView& n : s.node_views)
    if (n.name == name) return &n;
  return nullptr;
}

TEST_P(DaemonTest, ADrainedNodeTakesNoNewWorkItsJobsRunOnAndResumeGivesItBack) {
  const JobId a = Submit(kAds, Req(8, 100, 100));
  wall_ += 1;
  Step();
  const std::string host = HostOf(Get(a));
  auto drained = d_->Drain(host, "fan replaced", kOperator, kOpAudit);
  ASSERT_TRUE(drained) << drained.error().message;
  EXPECT_EQ((*drained)["drained"], true);
  EXPECT_EQ((*drained)["drain_reason"], "fan replaced");
  EXPECT_EQ((*drained)["at"], static_cast<int64_t>(kEpoch) + 2);  // a batch of its own, after the last
  EXPECT_EQ(Get(a).state, "running");  // a drain evicts nothing
  {
    auto s = d_->snapshot();
    const NodeView* n = NodeNamed(*s, host);
    ASSERT_NE(n, nullptr);
    EXPECT_TRUE(n->drained);
    EXPECT_EQ(n->drain_reason, "fan replaced");
    EXPECT_EQ(n->gpus_free, 0);
    EXPECT_DOUBLE_EQ(n->gpus_allocated, 8);
  }
  // The job ends; the node stays out of service, and idle is not "allocated".
  wall_ += 100;
  Step();
  EXPECT_EQ(Get(a).state, "succeeded");
  {
    auto s = d_->snapshot();
    const NodeView* n = NodeNamed(*s, host);
    EXPECT_EQ(n->gpus_free, 0);
    EXPECT_DOUBLE_EQ(n->gpus_allocated, 0);
    EXPECT_DOUBLE_EQ(s->gpus_allocated, 0);
  }
  // Four 8-GPU jobs: three hosts take three, the fourth waits for the drained one.
  std::vector<JobId> b;
  for (int i = 0; i < 4; ++i) b.push_back(Submit(i % 2 ? kAds : kSearch, Req(8, 1000, 1000)));
  wall_ += 1;
  Step();
  int running = 0;
  for (JobId id : b) {
    const JobView v = Get(id);
    if (v.state != "running") continue;
    ++running;
    EXPECT_NE(HostOf(v), host);
  }
  EXPECT_EQ(running, 3);
  // Errors: twice, an unknown node, a member, resuming a node in service.
  auto twice = d_->Drain(host, "", kOperator, kOpAudit);
  ASSERT_FALSE(twice);
  EXPECT_EQ(twice.error().status, 409);
  auto unknown = d_->Drain("h9", "", kOperator, kOpAudit);
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().status, 404);
  auto member = d_->Drain(host, "", kAds, kOpAudit);
  ASSERT_FALSE(member);
  EXPECT_EQ(member.error().status, 403);
  const std::string other = HostOf(Get(b[0]).state == "running" ? Get(b[0]) : Get(b[1]));
  auto not_drained = d_->Resume(other, kOperator, kOpAudit);
  ASSERT_FALSE(not_drained);
  EXPECT_EQ(not_drained.error().status, 409);
  // Resume: the waiting job starts there in the resume's own batch.
  wall_ += 5;
  auto resumed = d_->Resume(host, kAdmin, kOpAudit);
  ASSERT_TRUE(resumed) << resumed.error().message;
  EXPECT_EQ((*resumed)["drained"], false);
  int on_host = 0;
  for (JobId id : b) {
    const JobView v = Get(id);
    EXPECT_EQ(v.state, "running");
    if (HostOf(v) == host) {
      ++on_host;
      EXPECT_EQ(v.started_at, (*resumed)["at"].get<int64_t>());
    }
  }
  EXPECT_EQ(on_host, 1);
  // Drain once more, then a restart replays every input to the same place.
  ASSERT_TRUE(d_->Drain(other, "disk", kOperator, kOpAudit));
  wall_ += 3;
  Step();
  const auto before = Stored();
  Open();
  EXPECT_EQ(d_->reconciled(), 0);
  ExpectSameJobs(before, Stored());
  for (JobId id : b) EXPECT_EQ(Get(id).placement, before.at(id).placement);
  auto s = d_->snapshot();
  EXPECT_FALSE(NodeNamed(*s, host)->drained);
  EXPECT_TRUE(NodeNamed(*s, other)->drained);
  EXPECT_EQ(NodeNamed(*s, other)->drain_reason, "disk");
}

TEST_P(DaemonTest, AQuotaChangeTakesEffectInItsBatchAndReplays) {
  // ads may hold 32 GPUs by borrowing search's idle floor; capped at a floor
  // of 8 with nothing to borrow, its second 8-GPU job waits on quota.
  QuotaChange q{.tenant = "ads", .resource = "gpu", .nominal = 8000, .borrowing_limit = 0};
  auto changed = d_->SetQuota(q, kAdmin, kOpAudit);
  ASSERT_TRUE(changed) << changed.error().message;
  EXPECT_EQ((*changed)["nominal"], 8000);
  {
    auto s = d_->snapshot();
    ASSERT_EQ(s->tenants.size(), 2u);
    for (const TenantView& t : s->tenants) EXPECT_DOUBLE_EQ(t.floor_gpus, t.name == "ads" ? 8 : 16) << t.name;
  }
  const JobId one = Submit(kAds, Req(8, 500, 500));
  const JobId two = Submit(kAds, Req(8, 500, 500));
  wall_ += 1;
  Step();
  EXPECT_EQ(Get(one).state, "running");
  EXPECT_EQ(Get(two).state, "pending");
  auto e = d_->Explain(two, kAds);
  ASSERT_TRUE(e);
  EXPECT_EQ((*e)["causes"][0]["kind"], "quota") << e->dump();
  // Floors may not promise more than the cluster: 8 + 25 > 32.
  auto over = d_->SetQuota({.tenant = "search", .resource = "gpu", .nominal = 25000}, kAdmin, kOpAudit);
  ASSERT_FALSE(over);
  EXPECT_EQ(over.error().status, 409);
  EXPECT_NE(over.error().message.find("32000"), std::string::npos) << over.error().message;
  auto unknown = d_->SetQuota({.tenant = "nobody", .resource = "gpu", .nominal = 0}, kAdmin, kOpAudit);
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().status, 404);
  auto resource = d_->SetQuota({.tenant = "ads", .resource = "gpu/A100", .nominal = 0}, kAdmin, kOpAudit);
  ASSERT_FALSE(resource);
  EXPECT_EQ(resource.error().status, 400);
  auto lending = d_->SetQuota({.tenant = "ads", .resource = "gpu", .nominal = 8000, .lending_limit = 9000}, kAdmin, kOpAudit);
  ASSERT_FALSE(lending);
  EXPECT_EQ(lending.error().status, 400);
  auto op = d_->SetQuota({.tenant = "ads", .resource = "gpu", .nominal = 16000}, kOperator, kOpAudit);
  ASSERT_FALSE(op);
  EXPECT_EQ(op.error().status, 403);
  // Borrowing allowed again: the waiting job starts in that change's batch.
  wall_ += 2;
  auto back = d_->SetQuota({.tenant = "ads", .resource = "gpu", .nominal = 8000}, kAdmin, kOpAudit);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(Get(two).state, "running");
  EXPECT_EQ(Get(two).started_at, (*back)["at"].get<int64_t>());
  const auto before = Stored();
  Open();
  EXPECT_EQ(d_->reconciled(), 0);
  ExpectSameJobs(before, Stored());
  for (const TenantView& t : d_->snapshot()->tenants) EXPECT_DOUBLE_EQ(t.floor_gpus, t.name == "ads" ? 8 : 16) << t.name;
}

// Floors may not promise more than the cluster has, per resource: CPU
// (cores as milli-CPU), a GPU model's own quota, a model the cluster lacks.
TEST_P(DaemonTest, QuotaChangesAreBoundedByTheClustersCapacityPerResource) {
  DaemonConfig c = SmallConfig();
  for (NodeSpec& n : c.nodes) n.cpu_milli = 64000;  // 4 x 64 cores
  std::vector<tenancy::TenantSpec> specs = {
      {.name = "org", .quotas = {{"gpu", {}}, {"gpu/H100", {}}, {"gpu/A100", {}}, {"cpu", {}}}},
      {.name = "ads", .parent = "org", .quotas = {{"gpu", {.nominal = 16000}}, {"gpu/H100", {.nominal = 16000}}, {"cpu", {.nominal = 0}}}},
      {.name = "search", .parent = "org", .quotas = {{"gpu", {.nominal = 16000}}, {"gpu/H100", {.nominal = 16000}}}},
  };
  auto tree = tenancy::TenantTree::Build(std::move(specs));
  ASSERT_TRUE(tree) << tree.error().message;
  c.tenants = std::make_shared<const tenancy::TenantTree>(std::move(*tree));
  c.digest = "capacity-test";
  OpenFresh(std::move(c));
  auto set = [&](std::string tenant, std::string resource, int64_t nominal) {
    return d_->SetQuota({.tenant = std::move(tenant), .resource = std::move(resource), .nominal = nominal}, kAdmin, kOpAudit);
  };
  // CPU: 200 of 256 cores, then 100 more would be 300.
  ASSERT_TRUE(set("ads", "cpu", 200000));
  auto cpu = set("search", "cpu", 100000);
  ASSERT_FALSE(cpu);
  EXPECT_EQ(cpu.error().status, 409);
  EXPECT_NE(cpu.error().message.find("256000"), std::string::npos) << cpu.error().message;
  ASSERT_TRUE(set("search", "cpu", 56000));  // exactly the rest
  // The H100 pool: 32 GPUs.
  ASSERT_TRUE(set("ads", "gpu/H100", 8000));
  ASSERT_TRUE(set("search", "gpu/H100", 24000));
  auto h100 = set("search", "gpu/H100", 25000);
  ASSERT_FALSE(h100);
  EXPECT_EQ(h100.error().status, 409);
  EXPECT_NE(h100.error().message.find("32000"), std::string::npos) << h100.error().message;
  // No A100 here: any A100 floor promises what the cluster does not have.
  auto a100 = set("ads", "gpu/A100", 1000);
  ASSERT_FALSE(a100);
  EXPECT_EQ(a100.error().status, 409);
  EXPECT_NE(a100.error().message.find("the cluster has 0"), std::string::npos) << a100.error().message;
  EXPECT_TRUE(set("ads", "gpu/A100", 0));  // lowering (or keeping) is fine
}

TEST_P(DaemonTest, WhatIfDrainsAndQuotaChangesRunOnAForkOnly) {
  for (int i = 0; i < 4; ++i) Submit(i % 2 ? kAds : kSearch, Req(8, 100, 100));
  const JobId waiting = Submit(kAds, Req(8, 100, 100));
  wall_ += 1;
  Step();
  ASSERT_EQ(Get(waiting).state, "pending");
  const int64_t t0 = static_cast<int64_t>(kEpoch) + 1;
  // Draining every host: it never starts.
  auto w = d_->Simulate({.drain = {"h0", "h1", "h2", "h3"}}, kOperator);
  ASSERT_TRUE(w) << w.error().message;
  ASSERT_EQ((*w)["jobs"].size(), 1u);
  EXPECT_EQ((*w)["jobs"][0]["start_before"], t0 + 100);
  EXPECT_TRUE((*w)["jobs"][0]["start_after"].is_null());
  EXPECT_TRUE((*w)["jobs"][0]["delta_s"].is_null());
  // Draining one: another host takes it when the first jobs end.
  auto one = d_->Simulate({.drain = {"h0"}}, kOperator);
  ASSERT_TRUE(one) << one.error().message;
  EXPECT_EQ((*one)["jobs"][0]["start_after"], t0 + 100);
  // ads without quota: never.
  auto q = d_->Simulate({.quota = {{.tenant = "ads", .resource = "gpu", .nominal = 0, .borrowing_limit = 0}}}, kAdmin);
  ASSERT_TRUE(q) << q.error().message;
  EXPECT_TRUE((*q)["jobs"][0]["start_after"].is_null());
  // The same checks as the live inputs; members may not ask.
  auto bad = d_->Simulate({.drain = {"h7"}}, kOperator);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().status, 404);
  auto member = d_->Simulate({.drain = {"h0"}}, kAds);
  ASSERT_FALSE(member);
  EXPECT_EQ(member.error().status, 403);
  auto op_quota = d_->Simulate({.quota = {{.tenant = "ads", .resource = "gpu", .nominal = 0}}}, kOperator);
  ASSERT_FALSE(op_quota);
  EXPECT_EQ(op_quota.error().status, 403);
  // Nothing changed.
  for (const NodeView& n : d_->snapshot()->node_views) EXPECT_FALSE(n.drained) << n.name;
  for (const TenantView& t : d_->snapshot()->tenants) EXPECT_DOUBLE_EQ(t.floor_gpus, 16);
  wall_ += 100;
  Step();
  EXPECT_EQ(Get(waiting).state, "running");
}

INSTANTIATE_TEST_SUITE_P(Backends, DaemonTest, ::testing::ValuesIn(store::testing::AllBackends()),
                         [](const auto& info) { return store::testing::BackendName(info.param); });

}  // namespace
}  // namespace tidal::server

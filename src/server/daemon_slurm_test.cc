// tidal serve on a real Slurm 22.05 (scripts/slurm-dev.sh: munged, slurmctld
// and four slurmd with 8 GPUs each, two per leaf switch, on loopback): the
// daemon imports the nodes and switches, places API jobs with its own
// scheduler, Slurm runs them on exactly those nodes, a job's end is Slurm's,
// a cancel reaches Slurm, and a restarted daemon finds its running jobs
// again (none twice) and takes the ends it missed. ctest label: slurm;
// skipped where slurm-wlm and munge are not installed.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <thread>

#include <fmt/format.h>

#include "server/daemon.h"
#include "store/store_testing.h"

namespace tidal::server {
namespace {

namespace fs = std::filesystem;

const Principal kAdmin{.token_id = "admin", .role = Role::kAdmin};
const Audit kAudit{.method = "POST", .path = "/v1/jobs"};

class DaemonSlurmTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("tidal-serve-slurm-" + std::to_string(::getpid()));
    slurm::ProcessRunner sh({}, std::chrono::seconds(60));
    auto started = sh.Run({std::string(TIDAL_SOURCE_DIR) + "/scripts/slurm-dev.sh", "start", (dir_ / "slurm").string()});
    if (!started || started->exit_code == 77) {
      skipped_ = started ? "no Slurm here: " + started->err : started.error().message;
      return;
    }
    ASSERT_EQ(started->exit_code, 0) << started->err;
    conf_ = started->out.substr(0, started->out.find('\n'));
    runner_ = std::make_unique<slurm::ProcessRunner>(std::map<std::string, std::string>{{"SLURM_CONF", conf_}});
    fs::create_directories(dir_ / "out");
    std::ofstream(dir_ / "serve.yaml") << "version: 1\n"
                                       << "name: slurm-test\n"
                                       << "binder:\n  kind: slurm\n  slurm_conf: " << conf_ << "\n"
                                       << "  script: \"echo tidal job {id} on $SLURM_JOB_NODELIST; sleep {runtime_s}\"\n"
                                       << "  output: " << (dir_ / "out" / "job-%j.out").string() << "\n"
                                       << "  poll_s: 0.1\n"
                                       << "clock:\n  speed: 1\n"
                                       << "scheduler:\n  placer: topo\n  queue: fifo-backfill\n  tenants: none\n";
  }
  static void TearDownTestSuite() {
    if (!conf_.empty()) {
      slurm::ProcessRunner sh;
      (void)sh.Run({std::string(TIDAL_SOURCE_DIR) + "/scripts/slurm-dev.sh", "stop", (dir_ / "slurm").string()});
    }
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  void SetUp() override {
    if (!skipped_.empty()) GTEST_SKIP() << skipped_;
    ASSERT_FALSE(conf_.empty()) << "the Slurm cluster did not start";
    auto db = store::testing::FreshStore(store::testing::Backend::kSqlite);
    ASSERT_TRUE(db) << db.error().message;
    db_ = std::move(*db);
    Open();
  }
  void TearDown() override {
    d_.reset();
    if (runner_) (void)runner_->Run({"scancel", "--partition=tidal"});
  }
  void Open() {
    d_.reset();
    auto config = ReadDaemonConfig((dir_ / "serve.yaml").string());
    ASSERT_TRUE(config) << config.error().message;
    auto d = Daemon::Open(std::move(*config), db_->store(), SystemWallClock());
    ASSERT_TRUE(d) << d.error().message;
    d_ = std::move(*d);
  }
  JobId Submit(int gpus, int64_t runtime_s) {
    SubmitRequest r;
    r.tenant = "ads";
    r.gpus = gpus;
    r.estimated_runtime_s = 600;
    r.runtime_s = runtime_s;
    auto s = d_->Submit(std::move(r), kAdmin, kAudit);
    EXPECT_TRUE(s) << (s ? "" : s.error().message);
    return s ? s->job.id : 0;
  }
  JobView Get(JobId id) {
    auto v = d_->GetJob(id, kAdmin);
    EXPECT_TRUE(v) << id;
    return v ? *v : JobView{};
  }
  // Steps the daemon until `done` (Slurm works asynchronously).
  bool StepUntil(const std::string& what, const std::function<bool()>& done, int seconds = 40) {
    for (int i = 0; i < seconds * 10; ++i) {
      EXPECT_TRUE(d_->Step());
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ADD_FAILURE() << "timed out waiting for " << what;
    return false;
  }
  // Slurm's live jobs by tidal id.
  std::map<int64_t, std::vector<slurm::SlurmJob>> SlurmLive() {
    slurm::SlurmBinder b(*runner_, {});
    auto jobs = b.Jobs();
    EXPECT_TRUE(jobs) << jobs.error().message;
    std::map<int64_t, std::vector<slurm::SlurmJob>> out;
    if (jobs)
      for (const slurm::SlurmJob& j : *jobs)
        if (slurm::IsLive(j)) out[*slurm::SlurmBinder::TidalId(j)].push_back(j);
    return out;
  }
  static std::vector<std::string> Nodes(const JobView& v) {
    std::vector<std::string> out;
    for (const auto& p : v.placement) out.push_back(p["node"].get<std::string>());
    std::sort(out.begin(), out.end());
    return out;
  }

  static inline fs::path dir_;
  static inline std::string conf_, skipped_;
  static inline std::unique_ptr<slurm::ProcessRunner> runner_;
  std::unique_ptr<store::testing::TestStore> db_;
  std::unique_ptr<Daemon> d_;
};

TEST_F(DaemonSlurmTest, TidalPlacesSlurmRunsAndTheEndIsSlurms) {
  auto s = d_->snapshot();
  EXPECT_EQ(s->nodes, 4);
  EXPECT_EQ(s->gpus, 32);
  // A 16-GPU gang: tidal's topology placer puts it on one leaf's two hosts.
  const JobId gang = Submit(16, 3);
  ASSERT_TRUE(StepUntil("the gang to run in tidal", [&] { return Get(gang).state == "running"; }));
  const std::vector<std::string> chosen = Nodes(Get(gang));
  ASSERT_EQ(chosen.size(), 2u);
  EXPECT_TRUE(chosen == (std::vector<std::string>{"n0", "n1"}) || chosen == (std::vector<std::string>{"n2", "n3"})) << chosen[0];
  ASSERT_TRUE(StepUntil("Slurm to run it on those nodes", [&] {
    auto live = SlurmLive();
    if (!live.contains(gang) || live[gang].front().state != "RUNNING") return false;
    std::vector<std::string> nodes = live[gang].front().nodes;
    std::sort(nodes.begin(), nodes.end());
    return nodes == chosen;
  }));
  // It ends when Slurm says so (3 s of sleep), not at its 600 s estimate.
  ASSERT_TRUE(StepUntil("the end from Slurm", [&] { return Get(gang).state == "succeeded"; }));
  const JobView done = Get(gang);
  ASSERT_TRUE(done.started_at && done.ended_at);
  EXPECT_LT(*done.ended_at - *done.started_at, 60);
  // A cancel reaches Slurm.
  const JobId long_job = Submit(8, 300);
  ASSERT_TRUE(StepUntil("it to run in Slurm", [&] {
    auto live = SlurmLive();
    return live.contains(long_job) && live[long_job].front().state == "RUNNING";
  }));
  ASSERT_TRUE(d_->Cancel(long_job, kAdmin, kAudit));
  ASSERT_TRUE(StepUntil("Slurm to cancel it", [&] { return Get(long_job).state == "cancelled" && !SlurmLive().contains(long_job); }));
}

TEST_F(DaemonSlurmTest, ARestartedDaemonFindsItsJobsAndTheEndsItMissed) {
  const JobId runs = Submit(8, 300);
  const JobId short_job = Submit(8, 2);
  ASSERT_TRUE(StepUntil("both to run in Slurm", [&] {
    auto live = SlurmLive();
    return live.contains(runs) && live.contains(short_job) && live[runs].front().state == "RUNNING" &&
           live[short_job].front().state == "RUNNING";
  }));
  const auto placed = Nodes(Get(runs));
  // tidal goes away (no clean stop); Slurm goes on, and the short job ends.
  d_.reset();
  std::this_thread::sleep_for(std::chrono::seconds(4));
  Open();
  // The running one is found again (not submitted twice); the end it missed
  // is taken from Slurm and recorded.
  EXPECT_EQ(Get(runs).state, "running");
  EXPECT_EQ(Nodes(Get(runs)), placed);
  EXPECT_EQ(Get(short_job).state, "succeeded");
  auto live = SlurmLive();
  ASSERT_TRUE(live.contains(runs));
  EXPECT_EQ(live[runs].size(), 1u);
  EXPECT_FALSE(live.contains(short_job));
  // And a third open replays the recorded end to the same state, with no
  // Slurm job left to reconcile it from.
  Open();
  EXPECT_EQ(Get(short_job).state, "succeeded");
  EXPECT_EQ(Get(runs).state, "running");
  EXPECT_EQ(SlurmLive()[runs].size(), 1u);
}

// A run tidal has running that Slurm holds (a placement that failed, or an
// admin's requeuehold) is placed again at the next poll, on the same nodes.
TEST_F(DaemonSlurmTest, ARunSlurmHoldsIsPlacedAgain) {
  const JobId id = Submit(8, 300);
  ASSERT_TRUE(StepUntil("it to run in Slurm", [&] {
    auto live = SlurmLive();
    return live.contains(id) && live[id].front().state == "RUNNING";
  }));
  const int64_t sid = SlurmLive()[id].front().id;
  const auto nodes = Nodes(Get(id));
  ASSERT_TRUE(runner_->Run({"scontrol", "requeuehold", std::to_string(sid)}));
  ASSERT_TRUE(StepUntil("it to run again", [&] {
    auto live = SlurmLive();
    return live.contains(id) && live[id].front().state == "RUNNING" && live[id].front().restarts == 1;
  }));
  auto live = SlurmLive();
  EXPECT_EQ(live[id].size(), 1u);
  EXPECT_EQ(live[id].front().id, sid);
  std::vector<std::string> again = live[id].front().nodes;
  std::sort(again.begin(), again.end());
  EXPECT_EQ(again, nodes);
  EXPECT_EQ(Get(id).state, "running");
}

// A user's own sbatch in tidal's partition: job_submit.lua holds it, tidal
// adopts it (its account is the tenant, nodes x GRES its GPUs), places it
// with its own scheduler (one leaf for two hosts) and releases that very
// Slurm job, which runs the user's script; its end is Slurm's. A user's job
// cancelled while it waits in tidal's queue leaves tidal's queue too.
TEST_F(DaemonSlurmTest, AUsersOwnSbatchIsHeldAdoptedAndRunWhereTidalChose) {
  const std::string log = (dir_ / "out" / "user-%j.out").string();
  auto out = runner_->Run({"sbatch", "--parsable", "-p", "tidal", "-N", "2", "--gres=gpu:h100:8", "-t", "5", "-A", "team-a", "-J",
                           "users-job", "-o", log, "--wrap", "hostname; sleep 2"});
  ASSERT_TRUE(out && out->exit_code == 0) << (out ? out->err : out.error().message);
  const int64_t sid = std::stoll(out->out);
  JobId id = 0;
  auto adopted = [&](int64_t slurm_id, JobId* tidal_id) {
    for (const auto& [tid, js] : SlurmLive()) {
      for (const slurm::SlurmJob& j : js) {
        if (j.id == slurm_id) {
          *tidal_id = tid;
          return true;
        }
      }
    }
    return false;
  };
  ASSERT_TRUE(StepUntil("tidal to adopt the user's job", [&] { return adopted(sid, &id); }));
  JobView v = Get(id);
  EXPECT_EQ(v.name, "users-job");
  EXPECT_EQ(v.tenant, "team-a");
  ASSERT_TRUE(StepUntil("it to run in Slurm on tidal's nodes", [&] {
    auto live = SlurmLive();
    return live.contains(id) && live[id].front().state == "RUNNING";
  }));
  auto live = SlurmLive();
  EXPECT_EQ(live[id].size(), 1u);
  EXPECT_EQ(live[id].front().id, sid);  // the user's job itself, not a copy
  std::vector<std::string> nodes = live[id].front().nodes;
  std::sort(nodes.begin(), nodes.end());
  EXPECT_EQ(nodes, Nodes(Get(id)));
  EXPECT_TRUE(nodes == (std::vector<std::string>{"n0", "n1"}) || nodes == (std::vector<std::string>{"n2", "n3"})) << nodes[0];
  ASSERT_TRUE(StepUntil("its end from Slurm", [&] { return Get(id).state == "succeeded"; }));
  std::ifstream printed(dir_ / "out" / fmt::format("user-{}.out", sid));
  std::string host;
  EXPECT_TRUE(std::getline(printed, host)) << "the user's script did not run";

  // All 32 GPUs while an API job holds 8: adopted, it waits in tidal's queue;
  // the user cancels it in Slurm and tidal withdraws it.
  const JobId blocker = Submit(8, 300);
  ASSERT_TRUE(StepUntil("the blocker to run", [&] { return Get(blocker).state == "running"; }));
  out = runner_->Run({"sbatch", "--parsable", "-p", "tidal", "-N", "4", "--gres=gpu:8", "-t", "5", "-o", log, "--wrap", "sleep 1"});
  ASSERT_TRUE(out && out->exit_code == 0);
  const int64_t big = std::stoll(out->out);
  JobView w;
  ASSERT_TRUE(StepUntil("tidal to queue it", [&] {
    JobId bid = 0;
    if (!adopted(big, &bid)) return false;
    w = Get(bid);
    return w.state == "pending";
  }));
  EXPECT_EQ(w.tenant, "root");  // no account: the user
  ASSERT_TRUE(runner_->Run({"scancel", std::to_string(big)}));
  ASSERT_TRUE(StepUntil("tidal to withdraw it", [&] { return Get(w.id).state == "cancelled"; }));
  EXPECT_EQ(Get(blocker).state, "running");
}

// A restarted daemon finds an adopted job still in its queue and places
// that Slurm job, not a new one, when its turn comes.
TEST_F(DaemonSlurmTest, AnAdoptedJobQueuedAcrossARestartRunsAsTheUsersJob) {
  const JobId blocker = Submit(8, 300);
  ASSERT_TRUE(StepUntil("the blocker to run", [&] { return Get(blocker).state == "running"; }));
  auto out = runner_->Run({"sbatch", "--parsable", "-p", "tidal", "-N", "4", "--gres=gpu:8", "-t", "5", "-o",
                           (dir_ / "out" / "queued-%j.out").string(), "--wrap", "sleep 1"});
  ASSERT_TRUE(out && out->exit_code == 0);
  const int64_t sid = std::stoll(out->out);
  JobId id = 0;
  ASSERT_TRUE(StepUntil("tidal to queue it", [&] {
    for (const auto& [tid, js] : SlurmLive()) {
      if (js.front().id == sid) id = tid;
    }
    return id != 0 && Get(id).state == "pending";
  }));
  Open();  // tidal restarts
  ASSERT_TRUE(d_->Cancel(blocker, kAdmin, kAudit));
  ASSERT_TRUE(StepUntil("the adopted job to run", [&] {
    auto live = SlurmLive();
    return live.contains(id) && live[id].front().state == "RUNNING";
  })) << "tidal: " << Get(id).state << ", blocker " << Get(blocker).state << ", Slurm: "
      << (SlurmLive().contains(id) ? SlurmLive()[id].front().state + " " + SlurmLive()[id].front().reason + " prio " + std::to_string(SlurmLive()[id].front().priority) : "-");
  auto live = SlurmLive();
  EXPECT_EQ(live[id].size(), 1u);
  EXPECT_EQ(live[id].front().id, sid);
  ASSERT_TRUE(StepUntil("its end", [&] { return Get(id).state == "succeeded"; }));
}

// A user's job tidal cannot take (no GPUs asked) is left held, and its
// comment says why.
TEST_F(DaemonSlurmTest, AUsersJobTidalRefusesSaysWhyInItsComment) {
  auto out = runner_->Run({"sbatch", "--parsable", "-p", "tidal", "-N", "1", "-t", "5", "-o", (dir_ / "out" / "refused-%j.out").string(),
                           "--wrap", "sleep 1"});
  ASSERT_TRUE(out && out->exit_code == 0);
  const std::string sid = out->out.substr(0, out->out.find('\n'));
  ASSERT_TRUE(StepUntil("tidal to refuse it", [&] {
    auto c = runner_->Run({"squeue", "-h", "-j", sid, "-o", "%k %Q"});
    return c && c->out.find("tidal refused: it asks no GPU") != std::string::npos;
  }));
  auto c = runner_->Run({"squeue", "-h", "-j", sid, "-o", "%T %Q"});
  ASSERT_TRUE(c);
  EXPECT_EQ(c->out.substr(0, c->out.find('\n')), "PENDING 0");
}

// Nodes: a drain through tidal's API drains the node in Slurm; one Slurm's
// admin drains is cordoned in tidal (no job goes there) and uncordoned when
// Slurm resumes it.
TEST_F(DaemonSlurmTest, DrainsGoBothWays) {
  const Audit op_audit{.method = "POST", .path = "/v1/nodes/n1/drain"};
  ASSERT_TRUE(d_->Drain("n1", "cooling", kAdmin, op_audit));
  slurm::SlurmBinder b(*runner_, {});
  auto slurm_state = [&](const std::string& name) -> std::optional<slurm::SlurmNode> {
    auto nodes = b.Nodes();
    if (!nodes) return std::nullopt;
    for (const slurm::SlurmNode& n : *nodes)
      if (n.name == name) return n;
    return std::nullopt;
  };
  auto n1 = slurm_state("n1");
  ASSERT_TRUE(n1);
  EXPECT_TRUE(n1->drained());
  EXPECT_EQ(n1->reason, "tidal: cooling");
  // Slurm's admin drains n3: tidal cordons it with Slurm's reason.
  ASSERT_TRUE(runner_->Run({"scontrol", "update", "NodeName=n3", "State=DRAIN", "Reason=psu"}));
  auto drained = [&](const std::string& name) {
    for (const NodeView& v : d_->snapshot()->node_views)
      if (v.name == name) return v.drained;
    return false;
  };
  ASSERT_TRUE(StepUntil("tidal to cordon n3", [&] { return drained("n3"); }));
  for (const NodeView& v : d_->snapshot()->node_views) {
    if (v.name == "n3") {
      EXPECT_EQ(v.drain_reason, "slurm: psu");
    }
  }
  // Two 8-GPU jobs: n1 and n3 are out, so they go to n0 and n2.
  const JobId a = Submit(8, 300), c = Submit(8, 300);
  ASSERT_TRUE(StepUntil("both to run", [&] { return Get(a).state == "running" && Get(c).state == "running"; }));
  std::vector<std::string> used = Nodes(Get(a));
  used.push_back(Nodes(Get(c)).front());
  std::sort(used.begin(), used.end());
  EXPECT_EQ(used, (std::vector<std::string>{"n0", "n2"}));
  // Slurm resumes n3; tidal resumes n1 (and so does Slurm).
  ASSERT_TRUE(runner_->Run({"scontrol", "update", "NodeName=n3", "State=RESUME"}));
  ASSERT_TRUE(d_->Resume("n1", kAdmin, op_audit));
  ASSERT_TRUE(StepUntil("both back in service", [&] {
    auto s1 = slurm_state("n1");
    return !drained("n3") && !drained("n1") && s1 && !s1->drained();
  }));
}

}  // namespace
}  // namespace tidal::server

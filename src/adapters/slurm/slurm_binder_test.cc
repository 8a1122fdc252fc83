// The Slurm binder against a real Slurm 22.05: munged, slurmctld and four
// slurmd (8 GPUs of type h100 each, two leaf switches) started on loopback
// by scripts/slurm-dev.sh for this suite and stopped after it. Jobs are
// short real scripts (srun hostname, sleep). Skipped where slurm-wlm and
// munge are not installed (the script exits 77). ctest label: slurm.
#include "adapters/slurm/binder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <thread>

#include "adapters/slurm/cluster_import.h"
#include "plugins/registry.h"
#include "scheduler/scheduler.h"

namespace tidal::slurm {
namespace {

using ::testing::HasSubstr;
using ::testing::UnorderedElementsAreArray;

namespace fs = std::filesystem;

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class SlurmTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("tidal-slurm-test-" + std::to_string(::getpid()));
    ProcessRunner sh({}, std::chrono::seconds(60));
    auto started = sh.Run({std::string(TIDAL_SOURCE_DIR) + "/scripts/slurm-dev.sh", "start", dir_.string(), "4", "8"});
    if (!started) {
      skipped_ = started.error().message;
      return;
    }
    if (started->exit_code == 77) {
      skipped_ = "no Slurm here: " + started->err;
      return;
    }
    ASSERT_EQ(started->exit_code, 0) << started->err << started->out;
    conf_ = started->out.substr(0, started->out.find('\n'));
    runner_ = std::make_unique<ProcessRunner>(std::map<std::string, std::string>{{"SLURM_CONF", conf_}});
    fs::create_directories(dir_ / "out");
    binder_ = std::make_unique<SlurmBinder>(*runner_, BinderOptions{.output = (dir_ / "out" / "job-%j.out").string(),
                                                                    .workdir = (dir_ / "out").string()});
  }
  static void TearDownTestSuite() {
    if (!conf_.empty()) {
      ProcessRunner sh;
      (void)sh.Run({std::string(TIDAL_SOURCE_DIR) + "/scripts/slurm-dev.sh", "stop", dir_.string()});
    }
    binder_.reset();
    runner_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  void SetUp() override {
    if (!skipped_.empty()) GTEST_SKIP() << skipped_;
    ASSERT_TRUE(binder_) << "the Slurm cluster did not start; see " << dir_ / "log";
  }
  void TearDown() override {
    if (!binder_) return;
    // Leave the cluster empty for the next test.
    auto jobs = binder_->Jobs();
    if (!jobs) return;
    for (const SlurmJob& j : *jobs)
      if (j.state == "PENDING" || j.state == "RUNNING") (void)binder_->Cancel(j.id);
    WaitFor("every job gone", [] {
      auto js = binder_->Jobs();
      if (!js) return false;
      for (const SlurmJob& j : *js)
        if (j.state == "PENDING" || j.state == "RUNNING" || j.state == "COMPLETING") return false;
      return true;
    });
  }

  // Polls until `done` (Slurm starts, ends and requeues asynchronously).
  static bool WaitFor(const std::string& what, const std::function<bool()>& done, int seconds = 40) {
    for (int i = 0; i < seconds * 5; ++i) {
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    ADD_FAILURE() << "timed out waiting for " << what;
    return false;
  }
  static std::optional<SlurmJob> Find(int64_t id) {
    auto jobs = binder_->Jobs();
    EXPECT_TRUE(jobs) << jobs.error().message;
    if (!jobs) return std::nullopt;
    for (const SlurmJob& j : *jobs)
      if (j.id == id) return j;
    return std::nullopt;
  }
  static bool InState(int64_t id, const std::string& state) {
    auto j = Find(id);
    return j && j->state == state;
  }
  static ImportedCluster Import() {
    auto nodes = binder_->Nodes();
    EXPECT_TRUE(nodes) << nodes.error().message;
    const std::string topo = ReadFile(fs::path(conf_).parent_path() / "topology.conf");
    auto c = ImportCluster(nodes ? *nodes : std::vector<SlurmNode>{}, "tidal", "", topo);
    EXPECT_TRUE(c) << c.error().message;
    return c ? *c : ImportedCluster{};
  }
  static Status Scontrol(std::vector<std::string> args) {
    args.insert(args.begin(), "scontrol");
    TIDAL_ASSIGN_OR_RETURN(CommandOutput out, runner_->Run(args));
    if (out.exit_code != 0) return MakeError(ErrorCode::kIo, "{}: {}", CommandLine(args), out.err);
    return Ok();
  }

  static inline fs::path dir_;
  static inline std::string conf_, skipped_;
  static inline std::unique_ptr<ProcessRunner> runner_;
  static inline std::unique_ptr<SlurmBinder> binder_;
};

// The leaf switch of each imported node.
std::map<std::string, std::string> LeafOf(const topo::Topology& t) {
  std::map<std::string, std::string> out;
  for (int32_t h = 0; h < t.num_hosts(); ++h) {
    const topo::DomainId host = t.host(h);
    out[t.DomainName(host)] = t.DomainName(t.parent(host));
  }
  return out;
}

TEST_F(SlurmTest, ImportsTheNodesTheirGpusAndTheSwitchTree) {
  ImportedCluster c = Import();
  ASSERT_EQ(c.nodes.size(), 4u);
  for (const NodeSpec& n : c.nodes) {
    EXPECT_EQ(n.gpu_count, 8) << n.name;
    EXPECT_EQ(n.gpu_model, "H100") << n.name;  // the GRES type, upper case
    EXPECT_EQ(n.cpu_milli, 8000) << n.name;
    EXPECT_EQ(n.memory_mib, 4000) << n.name;
  }
  ASSERT_TRUE(c.topology);
  const auto leaf = LeafOf(*c.topology);
  EXPECT_EQ(leaf.at("n0"), leaf.at("n1"));
  EXPECT_EQ(leaf.at("n2"), leaf.at("n3"));
  EXPECT_NE(leaf.at("n0"), leaf.at("n2"));
  auto cluster = ClusterState::Build(c.nodes);
  ASSERT_TRUE(cluster) << cluster.error().message;
  auto attached = cluster->AttachTopology(c.topology);
  EXPECT_TRUE(attached) << attached.error().message;
  EXPECT_TRUE(c.drained.empty());
  // A node drained in Slurm comes in drained: tidal cordons it.
  ASSERT_TRUE(Scontrol({"update", "nodename=n3", "state=drain", "reason=tidal-test"}));
  EXPECT_THAT(Import().drained, ::testing::ElementsAre("n3"));
  ASSERT_TRUE(Scontrol({"update", "nodename=n3", "state=resume"}));
  // Back in service once slurmctld hears from its slurmd again (until then
  // it is NOT_RESPONDING, which tidal counts as out of service too).
  EXPECT_TRUE(WaitFor("n3 in service", [] { return Import().drained.empty(); }));
}

// tidal's topology placer picks two hosts under one leaf for a 16-GPU gang;
// the held job runs on exactly those nodes, its srun on both.
TEST_F(SlurmTest, AGangRunsOnTheNodesTidalChoseUnderOneSwitch) {
  ImportedCluster c = Import();
  auto cluster = ClusterState::Build(c.nodes);
  ASSERT_TRUE(cluster);
  ASSERT_TRUE(cluster->AttachTopology(c.topology));
  auto profile = plugins::MakePolicyProfile("topo", nullptr);
  ASSERT_TRUE(profile) << profile.error().message;
  Scheduler sched(std::move(*cluster), std::move(*profile), 1);
  tidal::Job gang;
  gang.id = 1001;
  gang.name = "gang";
  gang.source = "test";
  gang.num_gpu = 16;
  gang.gpu_milli = kMilliPerGpu;
  gang.single_node = false;
  gang.duration_s = 60;
  auto placed = sched.ScheduleAndBind(gang);
  ASSERT_TRUE(placed) << placed.error().message;
  std::vector<std::string> chosen;
  for (const NodeAssignment& a : (*placed)->assignments) chosen.push_back(sched.cluster().node_name(a.node));
  ASSERT_EQ(chosen.size(), 2u);
  const auto leaf = LeafOf(*c.topology);
  EXPECT_EQ(leaf.at(chosen[0]), leaf.at(chosen[1]));

  auto id = binder_->SubmitHeld({.tidal_id = gang.id, .nodes = 2, .gpus_per_node = 8, .gpu_type = "h100",
                                 .script = "srun hostname; srun sh -c 'echo $SLURMD_NODENAME $CUDA_VISIBLE_DEVICES'; sleep 30"});
  ASSERT_TRUE(id) << id.error().message;
  auto held = Find(*id);
  ASSERT_TRUE(held);
  EXPECT_EQ(held->state, "PENDING");
  EXPECT_EQ(held->priority, 0);  // held: Slurm's scheduler leaves it alone
  EXPECT_EQ(SlurmBinder::TidalId(*held), gang.id);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  EXPECT_TRUE(InState(*id, "PENDING")) << "a held job must not start by itself";
  ASSERT_TRUE(binder_->Place(*id, chosen));
  ASSERT_TRUE(WaitFor("the gang to run", [&] { return InState(*id, "RUNNING"); }));
  EXPECT_THAT(Find(*id)->nodes, UnorderedElementsAreArray(chosen));
  const fs::path out = dir_ / "out" / ("job-" + std::to_string(*id) + ".out");
  ASSERT_TRUE(WaitFor("both nodes to report", [&] {
    const std::string text = ReadFile(out);
    return text.find(chosen[0] + " 0,1,2,3,4,5,6,7") != std::string::npos &&
           text.find(chosen[1] + " 0,1,2,3,4,5,6,7") != std::string::npos;
  }));
}

// Preemption through tidal: requeue (held), then placed again elsewhere.
TEST_F(SlurmTest, APreemptedJobIsRequeuedHeldAndPlacedAgain) {
  auto id = binder_->SubmitHeld({.tidal_id = 2001, .nodes = 1, .gpus_per_node = 8, .script = "sleep 60"});
  ASSERT_TRUE(id) << id.error().message;
  ASSERT_TRUE(binder_->Place(*id, {"n1"}));
  ASSERT_TRUE(WaitFor("it to run on n1", [&] { return InState(*id, "RUNNING"); }));
  ASSERT_TRUE(binder_->Requeue(*id));
  ASSERT_TRUE(WaitFor("it to be pending and held", [&] {
    auto j = Find(*id);
    return j && j->state == "PENDING" && j->priority == 0;
  }));
  EXPECT_EQ(Find(*id)->restarts, 1);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  EXPECT_TRUE(InState(*id, "PENDING")) << "a requeued job stays held until tidal places it";
  ASSERT_TRUE(binder_->Place(*id, {"n2"}));
  ASSERT_TRUE(WaitFor("it to run on n2", [&] {
    auto j = Find(*id);
    return j && j->state == "RUNNING" && j->nodes == std::vector<std::string>{"n2"};
  }));
}

// tidal's view was stale: the chosen node is busy. Slurm keeps the job
// pending (its reason says why); past the timeout tidal holds it again and
// places it elsewhere.
TEST_F(SlurmTest, AJobPendingOnBusyNodesIsHeldAgainAndReplanned) {
  auto busy = binder_->SubmitHeld({.tidal_id = 3001, .nodes = 1, .gpus_per_node = 8, .script = "sleep 60"});
  ASSERT_TRUE(busy);
  ASSERT_TRUE(binder_->Place(*busy, {"n0"}));
  ASSERT_TRUE(WaitFor("the first to run", [&] { return InState(*busy, "RUNNING"); }));
  auto late = binder_->SubmitHeld({.tidal_id = 3002, .nodes = 1, .gpus_per_node = 8, .script = "sleep 5"});
  ASSERT_TRUE(late);
  ASSERT_TRUE(binder_->Place(*late, {"n0"}));
  const int64_t released = static_cast<int64_t>(::time(nullptr));
  std::this_thread::sleep_for(std::chrono::seconds(3));
  auto j = Find(*late);
  ASSERT_TRUE(j);
  EXPECT_EQ(j->state, "PENDING");
  EXPECT_GT(j->priority, 0);                      // released, not held
  EXPECT_THAT(j->reason, ::testing::AnyOf("Resources", "Priority"));  // why it waits, in Slurm's words
  auto jobs = binder_->Jobs();
  ASSERT_TRUE(jobs);
  const std::map<int64_t, int64_t> at = {{*late, released}, {*busy, released}};
  EXPECT_THAT(StuckPending(*jobs, at, released + 2, 60), ::testing::IsEmpty());
  EXPECT_THAT(StuckPending(*jobs, at, released + 60, 60), ::testing::ElementsAre(*late));
  ASSERT_TRUE(binder_->Hold(*late));
  EXPECT_EQ(Find(*late)->priority, 0);
  ASSERT_TRUE(binder_->Place(*late, {"n3"}));
  ASSERT_TRUE(WaitFor("it to run on n3", [&] {
    auto k = Find(*late);
    return k && k->state == "RUNNING" && k->nodes == std::vector<std::string>{"n3"};
  }));
  ASSERT_TRUE(WaitFor("it to finish", [&] { return InState(*late, "COMPLETED"); }));
}

// After a restart of tidal (a fresh binder) or of slurmctld, tidal's jobs
// are found again by their comment, in the state and on the nodes they have.
TEST_F(SlurmTest, JobsAreFoundAgainAfterARestartOfEitherSide) {
  auto a = binder_->SubmitHeld({.tidal_id = 4001, .nodes = 1, .gpus_per_node = 4, .script = "sleep 60"});
  auto b = binder_->SubmitHeld({.tidal_id = 4002, .nodes = 1, .gpus_per_node = 4, .script = "sleep 60"});
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(binder_->Place(*a, {"n2"}));
  ASSERT_TRUE(WaitFor("a to run", [&] { return InState(*a, "RUNNING"); }));
  // slurmctld stopped (SIGTERM: it saves its state) and started again.
  const fs::path pid_file = dir_ / "run" / "slurmctld.pid";
  const pid_t pid = std::stoi(ReadFile(pid_file));
  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  ASSERT_TRUE(WaitFor("slurmctld to stop", [&] { return ::kill(pid, 0) != 0; }));
  auto restarted = runner_->Run({"slurmctld", "-f", conf_});
  ASSERT_TRUE(restarted && restarted->exit_code == 0) << (restarted ? restarted->err : restarted.error().message);
  // A fresh binder: tidal restarted too, knowing only which tidal ids it handed over.
  SlurmBinder fresh(*runner_, binder_->options());
  Reconciliation r;
  std::string last_error;
  ASSERT_TRUE(WaitFor("slurmctld to answer", [&] {
    auto jobs = fresh.Jobs();
    if (!jobs) {
      last_error = jobs.error().message;
      return false;
    }
    r = ReconcileJobs({4001, 4002}, *jobs);
    return r.lost.empty();
  })) << last_error;
  EXPECT_TRUE(r.extra.empty());
  EXPECT_EQ(r.found[4001].id, *a);
  EXPECT_EQ(r.found[4001].state, "RUNNING");
  EXPECT_EQ(r.found[4001].nodes, std::vector<std::string>{"n2"});
  EXPECT_EQ(r.found[4002].id, *b);
  EXPECT_EQ(r.found[4002].state, "PENDING");
  EXPECT_EQ(r.found[4002].priority, 0);  // still held: nothing ran it behind tidal's back
  ASSERT_TRUE(fresh.Place(*b, {"n2"}));  // 4 + 4 GPUs share n2
  ASSERT_TRUE(WaitFor("b to run", [&] { return InState(*b, "RUNNING"); }));
}

// SIGKILL of slurmctld right after a submission: Slurm may forget the newest
// job (its state save had not run) and give its id to the next one. The
// reconciliation finds it lost by its tidal id; submitted again, every tidal
// job is there exactly once.
TEST_F(SlurmTest, AJobSlurmLostInACrashIsSubmittedAgainAndNoneTwice) {
  auto a = binder_->SubmitHeld({.tidal_id = 6001, .nodes = 1, .gpus_per_node = 2, .script = "sleep 60"});
  ASSERT_TRUE(a);
  std::this_thread::sleep_for(std::chrono::seconds(6));  // long enough for a state save
  auto b = binder_->SubmitHeld({.tidal_id = 6002, .nodes = 1, .gpus_per_node = 2, .script = "sleep 60"});
  ASSERT_TRUE(b);
  const pid_t pid = std::stoi(ReadFile(dir_ / "run" / "slurmctld.pid"));
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  ASSERT_TRUE(WaitFor("slurmctld to die", [&] { return ::kill(pid, 0) != 0; }));
  auto restarted = runner_->Run({"slurmctld", "-f", conf_});
  ASSERT_TRUE(restarted && restarted->exit_code == 0);
  const std::set<int64_t> expected = {6001, 6002};
  std::optional<Reconciliation> r;
  ASSERT_TRUE(WaitFor("slurmctld to answer", [&] {
    auto jobs = binder_->Jobs();
    if (jobs) r = ReconcileJobs(expected, *jobs);
    return jobs.has_value();
  }));
  EXPECT_TRUE(r->found.contains(6001));  // saved before the crash
  for (int64_t lost : r->lost) {
    EXPECT_EQ(lost, 6002);  // only the newest can be lost
    auto again = binder_->SubmitHeld({.tidal_id = lost, .nodes = 1, .gpus_per_node = 2, .script = "sleep 60"});
    ASSERT_TRUE(again) << again.error().message;
  }
  for (int64_t extra : r->extra) ASSERT_TRUE(binder_->Cancel(extra));
  auto jobs = binder_->Jobs();
  ASSERT_TRUE(jobs);
  Reconciliation after = ReconcileJobs(expected, *jobs);
  EXPECT_TRUE(after.lost.empty());
  EXPECT_TRUE(after.extra.empty());
  std::map<int64_t, int> live;
  for (const SlurmJob& j : *jobs)
    if (IsLive(j)) ++live[*SlurmBinder::TidalId(j)];
  EXPECT_EQ(live, (std::map<int64_t, int>{{6001, 1}, {6002, 1}}));
}

TEST_F(SlurmTest, ErrorsQuoteTheCommandAndSlurmsWords) {
  auto bad = binder_->Place(999999, {"n0"});
  ASSERT_FALSE(bad);
  EXPECT_THAT(bad.error().message, HasSubstr("scontrol update JobId=999999"));
  EXPECT_THAT(bad.error().message, HasSubstr("Invalid job id"));
  auto type = binder_->SubmitHeld({.tidal_id = 5001, .gpu_type = "h100;rm"});
  ASSERT_FALSE(type);
  EXPECT_THAT(type.error().message, HasSubstr("not a Slurm GRES type name"));
  SlurmBinder wrong(*runner_, {.partition = "no-such-partition"});
  auto partition = wrong.SubmitHeld({.tidal_id = 5002, .nodes = 1, .gpus_per_node = 1});
  ASSERT_FALSE(partition);
  EXPECT_THAT(partition.error().message, HasSubstr("sbatch --hold"));
  EXPECT_THAT(partition.error().message, HasSubstr("nvalid partition"));
}

}  // namespace
}  // namespace tidal::slurm

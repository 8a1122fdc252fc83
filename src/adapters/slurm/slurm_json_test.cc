// Slurm's JSON as tidal reads it: the real 22.05 output kept in testdata/
// (README there), the later OpenAPI shapes, a bad-input table naming the
// element and field, the GRES strings, and a fuzz body over mutations of
// the real output (never a crash; an error always says where).
#include "adapters/slurm/slurm_json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>

#include "adapters/slurm/binder.h"
#include "adapters/slurm/cluster_import.h"

namespace tidal::slurm {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string Fixture(const std::string& name) {
  std::ifstream in(std::string(TIDAL_SOURCE_DIR) + "/src/adapters/slurm/testdata/" + name);
  std::stringstream s;
  s << in.rdbuf();
  EXPECT_FALSE(s.str().empty()) << name;
  return s.str();
}

TEST(SqueueJson, ReadsTheReal2205Output) {
  auto jobs = ParseSqueueJson(Fixture("squeue-22.05.json"));
  ASSERT_TRUE(jobs) << jobs.error().message;
  ASSERT_EQ(jobs->size(), 4u);
  const SlurmJob& running = (*jobs)[0];
  EXPECT_EQ(running.id, 1);
  EXPECT_EQ(running.name, "tidal-1");
  EXPECT_EQ(running.comment, "tidal:1");
  EXPECT_EQ(running.partition, "tidal");
  EXPECT_EQ(running.state, "RUNNING");
  EXPECT_EQ(running.reason, "None");
  EXPECT_THAT(running.nodes, ElementsAre("n0"));
  EXPECT_THAT(running.required_nodes, ElementsAre("n0"));
  EXPECT_EQ(running.node_count, 1);
  EXPECT_EQ(running.tres_per_node, "gres:gpu:h100:8");
  EXPECT_GT(running.priority, 0);
  EXPECT_GT(running.start_time, running.submit_time - 1);
  const SlurmJob& held = (*jobs)[1];
  EXPECT_EQ(held.state, "PENDING");
  EXPECT_EQ(held.reason, "JobHeldUser");
  EXPECT_EQ(held.priority, 0);
  EXPECT_EQ(held.restarts, 1);  // requeued once
  EXPECT_TRUE(held.nodes.empty());
  EXPECT_EQ((*jobs)[2].state, "COMPLETED");
  EXPECT_EQ((*jobs)[2].exit_code, 0);
  EXPECT_EQ(SlurmBinder::TidalId((*jobs)[2]), 3);
  EXPECT_EQ(SlurmBinder::TidalId((*jobs)[3]), std::nullopt);  // comment "other"
  EXPECT_EQ(running.user, "root");
  EXPECT_EQ(running.account, "");
  EXPECT_EQ(running.time_limit_min, 0);  // null: none given
}

TEST(SinfoJson, ReadsTheReal2205Output) {
  auto nodes = ParseSinfoJson(Fixture("sinfo-22.05.json"));
  ASSERT_TRUE(nodes) << nodes.error().message;
  ASSERT_EQ(nodes->size(), 4u);
  const SlurmNode& n0 = (*nodes)[0];
  EXPECT_EQ(n0.name, "n0");
  EXPECT_THAT(n0.state, ElementsAre("mixed"));
  EXPECT_EQ(n0.cpus, 8);
  EXPECT_EQ(n0.real_memory_mib, 4000);
  EXPECT_EQ(n0.gpus, 8);
  EXPECT_EQ(n0.gpu_type, "h100");
  EXPECT_THAT(n0.partitions, ElementsAre("tidal"));
  EXPECT_FALSE(n0.drained());
  const SlurmNode& n1 = (*nodes)[1];
  EXPECT_THAT(n1.state, ElementsAre("idle", "drain"));
  EXPECT_TRUE(n1.drained());
  EXPECT_EQ(n1.reason, "fan replaced");
}

// Later Slurm (OpenAPI v0.0.39+): numbers as {"set", "infinite", "number"},
// states as lists, exit codes as objects.
TEST(SqueueJson, ReadsTheLaterShapes) {
  const std::string text = R"({"jobs": [{"job_id": 7, "name": "tidal-7", "comment": "tidal:7",
    "job_state": ["PENDING", "REQUEUED"], "state_reason": "JobHeldUser", "nodes": "", "required_nodes": "gpu[01-02]",
    "priority": {"set": true, "infinite": false, "number": 0}, "node_count": {"set": true, "number": 2},
    "submit_time": {"set": true, "number": 1700000000}, "start_time": {"set": false, "number": 0},
    "time_limit": {"set": false, "infinite": true, "number": 0}, "restart_cnt": 2,
    "exit_code": {"status": ["SUCCESS"], "return_code": {"set": true, "number": 0}}}], "errors": []})";
  auto jobs = ParseSqueueJson(text);
  ASSERT_TRUE(jobs) << jobs.error().message;
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_EQ((*jobs)[0].state, "PENDING");
  EXPECT_THAT((*jobs)[0].required_nodes, ElementsAre("gpu01", "gpu02"));
  EXPECT_EQ((*jobs)[0].node_count, 2);
  EXPECT_EQ((*jobs)[0].priority, 0);
  EXPECT_EQ((*jobs)[0].submit_time, 1700000000);
  EXPECT_EQ((*jobs)[0].start_time, 0);  // unset
  EXPECT_EQ((*jobs)[0].restarts, 2);
  EXPECT_EQ((*jobs)[0].time_limit_min, 0);  // infinite
  auto limited = ParseSqueueJson(R"({"jobs": [{"job_id": 8, "job_state": "PENDING", "time_limit": {"set": true, "number": 90},
    "account": "team-a", "user_name": "ana", "tres_per_node": "gres/gpu:h100=8"}]})");
  ASSERT_TRUE(limited) << limited.error().message;
  EXPECT_EQ((*limited)[0].time_limit_min, 90);
  EXPECT_EQ((*limited)[0].account, "team-a");
  EXPECT_EQ((*limited)[0].user, "ana");
  EXPECT_EQ(GresOfTres((*limited)[0].tres_per_node), "gpu:h100:8");
  auto nodes = ParseSinfoJson(R"({"nodes": [{"name": "gpu01", "state": ["IDLE", "DRAIN"], "cpus": 64,
    "real_memory": 512000, "gres": "gpu:a100:4(S:0-1),nic:2", "partitions": ["p"]}]})");
  ASSERT_TRUE(nodes) << nodes.error().message;
  EXPECT_THAT((*nodes)[0].state, ElementsAre("idle", "drain"));
  EXPECT_EQ((*nodes)[0].gpus, 4);
  EXPECT_EQ((*nodes)[0].gpu_type, "a100");
}

TEST(SlurmJson, BadInputTable) {
  struct Row {
    std::string text;
    bool sinfo;
    std::string message;
  };
  const std::vector<Row> rows = {
      {"", false, "squeue --json: not JSON"},
      {"[1, 2]", false, "the top level is not an object"},
      {R"({"nodes": []})", false, "no 'jobs' list"},
      {R"({"jobs": {}})", false, "no 'jobs' list"},
      {R"({"jobs": [], "errors": [{"error": "Unable to contact slurm controller"}]})", false,
       "Slurm reports an error: {\"error\":\"Unable to contact slurm controller\"}"},
      {R"({"jobs": [7]})", false, "jobs[0].: not an object"},
      {R"({"jobs": [{"name": "x"}]})", false, "jobs[0].job_id: missing or not positive"},
      {R"({"jobs": [{"job_id": "7"}]})", false, "jobs[0].job_id: expected a number, got string"},
      {R"({"jobs": [{"job_id": 7}]})", false, "jobs[0] (job 7).job_state: missing"},
      {R"({"jobs": [{"job_id": 7, "job_state": 3}]})", false, "job_state: expected a string or a list, got number"},
      {R"({"jobs": [{"job_id": 7, "job_state": "RUNNING", "nodes": "n[3-1]"}]})", false, "jobs[0] (job 7).nodes:"},
      {R"({"jobs": [{"job_id": 7, "job_state": "RUNNING", "node_count": -1}]})", false, "node_count: -1 is out of range"},
      {R"({"jobs": [{"job_id": 7, "job_state": "RUNNING", "priority": 1.5}]})", false, "priority: 1.5 is not a whole number"},
      {R"({"jobs": [{"job_id": 7, "job_state": "RUNNING", "priority": {"set": true}}]})", false, "an object without 'number'"},
      {R"({"jobs": [{"job_id": 7, "job_state": "RUNNING", "time_limit": -5}]})", false, "time_limit: -5 is out of range"},
      {R"({"jobs": [{"job_id": 7, "job_state": "RUNNING", "account": 3}]})", false, "account: expected a string, got number"},
      {R"({"jobs": [{"job_id": 7, "job_state": "RUNNING", "user_name": []}]})", false, "user_name: expected a string"},
      {R"({"nodes": [{"state": "idle"}]})", true, "nodes[0].name: missing or empty"},
      {R"({"nodes": [{"name": "n0", "cpus": -4}]})", true, "nodes[0] (n0).cpus: -4 is out of range"},
      {R"({"nodes": [{"name": "n0", "gres": "gpu:h100:eight"}]})", true, "nodes[0] (n0).gres: GRES 'gpu:h100:eight': the count"},
      {R"({"nodes": [{"name": "n0", "gres": "gpu:a:b:8"}]})", true, "expected gpu:COUNT or gpu:TYPE:COUNT"},
      {R"({"nodes": [{"name": "n0", "partitions": [1]}]})", true, "partitions: a list element is not a string"},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.text);
    if (r.sinfo) {
      auto got = ParseSinfoJson(r.text);
      ASSERT_FALSE(got);
      EXPECT_THAT(got.error().message, HasSubstr(r.message));
    } else {
      auto got = ParseSqueueJson(r.text);
      ASSERT_FALSE(got);
      EXPECT_THAT(got.error().message, HasSubstr(r.message));
    }
  }
}

TEST(SlurmJson, GpuGresStrings) {
  struct Row {
    std::string gres;
    int32_t gpus;
    std::string type;
  };
  for (const Row& r : std::vector<Row>{{"", 0, ""},
                                       {"(null)", 0, ""},
                                       {"gpu:8", 8, ""},
                                       {"gpu:h100:8", 8, "h100"},
                                       {"gpu:h100:8(S:0-1)", 8, "h100"},
                                       {"gpu:h100:8(IDX:0-7)", 8, "h100"},
                                       {"gpu:a100:2,gpu:h100:6", 8, ""},
                                       {"gpu:h100:4,gpu:h100:4", 8, "h100"},
                                       {"nic:2,gpu:l40s:4", 4, "l40s"},
                                       {"gpu:h100:0(IDX:N/A)", 0, ""}}) {
    SCOPED_TRACE(r.gres);
    auto g = ParseGpuGres(r.gres);
    ASSERT_TRUE(g) << g.error().message;
    EXPECT_EQ(g->first, r.gpus);
    EXPECT_EQ(g->second, r.type);
  }
  EXPECT_FALSE(ParseGpuGres("gpu:h100:99999999"));
  EXPECT_FALSE(ParseGpuGres("gpu:-1"));
  EXPECT_FALSE(ParseGpuGres("gpu:8:"));  // a trailing empty field is not dropped
}

// Fuzz body: byte-level mutations of the real outputs (deletions, flips,
// duplications) never crash the parsers, and every refusal names its source.
TEST(SlurmJson, MutatedRealOutputNeverCrashes) {
  std::mt19937_64 rng(20261202);
  for (const auto& [file, sinfo] : {std::pair{"squeue-22.05.json", false}, std::pair{"sinfo-22.05.json", true}}) {
    const std::string base = Fixture(file);
    for (int i = 0; i < 3000; ++i) {
      std::string s = base;
      const int edits = 1 + static_cast<int>(rng() % 4);
      for (int e = 0; e < edits && !s.empty(); ++e) {
        const size_t at = rng() % s.size();
        switch (rng() % 3) {
          case 0: s.erase(at, 1 + rng() % 8); break;
          case 1: s[at] = static_cast<char>(rng() % 256); break;
          default: s.insert(at, s.substr(at, std::min<size_t>(16, s.size() - at))); break;
        }
      }
      if (sinfo) {
        auto r = ParseSinfoJson(s);
        if (!r) {
          EXPECT_THAT(r.error().message, HasSubstr("sinfo --json"));
        }
      } else {
        auto r = ParseSqueueJson(s);
        if (!r) {
          EXPECT_THAT(r.error().message, HasSubstr("squeue --json"));
        }
      }
    }
  }
}

// Reconciliation by tidal id: a lost job, a duplicate live job (keep the
// lowest Slurm id), an ended one with a requeued live one, and a stranger.
TEST(SlurmBinder, ReconcileMatchesByTidalIdNotSlurmId) {
  auto job = [](int64_t id, std::string comment, std::string state, int64_t end = 0) {
    return SlurmJob{.id = id, .comment = std::move(comment), .state = std::move(state), .end_time = end};
  };
  const std::vector<SlurmJob> jobs = {
      job(10, "tidal:1", "RUNNING"),  job(11, "tidal:2", "PENDING"),        job(12, "tidal:2", "PENDING"),
      job(13, "tidal:3", "COMPLETED", 500), job(14, "tidal:3", "FAILED", 400), job(15, "tidal:9", "RUNNING"),
      job(16, "other", "RUNNING"),    job(17, "tidal:9", "COMPLETED", 10),  job(18, "tidal:x", "RUNNING"),
  };
  Reconciliation r = ReconcileJobs({1, 2, 3, 4}, jobs);
  EXPECT_EQ(r.found.at(1).id, 10);
  EXPECT_EQ(r.found.at(2).id, 11);
  EXPECT_EQ(r.found.at(3).id, 13);  // the newest end
  EXPECT_EQ(r.found.at(3).state, "COMPLETED");
  EXPECT_THAT(r.lost, ElementsAre(4));
  EXPECT_THAT(r.extra, ElementsAre(12, 15));  // the duplicate, and a live job of a tidal id it does not expect
  EXPECT_TRUE(IsLive(job(1, "", "COMPLETING")));
  EXPECT_FALSE(IsLive(job(1, "", "NODE_FAIL")));
}

// The import: the real sinfo output with a topology.conf like
// scripts/slurm-dev.sh writes; partitions, drained nodes, GPU models.
TEST(SlurmImport, NodesModelsDrainsAndTheSwitchTree) {
  auto nodes = ParseSinfoJson(Fixture("sinfo-22.05.json"));
  ASSERT_TRUE(nodes);
  const std::string topo = "SwitchName=leaf0 Nodes=n[0-1]\nSwitchName=leaf1 Nodes=n[2-3]\nSwitchName=spine Switches=leaf[0-1]\n";
  auto c = ImportCluster(*nodes, "tidal", "", topo);
  ASSERT_TRUE(c) << c.error().message;
  ASSERT_EQ(c->nodes.size(), 4u);
  EXPECT_EQ(c->nodes[0].name, "n0");
  EXPECT_EQ(c->nodes[0].gpu_count, 8);
  EXPECT_EQ(c->nodes[0].gpu_model, "H100");
  EXPECT_EQ(c->nodes[0].cpu_milli, 8000);
  EXPECT_EQ(c->nodes[0].memory_mib, 4000);
  EXPECT_THAT(c->drained, ElementsAre("n1"));
  ASSERT_TRUE(c->topology);
  EXPECT_EQ(c->topology->num_hosts(), 4);
  EXPECT_EQ(c->topology->gpus_under(c->topology->root()), 32);
  // Without a topology file: one flat pool.
  auto flat = ImportCluster(*nodes, "", "");
  ASSERT_TRUE(flat);
  EXPECT_FALSE(flat->topology);
  // Another partition has none of them.
  auto other = ImportCluster(*nodes, "batch", "");
  ASSERT_FALSE(other);
  EXPECT_THAT(other.error().message, HasSubstr("no node in partition 'batch'"));
  // Untyped GRES need a default model; a node listed twice counts once.
  std::vector<SlurmNode> untyped = {{.name = "a", .state = {"idle"}, .cpus = 4, .gpus = 2, .partitions = {"p"}},
                                    {.name = "a", .state = {"idle"}, .cpus = 4, .gpus = 2, .partitions = {"p"}},
                                    {.name = "cpu", .state = {"down"}, .cpus = 4, .partitions = {"p"}}};
  auto refused = ImportCluster(untyped, "p", "");
  ASSERT_FALSE(refused);
  EXPECT_THAT(refused.error().message, HasSubstr("node 'a' has 2 GPUs of no GRES type"));
  auto typed = ImportCluster(untyped, "p", "A100");
  ASSERT_TRUE(typed) << typed.error().message;
  ASSERT_EQ(typed->nodes.size(), 2u);
  EXPECT_EQ(typed->nodes[0].gpu_model, "A100");
  EXPECT_EQ(typed->nodes[1].gpu_model, "");  // a CPU node has no model
  EXPECT_THAT(typed->drained, ElementsAre("cpu"));  // down
  // A topology naming a host Slurm does not list is refused.
  auto stray = ImportCluster(*nodes, "tidal", "", "SwitchName=leaf0 Nodes=n[0-4]\n");
  EXPECT_FALSE(stray);
  EXPECT_TRUE(OutOfService({.name = "x", .state = {"idle", "not_responding"}}));
  EXPECT_FALSE(OutOfService({.name = "x", .state = {"mixed"}}));
}

// The binder's commands and how it reads their answers, on canned output.
class FakeRunner : public CommandRunner {
 public:
  Result<CommandOutput> Run(const std::vector<std::string>& argv) override {
    calls.push_back(CommandLine(argv));
    if (answers.empty()) return CommandOutput{};
    CommandOutput out = answers.front();
    answers.erase(answers.begin());
    return out;
  }
  std::vector<std::string> calls;
  std::vector<CommandOutput> answers;
};

TEST(SlurmBinder, SubmitReadsTheParsableIdAndRefusesAnythingElse) {
  struct Row {
    std::string out;
    int64_t id;  // 0: an error
  };
  for (const Row& r : std::vector<Row>{{"12\n", 12}, {"12;tidaldev\n", 12}, {"7", 7}, {"Submitted batch job 5\n", 0},
                                       {"12x\n", 0}, {"0\n", 0}, {"-3\n", 0}, {"\n", 0}}) {
    SCOPED_TRACE(r.out);
    FakeRunner run;
    run.answers = {{.exit_code = 0, .out = r.out}};
    SlurmBinder b(run, {.partition = "p", .output = "/o", .workdir = "/w"});
    auto id = b.SubmitHeld({.tidal_id = 3, .nodes = 2, .gpus_per_node = 8, .gpu_type = "h100", .time_limit_s = 61, .script = "sleep 1"});
    if (r.id == 0) {
      ASSERT_FALSE(id);
      EXPECT_THAT(id.error().message, HasSubstr("not a job id"));
    } else {
      ASSERT_TRUE(id) << id.error().message;
      EXPECT_EQ(*id, r.id);
    }
    ASSERT_EQ(run.calls.size(), 1u);
    EXPECT_EQ(run.calls[0],
              "sbatch --hold --parsable --job-name=tidal-3 --comment=tidal:3 --partition=p --nodes=2 --ntasks-per-node=1 --requeue "
              "--output=/o --chdir=/w --gres=gpu:h100:8 --time=2 '--wrap=sleep 1'");
  }
}

// Numbers at their edges: a job with no nodes yet, a raw wait status as
// the exit code (256: exit 1).
TEST(SqueueJson, EdgeValues) {
  auto jobs = ParseSqueueJson(R"({"jobs": [{"job_id": 3, "job_state": "PENDING", "node_count": 0, "exit_code": 256}]})");
  ASSERT_TRUE(jobs) << jobs.error().message;
  EXPECT_EQ((*jobs)[0].node_count, 0);
  EXPECT_EQ((*jobs)[0].exit_code, 256);
}

TEST(SlurmBinder, GpuTypesAreNamesNotShell) {
  for (const std::string bad : {"h100;rm", "a b", "h100$", "x/y"}) {
    FakeRunner run;
    SlurmBinder b(run, {});
    auto r = b.SubmitHeld({.tidal_id = 1, .gpus_per_node = 1, .gpu_type = bad});
    ASSERT_FALSE(r) << bad;
    EXPECT_THAT(r.error().message, HasSubstr("not a Slurm GRES type name"));
    EXPECT_TRUE(run.calls.empty()) << bad;
  }
  for (const std::string good : {"gh200_nvl", "h100-sxm", "b200.x", "A100"}) {
    FakeRunner run;
    run.answers = {{.exit_code = 0, .out = "4\n"}};
    SlurmBinder b(run, {});
    EXPECT_TRUE(b.SubmitHeld({.tidal_id = 1, .gpus_per_node = 1, .gpu_type = good})) << good;
  }
}

TEST(SlurmBinder, CommandsAndTheirFailures) {
  FakeRunner run;
  SlurmBinder b(run, {});
  ASSERT_TRUE(b.Place(5, {"n1", "n3"}));
  ASSERT_TRUE(b.Requeue(5));
  ASSERT_TRUE(b.Hold(5));
  ASSERT_TRUE(b.Cancel(5));
  ASSERT_TRUE(b.DrainNode("n2", ""));
  ASSERT_TRUE(b.ResumeNode("n2"));
  EXPECT_THAT(run.calls, ElementsAre("scontrol update JobId=5 ReqNodeList=n1,n3 NumNodes=2 StartTime=now", "scontrol release 5",
                                     "scontrol requeuehold 5", "scontrol hold 5", "scancel 5",
                                     "scontrol update NodeName=n2 State=DRAIN 'Reason=drained through tidal'",
                                     "scontrol update NodeName=n2 State=RESUME"));
  run.answers = {{.exit_code = 1, .err = "scontrol: error: Invalid job id specified\n"}};
  auto bad = b.Place(9, {"n0"});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "'scontrol update JobId=9 ReqNodeList=n0 NumNodes=1 StartTime=now' failed (exit 1): "
                                 "scontrol: error: Invalid job id specified");
  EXPECT_EQ(run.calls.back(), "scontrol update JobId=9 ReqNodeList=n0 NumNodes=1 StartTime=now");  // no release after a failed update
  EXPECT_FALSE(b.Place(9, {}));
  EXPECT_FALSE(b.SubmitHeld({.tidal_id = 0}));
  EXPECT_FALSE(b.SubmitHeld({.tidal_id = 1, .nodes = 0}));
  EXPECT_FALSE(b.SubmitHeld({.tidal_id = 1, .gpus_per_node = -1}));
  // Jobs() keeps tidal's jobs only.
  FakeRunner listing;
  listing.answers = {{.exit_code = 0, .out = Fixture("squeue-22.05.json")}};
  SlurmBinder c(listing, {});
  auto jobs = c.Jobs();
  ASSERT_TRUE(jobs) << jobs.error().message;
  EXPECT_EQ(jobs->size(), 3u);
  EXPECT_EQ(listing.calls[0], "squeue --json --all");
  // Adoptable() keeps held jobs of tidal's partition that are not tidal's;
  // SetComment quotes the comment as one argument.
  FakeRunner held;
  held.answers = {{.exit_code = 0, .out = R"({"jobs": [
    {"job_id": 1, "job_state": "PENDING", "partition": "tidal", "priority": 0, "comment": ""},
    {"job_id": 2, "job_state": "PENDING", "partition": "tidal", "priority": 0, "comment": "tidal:5"},
    {"job_id": 3, "job_state": "PENDING", "partition": "tidal", "priority": 0, "comment": "tidal refused: no GPU"},
    {"job_id": 4, "job_state": "PENDING", "partition": "tidal", "priority": 17, "comment": ""},
    {"job_id": 5, "job_state": "RUNNING", "partition": "tidal", "priority": 0, "comment": ""},
    {"job_id": 6, "job_state": "PENDING", "partition": "other", "priority": 0, "comment": ""},
    {"job_id": 7, "job_state": "PENDING", "partition": "tidal", "priority": 0, "comment": "mine"}]})"},
                  {.exit_code = 0}};
  SlurmBinder d(held, {.partition = "tidal"});
  auto adoptable = d.Adoptable();
  ASSERT_TRUE(adoptable) << adoptable.error().message;
  ASSERT_EQ(adoptable->size(), 2u);
  EXPECT_EQ((*adoptable)[0].id, 1);
  EXPECT_EQ((*adoptable)[1].id, 7);
  ASSERT_TRUE(d.SetComment(1, "tidal:12"));
  EXPECT_EQ(held.calls.back(), "scontrol update JobId=1 Comment=tidal:12");
}

TEST(SlurmJson, GresOfTres) {
  EXPECT_EQ(GresOfTres("gres:gpu:h100:8"), "gpu:h100:8");
  EXPECT_EQ(GresOfTres("gres/gpu:h100=8"), "gpu:h100:8");
  EXPECT_EQ(GresOfTres("gres/gpu=4"), "gpu:4");
  EXPECT_EQ(GresOfTres("gres:gpu:2,gres:nic:1"), "gpu:2,nic:1");
  EXPECT_EQ(GresOfTres(""), "");
  EXPECT_EQ(GresOfTres("gpu:1"), "gpu:1");
  EXPECT_EQ(ParseGpuGres(GresOfTres("gres:gpu:2,gres:nic:1"))->first, 2);
}

TEST(SlurmBinder, StuckPendingIsReleasedAndStillPendingPastTheTimeout) {
  std::vector<SlurmJob> jobs = {
      {.id = 1, .state = "PENDING", .reason = "Resources", .priority = 100},
      {.id = 2, .state = "PENDING", .reason = "JobHeldUser", .priority = 0},
      {.id = 3, .state = "RUNNING", .priority = 100},
      {.id = 4, .state = "PENDING", .reason = "Resources", .priority = 100},
      {.id = 5, .state = "PENDING", .reason = "Priority", .priority = 100},
  };
  const std::map<int64_t, int64_t> released = {{1, 100}, {2, 100}, {3, 100}, {4, 150}};
  EXPECT_THAT(StuckPending(jobs, released, 160, 60), ElementsAre(1));
  EXPECT_THAT(StuckPending(jobs, released, 210, 60), ElementsAre(1, 4));  // 4 exactly at the timeout
  EXPECT_TRUE(StuckPending(jobs, released, 159, 60).empty());
}

}  // namespace
}  // namespace tidal::slurm

// The serve config reader: the shipped default loads, and every bad input is
// refused with the file, the line where it is known, and what to do.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "server/daemon_config.h"

namespace tidal::server {
namespace {

namespace fs = std::filesystem;

const std::string kSrc = TIDAL_SOURCE_DIR;

std::string Write(const std::string& name, const std::string& text) {
  const fs::path dir = fs::temp_directory_path() / ("tidal-serve-config-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path p = dir / name;
  std::ofstream(p) << text;
  return p.string();
}

TEST(DaemonConfig, TheEmbeddedDefaultLoads) {
  auto c = ReadDaemonConfig(kSrc + "/data/serve/default.yaml");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->name, "embedded-dgx-h100");
  EXPECT_EQ(c->nodes.size(), 127u);
  EXPECT_EQ(c->trace.size(), 26936u);
  EXPECT_EQ(c->trace.front().submit_time_s, 0);
  EXPECT_EQ(c->trace.front().id, kTraceIdBase);
  EXPECT_DOUBLE_EQ(c->speed, 60);
  EXPECT_EQ(c->placer, "topo");
  EXPECT_EQ(c->queue, QueuePolicy::kTidal);
  ASSERT_TRUE(c->tenants);
  ASSERT_TRUE(c->market);
  EXPECT_EQ(c->digest.size(), 64u);
  for (size_t i = 1; i < c->trace.size(); ++i) ASSERT_LE(*c->trace[i - 1].submit_time_s, *c->trace[i].submit_time_s);
}

TEST(DaemonConfig, TheDigestFollowsTheContentNotTheComments) {
  const std::string topo = kSrc + "/data/topologies/dgx-h100-superpod.yaml";
  const std::string base = "version: 1\ntopology: " + topo + "\nscheduler: {placer: bestfit, queue: fifo-backfill, tenants: none}\n";
  auto a = ReadDaemonConfig(Write("a.yaml", base));
  auto b = ReadDaemonConfig(Write("b.yaml", "# a comment\n" + base + "\n# another\n"));
  auto c = ReadDaemonConfig(Write("c.yaml", base + "clock: {speed: 2}\n"));
  ASSERT_TRUE(a && b && c) << (a ? (b ? c.error().message : b.error().message) : a.error().message);
  EXPECT_EQ(a->digest, b->digest);
  EXPECT_NE(a->digest, c->digest);
}

TEST(DaemonConfig, BadInputTable) {
  const std::string topo = kSrc + "/data/topologies/dgx-h100-superpod.yaml";
  const std::string trace = kSrc + "/data/colocate/philly-2017-10-09-2weeks.csv";
  struct Row {
    std::string text;
    std::string message;  // a substring of the error
  };
  const std::vector<Row> table = {
      {"version: 2\ntopology: " + topo + "\n", "starts with 'version: 1'"},
      {"topology: " + topo + "\n", "starts with 'version: 1'"},
      {"version: 1\n", "'topology:'"},
      {"version: 1\ntopology: " + topo + "\ncolour: red\n", "unknown key 'colour'"},
      {"version: 1\ntopology: /nonexistent/topo.yaml\n", "/nonexistent/topo.yaml"},
      {"version: 1\ntopology: [unclosed\n", "not valid YAML"},
      {"version: 1\ntopology: " + topo + "\ntrace: {format: philly}\n", "needs jobs:"},
      {"version: 1\ntopology: " + topo + "\ntrace: {jobs: " + trace + ", speed: 2}\n", "unknown key trace.speed"},
      {"version: 1\ntopology: " + topo + "\ntrace: {jobs: " + trace + ", load: 200}\n", "trace.load must be in [0, 100]"},
      {"version: 1\ntopology: " + topo + "\ntrace: {jobs: " + trace + ", limit: -1}\n", "trace.limit must be >= 0"},
      {"version: 1\ntopology: " + topo + "\nclock: {speed: 0}\n", "clock.speed must be in (0, 1e6]"},
      {"version: 1\ntopology: " + topo + "\nclock: {rate: 2}\n", "unknown key clock.rate"},
      {"version: 1\ntopology: " + topo + "\nscheduler: {placer: nope, tenants: none, queue: fifo}\n", "scheduler.placer"},
      {"version: 1\ntopology: " + topo + "\nscheduler: {placer: fgd, tenants: none, queue: fifo}\n", "fgd"},
      {"version: 1\ntopology: " + topo + "\nscheduler: {queue: nope}\n", "nope"},
      {"version: 1\ntopology: " + topo + "\nscheduler: {queue: tidal, tenants: none}\n", "needs tenants"},
      {"version: 1\ntopology: " + topo + "\nscheduler: {queue: tidal}\n", "proportional needs a trace with a tenant column"},
      {"version: 1\ntopology: " + topo + "\nscheduler: {start_estimate_samples: 0, tenants: none, queue: fifo}\n", "start_estimate_samples"},
      {"version: 1\ntopology: " + topo + "\nscheduler: {seeds: 1}\n", "unknown key scheduler.seeds"},
      {"version: 1\ntopology: " + topo + "\nscheduler: {tenants: /nonexistent/tenants.yaml, queue: fifo}\n", "/nonexistent/tenants.yaml"},
      {"version: 1\ntopology: " + topo + "\nscheduler: {tenants: none, queue: fifo}\nmarket: /nonexistent/m.yaml\n", "/nonexistent/m.yaml"},
      // A real Slurm as the cluster (binder:).
      {"version: 1\nbinder: slurm\n", "'binder:' is a map"},
      {"version: 1\nbinder: {kind: kubernetes, slurm_conf: x}\n", "binder.kind must be slurm"},
      {"version: 1\nbinder: {kind: slurm}\n", "binder.slurm_conf (the cluster's slurm.conf) is required"},
      {"version: 1\nbinder: {kind: slurm, slurm_conf: " + topo + ", pol_s: 1}\n", "unknown key binder.pol_s"},
      {"version: 1\nbinder: {kind: slurm, slurm_conf: " + topo + ", poll_s: 0}\n", "binder.poll_s must be in [0.1, 600]"},
      {"version: 1\nbinder: {kind: slurm, slurm_conf: " + topo + ", script: ''}\n", "binder.script is empty"},
      {"version: 1\nbinder: {kind: slurm, slurm_conf: " + topo + "}\ntopology: " + topo + "\n", "drop 'topology:' and 'trace:'"},
      {"version: 1\nbinder: {kind: slurm, slurm_conf: /nonexistent/slurm.conf}\nscheduler: {tenants: none, queue: fifo}\n",
       "binder.slurm_conf /nonexistent/slurm.conf is not a file"},
  };
  int i = 0;
  for (const Row& row : table) {
    SCOPED_TRACE(row.text);
    const std::string path = Write("bad" + std::to_string(i++) + ".yaml", row.text);
    auto c = ReadDaemonConfig(path);
    ASSERT_FALSE(c);
    EXPECT_NE(c.error().message.find(row.message), std::string::npos) << c.error().message;
    if (row.message.find("/nonexistent") == std::string::npos) {
      EXPECT_NE(c.error().message.find(path), std::string::npos) << "names the file: " << c.error().message;
    }
  }
  EXPECT_FALSE(ReadDaemonConfig("/nonexistent/serve.yaml"));
}

}  // namespace
}  // namespace tidal::server

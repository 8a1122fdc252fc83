// Crash and restart of the real binary: `tidal serve` is killed with SIGKILL
// at seeded random moments while four clients submit jobs, and restarted on
// the same store. After each restart every acknowledged submission is there
// (same tenant, same request), a retried idempotency key never makes a
// second job, and no GPU is held by two running jobs.
#include <gtest/gtest.h>
#include <httplib.h>
#include <spawn.h>
#include <sys/wait.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <regex>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "store/store_testing.h"

extern char** environ;

namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

struct Proc {
  pid_t pid = -1;
  int port = 0;
};

// Starts `tidal serve` and waits for its "listening on" line.
Proc Start(const fs::path& dir, const std::string& store, int round) {
  const std::string out = (dir / ("serve-" + std::to_string(round) + ".out")).string();
  const std::string config = (dir / "serve.yaml").string();
  const std::string tokenf = (dir / "admin-token").string();
  std::vector<std::string> args = {TIDAL_BINARY, "serve", "--config", config, "--store", store, "--listen", "127.0.0.1:0",
                                   "--admin-token-file", tokenf, "--dashboard", (dir / "none").string()};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, (out + ".err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  Proc p;
  EXPECT_EQ(posix_spawn(&p.pid, argv[0], &fa, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&fa);
  const std::regex re("listening on http://127\\.0\\.0\\.1:(\\d+)");
  for (int i = 0; i < 600 && p.port == 0; ++i) {
    std::ifstream in(out);
    std::string text((std::istreambuf_iterator<char>(in)), {});
    std::smatch m;
    if (std::regex_search(text, m, re)) p.port = std::stoi(m[1]);
    else std::this_thread::sleep_for(std::chrono::milliseconds(20));
    int status = 0;
    if (::waitpid(p.pid, &status, WNOHANG) == p.pid) {
      std::ifstream err(out + ".err");
      ADD_FAILURE() << "tidal serve exited: " << std::string((std::istreambuf_iterator<char>(err)), {});
      p.pid = -1;
      return p;
    }
  }
  EXPECT_NE(p.port, 0) << "tidal serve did not say where it listens";
  return p;
}

void Kill(Proc& p) {
  if (p.pid <= 0) return;
  ::kill(p.pid, SIGKILL);
  int status = 0;
  ::waitpid(p.pid, &status, 0);
  p.pid = -1;
}

std::string fmt_key(int round, int worker, int i) {
  return "k-" + std::to_string(round) + "-" + std::to_string(worker) + "-" + std::to_string(i);
}

struct Acked {
  int64_t id = 0;
  std::string tenant;
  int gpus = 0;
};

// `rounds` kills on the store at `store_url` ("" = a SQLite file in the test's folder).
void RunCrashes(const std::string& store_url, int rounds, const char* label) {
  const fs::path dir = fs::temp_directory_path() / ("tidal-serve-crash-" + std::to_string(::getpid()) + "-" + label);
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string src = TIDAL_SOURCE_DIR;
  std::ofstream(dir / "serve.yaml") << "version: 1\nname: crash-test\n"
                                    << "topology: " << src << "/data/topologies/dgx-h100-superpod.yaml\n"
                                    << "trace: {jobs: " << src << "/data/colocate/philly-2017-10-09-2weeks.csv, format: philly, load: 1.5, limit: 3000}\n"
                                    << "clock: {speed: 3600}\n"
                                    << "scheduler: {placer: topo, queue: tidal, tenants: proportional, seed: 1, start_estimate_samples: 2}\n";
  const std::string store = store_url.empty() ? "sqlite:" + (dir / "t.db").string() : store_url;
  std::mt19937_64 rng(20261201);
  std::map<std::string, Acked> acked;  // by idempotency key
  std::mutex mu;
  std::vector<std::string> tenants;
  std::string token;
  int64_t submitted_total = 0;
  for (int round = 0; round < rounds; ++round) {
    Proc p = Start(dir, store, round);
    ASSERT_GT(p.pid, 0);
    if (token.empty()) {
      std::ifstream in(dir / "admin-token");
      std::getline(in, token);
      ASSERT_FALSE(token.empty());
    }
    httplib::Client c("127.0.0.1", p.port);
    const httplib::Headers auth = {{"Authorization", "Bearer " + token}};
    if (tenants.empty()) {
      auto t = c.Get("/v1/tenants", auth);
      ASSERT_TRUE(t && t->status == 200);
      const json body = json::parse(t->body);  // kept: a range over a temporary's member dangles
      for (const json& x : body["tenants"]) tenants.push_back(x["name"]);
      ASSERT_FALSE(tenants.empty()) << t->body;
    }
    // After the restart: every job acknowledged before is there, as sent.
    for (const auto& [key, a] : acked) {
      auto r = c.Get("/v1/jobs/" + std::to_string(a.id), auth);
      ASSERT_TRUE(r) << "round " << round;
      ASSERT_EQ(r->status, 200) << "round " << round << ": acknowledged job " << a.id << " (" << key << ") is gone: " << r->body;
      const json j = json::parse(r->body);
      EXPECT_EQ(j["tenant"], a.tenant);
      EXPECT_EQ(j["gpus"], a.gpus);
    }
    // No GPU is held twice, and no host holds more than it has.
    {
      std::set<std::pair<std::string, int>> held;
      std::string page;
      for (;;) {
        auto r = c.Get("/v1/jobs?state=running&limit=1000" + (page.empty() ? "" : "&page_token=" + page), auth);
        ASSERT_TRUE(r && r->status == 200);
        const json l = json::parse(r->body);
        for (const json& j : l["jobs"])
          for (const json& a : j["placement"])
            for (const json& g : a["gpus"])
              EXPECT_TRUE(held.insert({a["node"].get<std::string>(), g.get<int>()}).second)
                  << "GPU " << a["node"] << "/" << g << " is held twice (job " << j["id"] << ")";
        page = l["next_page_token"];
        if (page.empty()) break;
      }
      auto n = c.Get("/v1/cluster/nodes", auth);
      ASSERT_TRUE(n && n->status == 200);
      const json nodes = json::parse(n->body);
      for (const json& node : nodes["nodes"]) EXPECT_LE(node["gpus_allocated"].get<double>(), node["gpus"].get<double>());
    }
    // Clients submit until the kill; every 3rd key is a retry of an earlier one.
    std::atomic<bool> stop{false};
    std::vector<std::thread> clients;
    for (int w = 0; w < 4; ++w) {
      clients.emplace_back([&, w] {
        httplib::Client cl("127.0.0.1", p.port);
        cl.set_connection_timeout(1);
        cl.set_read_timeout(2);
        std::mt19937_64 r(static_cast<uint64_t>(round * 100 + w));
        std::vector<json> sent;  // this worker's bodies, by i
        for (int i = 0; !stop; ++i) {
          // Every 3rd request retries the one two before it, body and key alike.
          json body;
          if (i % 3 == 2) {
            body = sent[static_cast<size_t>(i - 2)];
          } else {
            body = {{"tenant", tenants[r() % tenants.size()]}, {"gpus", 1 + static_cast<int>(r() % 8)},
                    {"estimated_runtime_s", 600 + static_cast<int>(r() % 3000)}, {"idempotency_key", fmt_key(round, w, i)}};
          }
          sent.push_back(body);
          const std::string key = body["idempotency_key"];
          auto res = cl.Post("/v1/jobs", auth, body.dump(), "application/json");
          if (!res || (res->status != 200 && res->status != 201)) continue;
          const json j = json::parse(res->body);
          std::lock_guard lock(mu);
          ++submitted_total;
          auto [it, inserted] = acked.try_emplace(key, Acked{j["id"], j["tenant"], j["gpus"]});
          if (!inserted) {
            EXPECT_EQ(it->second.id, j["id"].get<int64_t>()) << "key " << key << " made a second job";
          }
        }
      });
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(150 + static_cast<int>(rng() % 900)));
    Kill(p);
    stop = true;
    for (std::thread& t : clients) t.join();
  }
  // A clean last start: the whole history is consistent.
  Proc p = Start(dir, store, rounds);
  ASSERT_GT(p.pid, 0);
  httplib::Client c("127.0.0.1", p.port);
  auto h = c.Get("/healthz");
  ASSERT_TRUE(h);
  EXPECT_EQ(json::parse(h->body)["status"], "ok");
  const httplib::Headers auth = {{"Authorization", "Bearer " + token}};
  for (const auto& [key, a] : acked) {
    auto r = c.Get("/v1/jobs/" + std::to_string(a.id), auth);
    ASSERT_TRUE(r && r->status == 200) << key;
  }
  ::kill(p.pid, SIGTERM);
  int status = 0;
  ::waitpid(p.pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a SIGTERM stops it cleanly";
  EXPECT_GT(acked.size(), 50u) << "too few submissions were acknowledged to mean anything";
  std::printf("serve crash (%s): %d kills, %zu jobs acknowledged (%lld answers incl. retries), none lost\n", label, rounds, acked.size(),
              static_cast<long long>(submitted_total));
  fs::remove_all(dir);
}

TEST(ServeCrash, KilledAtRandomItLosesNoAcceptedJobAndNeverDoubleAllocates) { RunCrashes("", 8, "sqlite"); }

TEST(ServeCrash, OnPostgresqlToo) {
  auto db = tidal::store::testing::FreshStore(tidal::store::testing::Backend::kPostgres);
  if (!db) GTEST_SKIP() << db.error().message;
  const std::string url = (*db)->url();
  RunCrashes(url, 4, "postgresql");
}

}  // namespace

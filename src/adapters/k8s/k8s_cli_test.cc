// `tidal k8s run` as a process against the in-process fake API server: it
// admits a gated gang, answers kube-scheduler's extender calls over HTTP
// (binding through the API), and stops cleanly on SIGTERM.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>
#include <utility>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "adapters/k8s/extender_wire.h"
#include "adapters/k8s/fake_kube_api.h"

extern char** environ;

namespace tidal::k8s {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;
using ::testing::HasSubstr;

json Node(const std::string& name, const std::string& leaf) {
  return json::parse(fmt::format(
      R"({{"metadata":{{"name":"{}","labels":{{"nvidia.com/gpu.product":"NVIDIA-H100-80GB-HBM3","nvidia.com/gpu.count":"8","fabric.topograph.run/tier-0":"{}"}}}},)"
      R"("spec":{{}},"status":{{"allocatable":{{"cpu":"96","memory":"1Ti","nvidia.com/gpu":"8"}}}}}})",
      name, leaf));
}

json Pod(const std::string& name, bool gated, const std::string& gang = "", int size = 0) {
  json p = {{"metadata", {{"name", name}, {"namespace", "ml"}, {"labels", json::object()}}},
            {"spec", {{"containers", json::array({{{"name", "c"}, {"resources", {{"limits", {{"nvidia.com/gpu", "8"}}}}}}})}}}};
  if (gated) p["spec"]["schedulingGates"] = json::array({{{"name", "tidal.io/admission"}}});
  if (!gang.empty()) p["metadata"]["labels"] = {{"tidal.io/gang", gang}, {"tidal.io/gang-size", std::to_string(size)}};
  return p;
}

struct Proc {
  pid_t pid = -1;
  std::string out;
  Proc() = default;
  Proc(const Proc&) = delete;
  Proc(Proc&& o) noexcept : pid(std::exchange(o.pid, -1)), out(std::move(o.out)) {}
  ~Proc() {  // a test that fails midway leaves no process behind
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
};

Proc Spawn(std::vector<std::string> args, const fs::path& out) {
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, (out.string() + ".err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  Proc p;
  p.out = out.string();
  EXPECT_EQ(posix_spawn(&p.pid, argv[0], &fa, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&fa);
  return p;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

int Wait(Proc& p) {
  int status = 0;
  ::waitpid(p.pid, &status, 0);
  p.pid = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(TidalK8sRun, AdmitsGangsAnswersTheExtenderAndStopsOnSigterm) {
  testing::FakeKubeApi api;
  for (const auto& [n, leaf] : std::vector<std::pair<std::string, std::string>>{{"n1", "a"}, {"n2", "a"}, {"n3", "b"}, {"n4", "b"}}) {
    api.AddNode(Node(n, leaf));
  }
  const fs::path dir = fs::temp_directory_path() / ("tidal-k8s-cli-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  Proc p = Spawn({TIDAL_BINARY, "k8s", "run", "--api", api.url(), "--listen", "127.0.0.1:0"}, dir / "run.out");
  int port = 0;
  const std::regex re("extender on http://127\\.0\\.0\\.1:(\\d+)/k8s/extender/");
  for (int i = 0; i < 500 && port == 0; ++i) {
    std::smatch m;
    const std::string text = Slurp(p.out);
    if (std::regex_search(text, m, re)) port = std::stoi(m[1]);
    else std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_NE(port, 0) << Slurp(p.out) << Slurp(p.out + ".err");
  EXPECT_THAT(Slurp(p.out), HasSubstr("4 nodes (32 GPUs)"));

  // A gated gang is admitted whole under one leaf.
  api.CreatePod(Pod("g-0", true, "pair", 2));
  api.CreatePod(Pod("g-1", true, "pair", 2));
  auto node = [&](const std::string& n) { return api.Pod("ml", n)["spec"].value("nodeName", ""); };
  for (int i = 0; i < 500 && (node("g-0").empty() || node("g-1").empty()); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_FALSE(node("g-0").empty());
  ASSERT_FALSE(node("g-1").empty());
  EXPECT_EQ(node("g-0") < "n3", node("g-1") < "n3");

  // kube-scheduler's calls for an ungated pod: filter passes one free node, bind binds it through the API.
  const json solo = api.CreatePod(Pod("solo", false));
  httplib::Client http("127.0.0.1", port);
  const std::string filter = Encode(ExtenderArgs{.pod = ojson::parse(solo.dump()), .node_names = std::vector<std::string>{"n1", "n2", "n3", "n4"}});
  auto r = http.Post("/k8s/extender/filter", filter, "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  auto fr = ParseExtenderFilterResult(r->body);
  ASSERT_TRUE(fr);
  ASSERT_EQ(fr->node_names->size(), 1u) << r->body;
  const std::string chosen = fr->node_names->front();
  EXPECT_NE(chosen, node("g-0"));
  EXPECT_NE(chosen, node("g-1"));
  const std::string bind = Encode(ExtenderBindingArgs{.pod_name = "solo", .pod_namespace = "ml", .pod_uid = solo["metadata"]["uid"], .node = chosen});
  r = http.Post("/k8s/extender/bind", bind, "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, R"({"Error":""})");
  EXPECT_EQ(node("solo"), chosen);
  // A retried bind is answered without binding again (the API server would refuse it).
  r = http.Post("/k8s/extender/bind", bind, "application/json");
  EXPECT_EQ(r->body, R"({"Error":""})");
  r = http.Post("/k8s/extender/filter", "{", "application/json");
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(http.Get("/healthz")->body, "ok\n");

  ::kill(p.pid, SIGTERM);
  EXPECT_EQ(Wait(p), 0) << Slurp(p.out + ".err");
  EXPECT_THAT(Slurp(p.out + ".err"), HasSubstr("SIGTERM received, stopping"));
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

TEST(TidalK8sRun, AnUnusableApiServerIsAClearError) {
  const fs::path dir = fs::temp_directory_path() / ("tidal-k8s-cli-bad-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  Proc p = Spawn({TIDAL_BINARY, "k8s", "run", "--api", "http://127.0.0.1:1"}, dir / "bad.out");
  EXPECT_EQ(Wait(p), 2);
  EXPECT_THAT(Slurp(p.out + ".err"), HasSubstr("tidal k8s: listing the nodes: GET http://127.0.0.1:1/api/v1/nodes"));
  Proc q = Spawn({TIDAL_BINARY, "k8s", "run", "--api", "api.example:443"}, dir / "bad2.out");
  EXPECT_EQ(Wait(q), 2);
  EXPECT_THAT(Slurp(q.out + ".err"), HasSubstr("give an http:// or https:// URL"));
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

}  // namespace
}  // namespace tidal::k8s

// The scheduling-gate controller against an in-process fake of the
// Kubernetes API (fake_kube_api.h: the calls it makes, with the API's
// shapes and its rules for gated pods), and the admit patch on its own.
#include "adapters/k8s/gate_controller.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "adapters/k8s/fake_kube_api.h"
#include "plugins/registry.h"

namespace tidal::k8s {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;

json NodeJson(const std::string& name, const std::string& leaf) {
  return json::parse(fmt::format(
      R"({{"metadata":{{"name":"{}","labels":{{"nvidia.com/gpu.product":"NVIDIA-H100-80GB-HBM3","nvidia.com/gpu.count":"8","fabric.topograph.run/tier-0":"{}"}}}},)"
      R"("spec":{{}},"status":{{"allocatable":{{"cpu":"96","memory":"1Ti","nvidia.com/gpu":"8"}}}}}})",
      name, leaf));
}

json GatedPod(const std::string& name, int gpus, const std::string& gang = "", int gang_size = 0, bool other_gate = false) {
  json labels = json::object();
  if (!gang.empty()) {
    labels["tidal.io/gang"] = gang;
    labels["tidal.io/gang-size"] = std::to_string(gang_size);
  }
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", "team-a"}, {"labels", labels}}},
          {"spec",
           {{"schedulingGates", other_gate ? json::array({{{"name", "example.com/other"}}, {{"name", "tidal.io/admission"}}})
                                           : json::array({{{"name", "tidal.io/admission"}}})},
            {"containers", json::array({{{"name", "main"},
                                         {"image", "trainer:1"},
                                         {"resources", {{"limits", {{"nvidia.com/gpu", std::to_string(gpus)}}}}}}})}}}};
}

TEST(AdmitPatch, PinsTheNodeAndRemovesOnlyTidalsGate) {
  ojson pod = ojson::parse(GatedPod("p", 8, "", 0, true).dump());
  pod["metadata"]["resourceVersion"] = "42";
  auto patch = AdmitPatch(pod, "n3");
  ASSERT_TRUE(patch) << patch.error().message;
  EXPECT_EQ(patch->dump(),
            R"([{"op":"test","path":"/metadata/resourceVersion","value":"42"},)"
            R"({"op":"add","path":"/spec/affinity","value":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchFields":[{"key":"metadata.name","operator":"In","values":["n3"]}]}]}}}},)"
            R"({"op":"test","path":"/spec/schedulingGates/1/name","value":"tidal.io/admission"},)"
            R"({"op":"remove","path":"/spec/schedulingGates/1"}])");
  // A pod's own required terms each gain the node (terms are ORed).
  pod["spec"]["affinity"] = ojson::parse(
      R"({"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"zone","operator":"In","values":["a"]}]},{"matchFields":[{"key":"metadata.name","operator":"NotIn","values":["n9"]}]}]}}})");
  patch = AdmitPatch(pod, "n3");
  ASSERT_TRUE(patch);
  EXPECT_EQ((*patch)[1]["path"], "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0/matchFields");
  EXPECT_EQ((*patch)[2]["path"], "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/1/matchFields/-");
  // Affinity without node affinity, node affinity without required terms.
  pod["spec"]["affinity"] = ojson::parse(R"({"podAffinity":{}})");
  EXPECT_EQ((*AdmitPatch(pod, "n3"))[1]["path"], "/spec/affinity/nodeAffinity");
  pod["spec"]["affinity"] = ojson::parse(R"({"nodeAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[]}})");
  EXPECT_EQ((*AdmitPatch(pod, "n3"))[1]["path"], "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution");
  pod["spec"]["affinity"] = ojson::parse(R"({"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[]}}})");
  EXPECT_EQ((*AdmitPatch(pod, "n3"))[1]["path"], "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms");
  // No gate, nothing to admit.
  pod["spec"]["schedulingGates"] = ojson::array({{{"name", "example.com/other"}}});
  auto none = AdmitPatch(pod, "n3");
  ASSERT_FALSE(none);
  EXPECT_THAT(none.error().message, HasSubstr("no tidal.io/admission gate"));
}

class GateControllerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const auto& [n, leaf] : std::vector<std::pair<std::string, std::string>>{{"n1", "leaf1"}, {"n2", "leaf1"}, {"n3", "leaf2"}, {"n4", "leaf2"}}) {
      api_.AddNode(NodeJson(n, leaf));
    }
    auto client = KubeClient::Connect({.server = api_.url(), .timeout_s = 5});
    ASSERT_TRUE(client) << client.error().message;
    client_ = std::move(*client);
    MakeCore();
  }
  void TearDown() override { StopRun(); }
  void MakeCore() {
    auto nodes = client_->Get("/api/v1/nodes");
    ASSERT_TRUE(nodes) << nodes.error().message;
    auto imported = ImportNodes(*nodes, "api");
    ASSERT_TRUE(imported) << imported.error().message;
    auto cluster = ClusterState::Build(imported->nodes);
    ASSERT_TRUE(cluster);
    ASSERT_TRUE(cluster->AttachTopology(imported->topology));
    auto profile = plugins::MakePolicyProfile("topo", nullptr);
    ASSERT_TRUE(profile);
    core_ = std::make_unique<PodScheduler>(Scheduler(std::move(*cluster), std::move(*profile), 3), 600);
    gc_ = std::make_unique<GateController>(*client_, *core_, mu_, [this] { return now_.load(); });
  }
  void StartRun() {
    stop_ = false;
    run_ = std::thread([this] { run_status_ = gc_->Run(stop_, 1); });
  }
  void StopRun() {
    stop_ = true;
    if (run_.joinable()) run_.join();
  }
  // Polls `ok` (under the core's lock) for up to 10 s.
  bool WaitFor(const std::function<bool()>& ok) {
    for (int i = 0; i < 500; ++i) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (ok()) return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }
  std::string NodeOf(const std::string& name) {
    json p = api_.Pod("team-a", name);
    return p.is_null() ? "" : p["spec"].value("nodeName", "");
  }
  std::string WhyPending(const std::string& name) {
    json p = api_.Pod("team-a", name);
    if (p.is_null() || !p["metadata"].contains("annotations")) return "";
    return p["metadata"]["annotations"].value("tidal.io/why-pending", "");
  }
  std::string Problems() const {
    std::string out;
    for (const std::string& p : gc_->problems()) out += p + "\n";
    return out;
  }
  int64_t FreeGpus() { return core_->scheduler().cluster().total_gpu_milli_free() / 1000; }
  static std::string Leaf(const std::string& n) { return n == "n1" || n == "n2" ? "leaf1" : "leaf2"; }

  testing::FakeKubeApi api_;
  std::unique_ptr<KubeClient> client_;
  std::mutex mu_;
  std::unique_ptr<PodScheduler> core_;
  std::unique_ptr<GateController> gc_;
  std::atomic<int64_t> now_{1000};
  std::atomic<bool> stop_{false};
  std::thread run_;
  Status run_status_ = Ok();
};

TEST_F(GateControllerTest, AGangIsAdmittedOnlyWhenWholeAndLandsWhereTidalPutIt) {
  StartRun();
  api_.CreatePod(GatedPod("w-0", 8, "llm", 2, true));
  ASSERT_TRUE(WaitFor([&] { return WhyPending("w-0") == "tidal: waiting for the gang's pods: 1 of 2 exist"; })) << WhyPending("w-0");
  EXPECT_EQ(NodeOf("w-0"), "");
  EXPECT_EQ(FreeGpus(), 32);  // nothing reserved for half a gang

  api_.CreatePod(GatedPod("w-1", 8, "llm", 2, true));
  // tidal removes its own gate and leaves the other one, whose owner then
  // lets the pods go.
  auto ungated_but_other = [&](const std::string& n) {
    const json p = api_.Pod("team-a", n);
    return p["spec"]["schedulingGates"].size() == 1 && p["spec"]["schedulingGates"][0]["name"] == "example.com/other";
  };
  ASSERT_TRUE(WaitFor([&] { return ungated_but_other("w-0") && ungated_but_other("w-1"); }));
  EXPECT_EQ(NodeOf("w-0"), "");
  for (const char* n : {"w-0", "w-1"}) {
    ASSERT_TRUE(client_->Patch(fmt::format("/api/v1/namespaces/team-a/pods/{}", n),
                               ojson::parse(R"([{"op":"remove","path":"/spec/schedulingGates/0"}])"), "application/json-patch+json"));
  }
  ASSERT_TRUE(WaitFor([&] { return !NodeOf("w-0").empty() && !NodeOf("w-1").empty(); }));
  const std::string a = NodeOf("w-0"), b = NodeOf("w-1");
  EXPECT_NE(a, b);
  EXPECT_EQ(Leaf(a), Leaf(b));
  json pod = api_.Pod("team-a", "w-0");
  EXPECT_TRUE(pod["spec"]["schedulingGates"].empty());
  EXPECT_EQ(pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]["matchFields"][0]["values"][0], a);
  // The binding came back through the watch.
  const std::string uid_a = pod["metadata"]["uid"];
  ASSERT_TRUE(WaitFor([&] { return core_->IsBound(uid_a); }));
  EXPECT_EQ(core_->SlotOf(uid_a), a);
  EXPECT_EQ(FreeGpus(), 16);
  StopRun();
  EXPECT_TRUE(run_status_) << run_status_.error().message;
  EXPECT_TRUE(gc_->problems().empty()) << gc_->problems().front();
}

TEST_F(GateControllerTest, WhatDoesNotFitWaitsGatedAndGoesWhenCapacityIsFreed) {
  StartRun();
  for (int i = 0; i < 4; ++i) api_.CreatePod(GatedPod(fmt::format("big-{}", i), 8, "big", 4));
  ASSERT_TRUE(WaitFor([&] { return FreeGpus() == 0; }));
  api_.CreatePod(GatedPod("late", 4));
  ASSERT_TRUE(WaitFor([&] { return WhyPending("late").rfind("tidal: ", 0) == 0; })) << WhyPending("late");
  EXPECT_EQ(NodeOf("late"), "");
  // One gang pod finishing frees nothing (the gang holds its nodes until it
  // is gone); all of them gone, the late pod runs.
  api_.SetPhase("team-a", "big-0", "Succeeded");
  for (int i = 1; i < 4; ++i) api_.DeletePod("team-a", fmt::format("big-{}", i));
  ASSERT_TRUE(WaitFor([&] { return !NodeOf("late").empty(); }));
  ASSERT_TRUE(WaitFor([&] { return FreeGpus() == 28; }));
}

TEST_F(GateControllerTest, ARestartedControllerAdoptsWhatRunsAndAdmitsAroundIt) {
  StartRun();
  api_.CreatePod(GatedPod("a", 8));
  api_.CreatePod(GatedPod("b", 8));
  ASSERT_TRUE(WaitFor([&] { return !NodeOf("a").empty() && !NodeOf("b").empty(); }));
  StopRun();
  // tidal restarts with an empty view; the API server has the truth.
  MakeCore();
  api_.CreatePod(GatedPod("c", 8, "pair", 2));
  api_.CreatePod(GatedPod("d", 8, "pair", 2));
  StartRun();
  ASSERT_TRUE(WaitFor([&] { return !NodeOf("c").empty() && !NodeOf("d").empty(); }));
  std::set<std::string> used = {NodeOf("a"), NodeOf("b"), NodeOf("c"), NodeOf("d")};
  EXPECT_EQ(used.size(), 4u);  // nothing placed on a node an adopted pod holds
  EXPECT_EQ(Leaf(NodeOf("c")), Leaf(NodeOf("d")));
  ASSERT_TRUE(WaitFor([&] { return FreeGpus() == 0; }));
}

TEST_F(GateControllerTest, AnExpiredWatchIsListedAgain) {
  StartRun();
  api_.CreatePod(GatedPod("a", 8));
  ASSERT_TRUE(WaitFor([&] { return !NodeOf("a").empty(); }));
  StopRun();
  api_.ExpireWatches();
  api_.CreatePod(GatedPod("b", 8));
  StartRun();  // Sync lists first; expire again so the running watch gets 410 too
  ASSERT_TRUE(WaitFor([&] { return !NodeOf("b").empty(); }));
  api_.ExpireWatches();
  api_.CreatePod(GatedPod("c", 8));
  ASSERT_TRUE(WaitFor([&] { return !NodeOf("c").empty(); }));
}

TEST_F(GateControllerTest, RefusalsAreRecordedAndRetriedAndBadPodsStayGated) {
  // The first patch of a gang is refused (409): its partner goes, and it
  // follows at the next pass without waiting for a gang that is already placed.
  api_.FailPatches(1);
  api_.CreatePod(GatedPod("a", 8, "duo", 2));
  api_.CreatePod(GatedPod("a2", 8, "duo", 2));
  ASSERT_TRUE(gc_->Sync());
  ASSERT_EQ(gc_->problems().size(), 1u);
  EXPECT_THAT(gc_->problems().front(), HasSubstr("(HTTP 409)"));
  EXPECT_EQ(NodeOf("a").empty() + NodeOf("a2").empty(), 1);
  EXPECT_EQ(gc_->num_gated(), 1u);  // the refused one waits for its next pass

  json bad = GatedPod("bad", 8);
  bad["metadata"]["labels"]["tidal.io/qos"] = "gold";
  api_.CreatePod(bad);
  // A user's own required affinity is kept and narrowed, as the API allows.
  json own = GatedPod("own", 8);
  own["spec"]["affinity"] = json::parse(
      R"({"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"kubernetes.io/hostname","operator":"In","values":["n1","n2","n3","n4"]}]}]}}})");
  api_.CreatePod(own);
  StartRun();
  ASSERT_TRUE(WaitFor([&] { return !NodeOf("a").empty() && !NodeOf("a2").empty() && !NodeOf("own").empty(); })) << Problems();
  EXPECT_EQ(Leaf(NodeOf("a")), Leaf(NodeOf("a2")));
  json pod = api_.Pod("team-a", "own");
  const json& term = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0];
  EXPECT_EQ(term["matchExpressions"].size(), 1u);
  EXPECT_EQ(term["matchFields"][0]["values"][0], NodeOf("own"));
  EXPECT_EQ(NodeOf("bad"), "");
  EXPECT_EQ(api_.Pod("team-a", "bad")["spec"]["schedulingGates"].size(), 1u);
  StopRun();
  bool unreadable = false;
  for (const std::string& p : gc_->problems()) unreadable = unreadable || p.find("tidal.io/qos='gold'") != std::string::npos;
  EXPECT_TRUE(unreadable) << Problems();
}

TEST_F(GateControllerTest, CordonedNodesTakeNothing) {
  api_.SetUnschedulable("n1", true);
  api_.SetUnschedulable("n2", true);
  api_.SetUnschedulable("n3", true);
  api_.CreatePod(GatedPod("a", 8));
  api_.CreatePod(GatedPod("b", 8));
  ASSERT_TRUE(gc_->Sync());
  EXPECT_EQ(NodeOf("a") + NodeOf("b"), "n4") << Problems() << api_.Pod("team-a", "a").dump();
  api_.SetUnschedulable("n1", false);
  ASSERT_TRUE(gc_->Sync());
  EXPECT_EQ(NodeOf("a") == "n1" || NodeOf("b") == "n1", true);
}

// A node that joins after tidal started is reported once, and nothing is
// placed on it.
TEST_F(GateControllerTest, ANodeThatJoinsLaterIsReportedOnceAndNotUsed) {
  api_.AddNode(NodeJson("n5", "leaf3"));
  ASSERT_TRUE(gc_->SyncNodes());
  ASSERT_TRUE(gc_->SyncNodes());
  ASSERT_EQ(gc_->problems().size(), 1u) << Problems();
  EXPECT_THAT(gc_->problems().front(), HasSubstr("node n5 joined after tidal started"));
  for (int i = 0; i < 5; ++i) api_.CreatePod(GatedPod(fmt::format("p{}", i), 8));
  ASSERT_TRUE(gc_->Sync());
  int placed = 0;
  for (int i = 0; i < 5; ++i) {
    const std::string n = NodeOf(fmt::format("p{}", i));
    EXPECT_NE(n, "n5");
    placed += !n.empty();
  }
  EXPECT_EQ(placed, 4);
}

TEST(KubeClient, ErrorsCarryTheApisMessage) {
  testing::FakeKubeApi api;
  auto c = KubeClient::Connect({.server = api.url()});
  ASSERT_TRUE(c);
  auto r = (*c)->Patch("/api/v1/namespaces/x/pods/nope", ojson::array(), "application/json-patch+json");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kNotFound);
  EXPECT_THAT(r.error().message, HasSubstr("PATCH /api/v1/namespaces/x/pods/nope: pods \"nope\" not found (HTTP 404)"));
  auto ftp = KubeClient::Connect({.server = "ftp://10.0.0.1"});
  ASSERT_FALSE(ftp);
  EXPECT_THAT(ftp.error().message, HasSubstr("give an http:// or https:// URL"));
  auto down = KubeClient::Connect({.server = "http://127.0.0.1:1", .timeout_s = 1});
  ASSERT_TRUE(down);
  auto g = (*down)->Get("/api/v1/pods");
  ASSERT_FALSE(g);
  EXPECT_THAT(g.error().message, HasSubstr("GET http://127.0.0.1:1/api/v1/pods"));
}

// HTTPS with the CA of a certificate made for the test (openssl), as a pod's
// service account connects; the same server is refused without that CA.
TEST(KubeClient, SpeaksHttpsWithTheServiceAccountsCa) {
  const std::string dir = ::testing::TempDir() + "tidal-k8s-tls";
  std::filesystem::create_directories(dir);
  const std::string cmd = fmt::format(
      "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 "
      "-keyout {0}/key.pem -out {0}/ca.crt >/dev/null 2>&1",
      dir);
  if (std::system(cmd.c_str()) != 0) GTEST_SKIP() << "no openssl to make a certificate";
  httplib::SSLServer server((dir + "/ca.crt").c_str(), (dir + "/key.pem").c_str());
  ASSERT_TRUE(server.is_valid());
  std::string auth;
  server.Get("/api/v1/nodes", [&](const httplib::Request& req, httplib::Response& res) {
    auth = req.get_header_value("Authorization");
    res.set_content(R"({"kind":"NodeList","items":[]})", "application/json");
  });
  const int port = server.bind_to_any_port("127.0.0.1");
  std::thread t([&] { server.listen_after_bind(); });
  while (!server.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  {
    std::ofstream(dir + "/token") << "secret-token\n";
    setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", std::to_string(port).c_str(), 1);
    auto cfg = InClusterConfig(dir);
    ASSERT_TRUE(cfg) << cfg.error().message;
    EXPECT_EQ(cfg->server, fmt::format("https://127.0.0.1:{}", port));
    auto c = KubeClient::Connect(*cfg);
    ASSERT_TRUE(c);
    auto nodes = (*c)->Get("/api/v1/nodes");
    ASSERT_TRUE(nodes) << nodes.error().message;
    EXPECT_EQ((*nodes)["kind"], "NodeList");
    EXPECT_EQ(auth, "Bearer secret-token");
    // Without the CA the certificate is not trusted.
    cfg->ca_file = "/dev/null";
    auto untrusted = KubeClient::Connect(*cfg);
    ASSERT_TRUE(untrusted);
    EXPECT_FALSE((*untrusted)->Get("/api/v1/nodes"));
    unsetenv("KUBERNETES_SERVICE_HOST");
    auto outside = InClusterConfig(dir);
    ASSERT_FALSE(outside);
    EXPECT_THAT(outside.error().message, HasSubstr("not in a pod"));
  }
  server.stop();
  t.join();
  std::filesystem::remove_all(dir);
}

TEST(WatchDecoder, SplitsLinesAcrossChunksAndRefusesGarbage) {
  WatchDecoder d;
  std::vector<std::string> seen;
  auto on = [&](const WatchEvent& e) {
    seen.push_back(e.type + ":" + e.object["metadata"]["name"].get<std::string>());
    return true;
  };
  bool stop = false;
  const std::string stream = R"({"type":"ADDED","object":{"metadata":{"name":"a"}}})" "\n" R"({"type":"DELETED","object":{"metadata":{"name":"b"}}})" "\n\n";
  for (size_t i = 0; i < stream.size(); i += 7) ASSERT_TRUE(d.Feed(stream.substr(i, 7), on, &stop));
  EXPECT_THAT(seen, ::testing::ElementsAre("ADDED:a", "DELETED:b"));
  auto bad = d.Feed("{\"type\":\"ADDED\"}\n", on, &stop);
  ASSERT_FALSE(bad);
  EXPECT_THAT(bad.error().message, HasSubstr("watch stream line 4: expected {\"type\": ..., \"object\": {...}}"));
  auto text = d.Feed("not json\n", on, &stop);
  ASSERT_FALSE(text);
  // A callback that says stop stops the stream.
  WatchDecoder e;
  int n = 0;
  ASSERT_TRUE(e.Feed(stream, [&](const WatchEvent&) { return ++n < 1; }, &stop));
  EXPECT_TRUE(stop);
  EXPECT_EQ(n, 1);
}

}  // namespace
}  // namespace tidal::k8s

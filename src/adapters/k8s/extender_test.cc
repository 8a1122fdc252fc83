// tidal as a kube-scheduler extender, verb by verb, on a small H100 cluster
// (two leaves of two 8-GPU nodes) and on the simulator's real requests.
#include "adapters/k8s/extender.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "adapters/k8s/k8s_test_util.h"

#include "adapters/k8s/extender_http.h"
#include "plugins/registry.h"

namespace tidal::k8s {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const fs::path& kFixtures = testing::ExtenderFixtures();
using testing::Slurp;

std::string NodeJson(const std::string& name, const std::string& leaf) {
  return fmt::format(
      R"({{"metadata":{{"name":"{}","labels":{{"nvidia.com/gpu.product":"NVIDIA-H100-80GB-HBM3","nvidia.com/gpu.count":"8","fabric.topograph.run/tier-0":"{}"}}}},)"
      R"("status":{{"allocatable":{{"cpu":"96","memory":"1Ti","nvidia.com/gpu":"8"}}}}}})",
      name, leaf);
}

const std::vector<std::string> kAll = {"n1", "n2", "n3", "n4"};

ojson NodeList() {
  return ojson::parse("{\"kind\":\"NodeList\",\"apiVersion\":\"v1\",\"metadata\":{},\"items\":[" + NodeJson("n1", "leaf1") + "," +
                      NodeJson("n2", "leaf1") + "," + NodeJson("n3", "leaf2") + "," + NodeJson("n4", "leaf2") + "]}");
}

struct Pod {
  std::string name, uid;
  int gpus = 8;
  std::string gang;
  int gang_size = 0;
  int priority = 0;
  std::string qos;
  int64_t min_runtime_s = 0;
  ojson Json() const {
    ojson labels = ojson::object();
    if (!gang.empty()) {
      labels["tidal.io/gang"] = gang;
      labels["tidal.io/gang-size"] = std::to_string(gang_size);
    }
    if (!qos.empty()) labels["tidal.io/qos"] = qos;
    ojson ann = ojson::object();
    if (min_runtime_s > 0) ann["tidal.io/min-runtime-s"] = std::to_string(min_runtime_s);
    ojson res = ojson::object();
    res["requests"] = {{"cpu", "8"}, {"memory", "64Gi"}};
    if (gpus > 0) res["limits"] = {{"nvidia.com/gpu", std::to_string(gpus)}};
    return {{"metadata", {{"name", name}, {"namespace", "team-a"}, {"uid", uid}, {"labels", labels}, {"annotations", ann}}},
            {"spec", {{"priority", priority}, {"containers", ojson::array({{{"name", "main"}, {"resources", res}}})}}}};
  }
};

class ExtenderTest : public ::testing::Test {
 protected:
  void SetUp() override { Make(NodeList()); }
  void Make(const ojson& nodes) {
    auto imported = ImportNodes(nodes, "test");
    ASSERT_TRUE(imported) << imported.error().message;
    auto cluster = ClusterState::Build(imported->nodes);
    ASSERT_TRUE(cluster);
    ASSERT_TRUE(cluster->AttachTopology(imported->topology));
    auto profile = plugins::MakePolicyProfile("topo", nullptr);
    ASSERT_TRUE(profile) << profile.error().message;
    core_ = std::make_unique<PodScheduler>(Scheduler(std::move(*cluster), std::move(*profile), 7), /*reservation_ttl_s=*/60);
    ext_ = std::make_unique<Extender>(*core_, [this](const ExtenderBindingArgs& b) -> Status {
      if (!bind_error_.empty()) return MakeError(ErrorCode::kIo, "{}", bind_error_);
      bound_.push_back(b.pod_name + "@" + b.node);
      return Ok();
    });
  }
  ExtenderFilterResult Filter(const Pod& p, const std::vector<std::string>& nodes = kAll, int64_t now = 0) {
    return ext_->Filter({.pod = p.Json(), .node_names = nodes}, now);
  }
  // The single node the filter passes, or "".
  std::string Pass(const Pod& p, const std::vector<std::string>& nodes = kAll, int64_t now = 0) {
    auto r = Filter(p, nodes, now);
    EXPECT_EQ(r.error, "");
    return r.node_names && r.node_names->size() == 1 ? r.node_names->front() : "";
  }
  ExtenderBindingResult Bind(const Pod& p, const std::string& node, int64_t now = 0) {
    return ext_->Bind({.pod_name = p.name, .pod_namespace = "team-a", .pod_uid = p.uid, .node = node}, now);
  }
  int64_t FreeGpus() const { return core_->scheduler().cluster().total_gpu_milli_free() / 1000; }

  std::unique_ptr<PodScheduler> core_;
  std::unique_ptr<Extender> ext_;
  std::vector<std::string> bound_;
  std::string bind_error_;
};

std::string Leaf(const std::string& n) { return n == "n1" || n == "n2" ? "leaf1" : "leaf2"; }

TEST_F(ExtenderTest, AGangIsPlacedWholeUnderOneLeafAndEachPodGetsItsNode) {
  const Pod a{.name = "w-0", .uid = "a", .gang = "llm", .gang_size = 2};
  const Pod b{.name = "w-1", .uid = "b", .gang = "llm", .gang_size = 2};
  auto r = Filter(a);
  ASSERT_EQ(r.error, "");
  ASSERT_TRUE(r.node_names);
  ASSERT_EQ(r.node_names->size(), 1u);
  const std::string na = r.node_names->front();
  EXPECT_FALSE(r.nodes.has_value());
  ASSERT_EQ(r.failed_nodes->size(), 3u);
  EXPECT_THAT(r.failed_nodes->begin()->second, HasSubstr("tidal placed this pod on " + na + " (unit team-a/llm on "));
  EXPECT_FALSE(r.failed_and_unresolvable_nodes.has_value());
  // The whole gang is reserved at once.
  EXPECT_EQ(FreeGpus(), 16);
  // Asking again gives the same node; the second pod the gang's other node.
  EXPECT_EQ(Pass(a), na);
  const std::string nb = Pass(b);
  ASSERT_FALSE(nb.empty());
  EXPECT_NE(nb, na);
  EXPECT_EQ(Leaf(na), Leaf(nb));
  EXPECT_EQ(core_->num_units(), 1u);

  EXPECT_EQ(Bind(a, na).error, "");
  EXPECT_EQ(Bind(b, nb).error, "");
  EXPECT_EQ(Bind(b, nb).error, "");  // a retried bind is fine, and not sent twice
  EXPECT_THAT(bound_, ElementsAre("w-0@" + na, "w-1@" + nb));
  EXPECT_EQ(core_->SlotOf("a"), na);

  // A third pod of a gang of two is refused.
  auto extra = Filter(Pod{.name = "w-2", .uid = "c", .gang = "llm", .gang_size = 2});
  ASSERT_TRUE(extra.failed_and_unresolvable_nodes);
  EXPECT_THAT(extra.failed_and_unresolvable_nodes->at("n1"), HasSubstr("gang team-a/llm has 2 pods already"));
  // A pod disagreeing with its gang's shape is refused.
  auto odd = Filter(Pod{.name = "w-3", .uid = "d", .gpus = 4, .gang = "llm", .gang_size = 2});
  ASSERT_TRUE(odd.failed_and_unresolvable_nodes);
  EXPECT_THAT(odd.failed_and_unresolvable_nodes->at("n2"), HasSubstr("every pod of a gang must ask the same"));
}

TEST_F(ExtenderTest, OnlyTheNodesKubeSchedulerOffersAreUsed) {
  const Pod p{.name = "solo", .uid = "s"};
  const std::string n = Pass(p, {"n3", "n4"});
  EXPECT_TRUE(n == "n3" || n == "n4") << n;
  // Its slot is sticky; offered without it, the pod passes nowhere and the
  // answer says which node tidal holds.
  auto r = Filter(p, {"n1", "n2"});
  EXPECT_TRUE(r.node_names && r.node_names->empty());
  EXPECT_THAT(r.failed_nodes->at("n1"), HasSubstr("tidal holds node " + n + " for this pod"));
  EXPECT_THAT(Bind(p, "n1").error, HasSubstr("is reserved on node " + n + ", not n1"));
  EXPECT_TRUE(bound_.empty());
}

TEST_F(ExtenderTest, TheNodeListFormPassesTheChosenNodesObject) {
  const Pod p{.name = "solo", .uid = "s"};
  const ojson nodes = NodeList();
  auto r = ext_->Filter({.pod = p.Json(), .nodes = nodes}, 0);
  ASSERT_EQ(r.error, "");
  EXPECT_FALSE(r.node_names.has_value());
  ASSERT_TRUE(r.nodes);
  ASSERT_EQ((*r.nodes)["items"].size(), 1u);
  const std::string chosen = (*r.nodes)["items"][0]["metadata"]["name"];
  EXPECT_EQ(core_->SlotOf("s"), chosen);
  // The node object is passed back as it came, and the list keeps its other fields.
  for (const ojson& item : nodes["items"]) {
    if (item["metadata"]["name"] == chosen) {
      EXPECT_EQ((*r.nodes)["items"][0], item);
    }
  }
  EXPECT_EQ((*r.nodes)["kind"], "NodeList");
  EXPECT_EQ(r.failed_nodes->size(), 3u);
}

TEST_F(ExtenderTest, PrioritizeScoresTheSlotNodeTopAndCpuPodsAreNotTidalsBusiness) {
  const Pod p{.name = "solo", .uid = "s"};
  auto scores = ext_->Prioritize({.pod = p.Json(), .node_names = kAll}, 0);
  ASSERT_TRUE(scores && *scores);
  int top = 0;
  for (const HostPriority& h : **scores) {
    if (h.score == kMaxExtenderPriority) {
      ++top;
      EXPECT_EQ(h.host, core_->SlotOf("s"));
    } else {
      EXPECT_EQ(h.score, 0);
    }
  }
  EXPECT_EQ(top, 1);
  const Pod cpu{.name = "web", .uid = "w", .gpus = 0};
  auto r = Filter(cpu);
  EXPECT_EQ(*r.node_names, kAll);
  EXPECT_TRUE(r.failed_nodes->empty());
  EXPECT_EQ(core_->num_units(), 1u);
}

TEST_F(ExtenderTest, WhatDoesNotFitFailsEveryCandidateWithTidalsReason) {
  for (int i = 0; i < 4; ++i) {
    const Pod p{.name = fmt::format("p{}", i), .uid = fmt::format("u{}", i)};
    const std::string n = Pass(p);
    ASSERT_FALSE(n.empty());
    ASSERT_EQ(Bind(p, n).error, "");
  }
  EXPECT_EQ(FreeGpus(), 0);
  auto busy = Filter(Pod{.name = "late", .uid = "late"});
  EXPECT_TRUE(busy.node_names->empty());
  ASSERT_EQ(busy.failed_nodes->size(), 4u);
  EXPECT_THAT(busy.failed_nodes->at("n1"), HasSubstr("tidal: "));
  EXPECT_FALSE(busy.failed_and_unresolvable_nodes.has_value());
  // 16 GPUs in one pod fit no node, ever.
  auto never = Filter(Pod{.name = "huge", .uid = "huge", .gpus = 16});
  ASSERT_TRUE(never.failed_and_unresolvable_nodes);
  EXPECT_EQ(never.failed_and_unresolvable_nodes->size(), 4u);
  EXPECT_TRUE(never.failed_nodes->empty());
  // A pod that is gone gives its GPUs back.
  core_->Forget("u0");
  core_->Forget("u0");
  core_->Forget("never-seen");
  EXPECT_EQ(FreeGpus(), 8);
  EXPECT_FALSE(Pass(Pod{.name = "late", .uid = "late"}).empty());
}

TEST_F(ExtenderTest, AReservationNobodyBindsExpires) {
  const Pod a{.name = "w-0", .uid = "a", .gang = "g", .gang_size = 4};
  ASSERT_FALSE(Pass(a, kAll, 0).empty());
  EXPECT_EQ(FreeGpus(), 0);
  // Within the TTL the gang holds the cluster; after it, the next decision frees it.
  EXPECT_TRUE(Pass(Pod{.name = "x", .uid = "x"}, kAll, 60).empty());
  EXPECT_FALSE(Pass(Pod{.name = "x", .uid = "x"}, kAll, 61).empty());
  EXPECT_EQ(core_->SlotOf("a"), "");
  EXPECT_THAT(Bind(a, "n1").error, HasSubstr("no reservation for pod team-a/w-0 (uid a)"));
  // A bound pod's unit does not expire.
  const Pod x{.name = "x", .uid = "x"};
  ASSERT_EQ(Bind(x, core_->SlotOf("x"), 61).error, "");
  EXPECT_FALSE(Pass(Pod{.name = "y", .uid = "y"}, kAll, 10000).empty());
  EXPECT_NE(core_->SlotOf("x"), "");
}

TEST_F(ExtenderTest, AFailedBindIsReportedAndCanBeRetried) {
  const Pod p{.name = "solo", .uid = "s"};
  const std::string n = Pass(p);
  bind_error_ = "the API server said 409";
  EXPECT_THAT(Bind(p, n).error, HasSubstr("binding pod team-a/solo to " + n + ": the API server said 409"));
  bind_error_.clear();
  EXPECT_EQ(Bind(p, n).error, "");
  EXPECT_THAT(bound_, ElementsAre("solo@" + n));
}

TEST_F(ExtenderTest, PreemptKeepsOnlyTheVictimsTidalAgreesTo) {
  const Pod guaranteed{.name = "g", .uid = "g", .qos = "guaranteed"};
  const Pod low{.name = "low", .uid = "low", .priority = 10};
  const Pod young{.name = "young", .uid = "young", .priority = 10, .min_runtime_s = 600};
  const Pod high{.name = "high", .uid = "high", .priority = 5000};
  std::map<std::string, std::string> node;
  for (const Pod* p : {&guaranteed, &low, &young, &high}) {
    node[p->uid] = Pass(*p, kAll, 100);
    ASSERT_EQ(Bind(*p, node[p->uid], 100).error, "");
  }
  auto meta = [](std::initializer_list<std::string> uids) {
    MetaVictims mv;
    mv.pods.emplace();
    for (const std::string& u : uids) mv.pods->push_back({u});
    mv.num_pdb_violations = 0;
    return std::optional<MetaVictims>(mv);
  };
  const Pod preemptor{.name = "urgent", .uid = "urgent", .priority = 1000};
  ExtenderPreemptionArgs args{.pod = preemptor.Json()};
  args.node_name_to_meta_victims.emplace();
  (*args.node_name_to_meta_victims)[node["g"]] = meta({"g"});
  (*args.node_name_to_meta_victims)[node["low"]] = meta({"low", "someone-elses"});
  (*args.node_name_to_meta_victims)[node["young"]] = meta({"young"});
  (*args.node_name_to_meta_victims)[node["high"]] = meta({"high"});
  auto r = ext_->Preempt(args, 200);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_TRUE(r->node_name_to_meta_victims);
  ASSERT_EQ(r->node_name_to_meta_victims->size(), 1u);
  EXPECT_EQ(r->node_name_to_meta_victims->begin()->first, node["low"]);
  EXPECT_EQ(r->node_name_to_meta_victims->begin()->second->pods->size(), 2u);
  // Once its minimum run time is over, the young pod may go too.
  auto later = ext_->Preempt(args, 100 + 600);
  ASSERT_TRUE(later);
  EXPECT_EQ(later->node_name_to_meta_victims->size(), 2u);
  EXPECT_TRUE(later->node_name_to_meta_victims->contains(node["young"]));
  // A spot pod evicts nothing tidal placed.
  args.pod = Pod{.name = "cheap", .uid = "cheap", .priority = 100000, .qos = "spot"}.Json();
  EXPECT_TRUE(ext_->Preempt(args, 10000)->node_name_to_meta_victims->empty());

  // The full-pod form (a cache-less extender) answers in the meta form.
  ExtenderPreemptionArgs full{.pod = preemptor.Json()};
  full.node_name_to_victims.emplace();
  (*full.node_name_to_victims)[node["low"]] = Victims{.pods = std::vector<ojson>{low.Json()}, .num_pdb_violations = 1};
  (*full.node_name_to_victims)[node["g"]] = Victims{.pods = std::vector<ojson>{guaranteed.Json()}};
  auto fr = ext_->Preempt(full, 200);
  ASSERT_TRUE(fr);
  EXPECT_EQ(Encode(*fr), fmt::format(R"({{"NodeNameToMetaVictims":{{"{}":{{"Pods":[{{"UID":"low"}}],"NumPDBViolations":1}}}}}})", node["low"]));
  // A victim that is not a pod is an error, not a guess.
  (*full.node_name_to_victims)[node["low"]] = Victims{.pods = std::vector<ojson>{ojson{{"metadata", {{"name", "x"}}}}}};
  auto bad = ext_->Preempt(full, 200);
  ASSERT_FALSE(bad);
  EXPECT_THAT(bad.error().message, HasSubstr("metadata.uid is missing"));
}

TEST_F(ExtenderTest, MalformedRequestsAreAnsweredWithAnError) {
  auto r = ext_->Filter({}, 0);
  EXPECT_THAT(r.error, HasSubstr("the filter request has no Pod"));
  r = ext_->Filter({.pod = ojson{{"metadata", {{"name", "p"}}}}, .node_names = kAll}, 0);
  EXPECT_THAT(r.error, HasSubstr("tidal: pod 'p': metadata.uid is missing"));
  r = ext_->Filter({.pod = Pod{.name = "p", .uid = "p"}.Json(), .nodes = ojson{{"items", ojson::array({ojson::object()})}}}, 0);
  EXPECT_THAT(r.error, HasSubstr("Nodes.items[0]: a node without metadata.name"));
  EXPECT_FALSE(ext_->Prioritize({}, 0));
  EXPECT_FALSE(ext_->Preempt({}, 0));
  EXPECT_EQ(core_->num_units(), 0u);

  // Over the HTTP dispatch: a body that does not parse is a 400 naming the field.
  auto reply = HandleExtender(*ext_, "filter", R"({"Pod":7})", 0);
  EXPECT_EQ(reply.status, 400);
  EXPECT_THAT(reply.body, HasSubstr("field Pod: expected an object"));
  EXPECT_EQ(HandleExtender(*ext_, "bind", "{", 0).status, 400);
  EXPECT_EQ(HandleExtender(*ext_, "preempt", "[]", 0).status, 400);
  EXPECT_EQ(HandleExtender(*ext_, "prioritize", R"({"NodeNames":[1]})", 0).status, 400);
  EXPECT_EQ(HandleExtender(*ext_, "prioritize", R"({})", 0).status, 400);
  EXPECT_EQ(HandleExtender(*ext_, "schedule", "{}", 0).status, 404);
}

// What the API server says is bound is the truth: tidal marks its slots,
// adopts GPU pods it did not place, and moves a pod someone bound elsewhere.
TEST_F(ExtenderTest, TheApiServersBindingsAreTheTruth) {
  auto info = [](const Pod& p) { return *ReadPod(p.Json()); };
  const Pod stranger{.name = "stranger", .uid = "st"};
  ASSERT_TRUE(core_->MarkBound(info(stranger), "n2", 5));
  EXPECT_EQ(core_->SlotOf("st"), "n2");
  EXPECT_TRUE(core_->IsBound("st"));
  EXPECT_EQ(FreeGpus(), 24);
  EXPECT_TRUE(core_->MarkBound(info(stranger), "n2", 6));  // the same news twice changes nothing
  EXPECT_EQ(FreeGpus(), 24);
  // No room on n2 in tidal's view: refused, and nothing changes.
  auto full = core_->MarkBound(info(Pod{.name = "x", .uid = "x"}), "n2", 7);
  ASSERT_FALSE(full);
  EXPECT_THAT(full.error().message, HasSubstr("pod team-a/x runs on n2, where tidal sees no room for it"));
  EXPECT_EQ(core_->SlotOf("x"), "");
  auto unknown = core_->MarkBound(info(Pod{.name = "y", .uid = "y"}), "n9", 7);
  ASSERT_FALSE(unknown);
  EXPECT_THAT(unknown.error().message, HasSubstr("bound to node 'n9', which tidal does not know"));
  EXPECT_TRUE(core_->MarkBound(info(Pod{.name = "web", .uid = "w", .gpus = 0}), "n9", 7));  // not a GPU pod: not tidal's

  // A pod tidal placed but someone bound elsewhere moves to where it runs.
  const Pod p{.name = "p", .uid = "p"};
  const std::string held = Pass(p);
  ASSERT_FALSE(held.empty());
  const std::string other = held == "n4" ? "n3" : "n4";
  ASSERT_TRUE(core_->MarkBound(info(p), other, 8));
  EXPECT_EQ(core_->SlotOf("p"), other);
  EXPECT_EQ(FreeGpus(), 16);

  // A gang pod reported bound on a node where its unit has a free slot takes that slot.
  const Pod a{.name = "g-0", .uid = "ga", .gang = "g", .gang_size = 2};
  const Pod b{.name = "g-1", .uid = "gb", .gang = "g", .gang_size = 2};
  const std::string na = Pass(a, kAll, 9);
  ASSERT_FALSE(na.empty());
  EXPECT_EQ(FreeGpus(), 0);
  ASSERT_TRUE(core_->MarkBound(info(a), na, 9));
  std::string nb;
  for (const std::string& n : kAll) {
    if (n != na && n != other && n != "n2") nb = n;
  }
  ASSERT_TRUE(core_->MarkBound(info(b), nb, 9));
  EXPECT_EQ(core_->SlotOf("gb"), nb);
  EXPECT_TRUE(core_->IsBound("gb"));
  EXPECT_EQ(FreeGpus(), 0);
  // Cordons by name.
  EXPECT_TRUE(core_->Cordon("n1"));
  EXPECT_TRUE(core_->Cordon("n1"));
  EXPECT_TRUE(core_->scheduler().cluster().cordoned(*core_->scheduler().cluster().FindNode("n1")));
  EXPECT_TRUE(core_->Uncordon("n1"));
  EXPECT_TRUE(core_->Uncordon("n1"));
  EXPECT_FALSE(core_->Cordon("n9"));
  EXPECT_FALSE(core_->Uncordon("n9"));
}

// The simulator's captured answers are what tidal answers for a pod that
// asks no GPU on the same nodes (tidal passes every node and fails none):
// the bytes of a real Go extender, reproduced.
TEST(ExtenderFixtures, TidalAnswersTheSimulatorsRequestsByteForByte) {
  if (!fs::exists(kFixtures)) GTEST_SKIP() << "no fixtures";
  for (const char* file : {"simulator-2023-filter-result-nodecache-false.json", "simulator-2024-filter-result-nodecache-false.json"}) {
    SCOPED_TRACE(file);
    const std::string want = Slurp(kFixtures / file);
    auto captured = ParseExtenderFilterResult(want);
    ASSERT_TRUE(captured);
    auto imported = ImportNodes(*captured->nodes, file);
    ASSERT_TRUE(imported) << imported.error().message;
    auto cluster = ClusterState::Build(imported->nodes);
    ASSERT_TRUE(cluster);
    auto profile = plugins::MakePolicyProfile("topo", nullptr);
    ASSERT_TRUE(profile);
    PodScheduler core(Scheduler(std::move(*cluster), std::move(*profile), 1), 60);
    Extender ext(core, [](const ExtenderBindingArgs&) { return Ok(); });
    const ojson pod = Pod{.name = "pod-1", .uid = "uid-1", .gpus = 0}.Json();
    // The request kube-scheduler sends (nodeCacheCapable: false), over the HTTP dispatch.
    const std::string request = Encode(ExtenderArgs{.pod = pod, .nodes = *captured->nodes});
    auto reply = HandleExtender(ext, "filter", request, 0);
    EXPECT_EQ(reply.status, 200);
    EXPECT_EQ(reply.body, want);
    if (std::string(file).find("2023") != std::string::npos) {
      auto prio = HandleExtender(ext, "prioritize", request, 0);
      EXPECT_EQ(prio.body, Slurp(kFixtures / "simulator-2023-prioritize-result.json"));
    }
  }
}

}  // namespace
}  // namespace tidal::k8s

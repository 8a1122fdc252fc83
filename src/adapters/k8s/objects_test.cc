// Quantities, pods and node lists as Kubernetes writes them.
#include "adapters/k8s/objects.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "adapters/k8s/extender_wire.h"
#include "adapters/k8s/k8s_test_util.h"

namespace tidal::k8s {
namespace {

using ::testing::HasSubstr;

TEST(Quantity, ReadsWhatKubernetesWrites) {
  struct Case {
    const char* text;
    int64_t scale;
    int64_t want;
  } cases[] = {
      {"500m", 1000, 500},  {"4", 1000, 4000},     {"0.1m", 1000, 1},       {"1.5", 1000, 1500},   {"2e3", 1, 2000},
      {"2E3", 1, 2000},     {"1e-3", 1000, 1},     {"+5", 1, 5},            {".5", 1, 1},          {"5.", 1, 5},
      {"0", 1, 0},          {"0.000", 1, 0},       {"-0", 1, 0},            {"8", 1, 8},           {"1k", 1, 1000},
      {"1M", 1, 1000000},   {"1G", 1, 1000000000}, {"1E", 1, 1000000000000000000}, {"1.25Ki", 1, 1280}, {"3m", 1, 1},
      {"007", 1, 7},        {"0.1234567890123456789", 1000, 124}, {"123456789012345678", 1, 123456789012345678},
  };
  for (const Case& c : cases) {
    auto q = ParseQuantity(c.text, c.scale);
    ASSERT_TRUE(q) << c.text << ": " << q.error().message;
    EXPECT_EQ(*q, c.want) << c.text;
  }
  struct MiB {
    const char* text;
    int64_t want;
  } mib[] = {{"32Gi", 32768}, {"1Ti", 1048576}, {"1G", 954}, {"128974848", 123}, {"129e6", 124}, {"1Ki", 1}, {"1Mi", 1}, {"1.5Gi", 1536}, {"0", 0}};
  for (const MiB& c : mib) {
    auto q = QuantityMib(c.text);
    ASSERT_TRUE(q) << c.text << ": " << q.error().message;
    EXPECT_EQ(*q, c.want) << c.text;
  }
  EXPECT_EQ(*QuantityMilli("250m"), 250);
}

TEST(Quantity, BadQuantitiesSayWhatAQuantityIs) {
  struct Case {
    const char* text;
    const char* want;
  } cases[] = {
      {"", "it is empty"},         {"abc", "no digits"},        {"5Xi", "unknown suffix 'Xi'"}, {"--5", "no digits"},
      {"5e", "a bad exponent"},    {"5e+", "a bad exponent"},   {"1.2.3", "two decimal points"}, {"-1", "cannot be negative"},
      {"-0.5m", "cannot be negative"}, {"99999999999999999999", "too many digits"}, {"1234567890123456789", "too many digits"}, {"10E", "too large"}, {"1e1001", "a bad exponent"},
      {"8 ", "unknown suffix ' '"}, {"1mi", "unknown suffix 'mi'"}, {"1Ki ", "unknown suffix"}, {"1e99", "too large"},
  };
  for (const Case& c : cases) {
    auto q = ParseQuantity(c.text, 1);
    ASSERT_FALSE(q) << c.text;
    EXPECT_THAT(q.error().message, HasSubstr(c.want)) << c.text;
    EXPECT_THAT(q.error().message, HasSubstr("a quantity is a number with an optional suffix"));
  }
}

const char* kTrainerPod = R"({
  "metadata": {"name": "trainer-0", "namespace": "team-a", "uid": "uid-0",
               "labels": {"tidal.io/gang": "llm", "tidal.io/gang-size": "2", "tidal.io/qos": "guaranteed"},
               "annotations": {"tidal.io/min-runtime-s": "600"}},
  "spec": {
    "priority": 1000,
    "initContainers": [{"name": "fetch", "resources": {"requests": {"cpu": "32", "memory": "8Gi"}}}],
    "containers": [
      {"name": "train", "resources": {"limits": {"nvidia.com/gpu": "8", "cpu": "16", "memory": "64Gi"},
                                        "requests": {"cpu": "12"}}},
      {"name": "sidecar", "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}}}
    ],
    "overhead": {"cpu": "250m"}
  }
})";

TEST(ReadPod, CountsRequestsAsKubeSchedulerDoes) {
  auto p = ReadPod(ojson::parse(kTrainerPod));
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ(p->name, "trainer-0");
  EXPECT_EQ(p->namespace_, "team-a");
  EXPECT_EQ(p->uid, "uid-0");
  EXPECT_EQ(p->priority, 1000);
  // cpu: containers 12 (request wins over limit) + 0.5 = 12.5, init 32 is larger, + 0.25 overhead.
  EXPECT_EQ(p->cpu_milli, 32250);
  EXPECT_EQ(p->memory_mib, 64 * 1024 + 512);  // limits stand in for the missing memory request
  EXPECT_EQ(p->gpus, 8);
  EXPECT_EQ(p->gpu_milli, 1000);
  EXPECT_EQ(p->gang, "llm");
  EXPECT_EQ(p->gang_size, 2);
  EXPECT_EQ(p->tier, "guaranteed");
  EXPECT_EQ(p->min_runtime_s, 600);
  EXPECT_EQ(p->UnitKey(), "team-a/llm");

  auto lone = ReadPod(ojson::parse(
      R"({"metadata":{"name":"nb","uid":"u9","annotations":{"tidal.io/gpu-milli":"250"}},"spec":{"nodeName":"n1","containers":[{"resources":{"limits":{"nvidia.com/gpu":1}}}]}})"));
  ASSERT_TRUE(lone) << lone.error().message;
  EXPECT_EQ(lone->namespace_, "default");
  EXPECT_EQ(lone->gpu_milli, 250);
  EXPECT_EQ(lone->node_name, "n1");
  EXPECT_EQ(lone->tier, "standard");
  EXPECT_EQ(lone->UnitKey(), "pod:u9");
}

TEST(ReadPod, BadPodsAreRefusedNamingThePodAndField) {
  struct Case {
    const char* name;
    std::string pod, want;
  } cases[] = {
      {"not an object", "[]", "expected a v1.Pod object"},
      {"no metadata", R"({"spec":{}})", "no metadata"},
      {"no name", R"({"metadata":{"uid":"u"}})", "metadata.name is missing"},
      {"no uid", R"({"metadata":{"name":"p"}})", "pod 'p': metadata.uid is missing"},
      {"name a number", R"({"metadata":{"name":3}})", "name must be a string"},
      {"labels a list", R"({"metadata":{"name":"p","uid":"u","labels":[]}})", "metadata.labels must be a map"},
      {"label a number", R"({"metadata":{"name":"p","uid":"u","labels":{"a":1}}})", "metadata.labels[a] must be a string"},
      {"spec a string", R"({"metadata":{"name":"p","uid":"u"},"spec":"x"})", "spec must be an object"},
      {"priority a string", R"({"metadata":{"name":"p","uid":"u"},"spec":{"priority":"high"}})", "spec.priority must be a 32-bit integer"},
      {"priority too big", R"({"metadata":{"name":"p","uid":"u"},"spec":{"priority":4294967296}})", "32-bit"},
      {"containers a map", R"({"metadata":{"name":"p","uid":"u"},"spec":{"containers":{}}})", "spec.containers must be a list"},
      {"init a map", R"({"metadata":{"name":"p","uid":"u"},"spec":{"initContainers":{}}})", "spec.initContainers must be a list"},
      {"bad quantity", R"({"metadata":{"name":"p","uid":"u"},"spec":{"containers":[{"resources":{"limits":{"nvidia.com/gpu":"eight"}}}]}})",
       "pod 'p': spec.containers[0].resources.limits[nvidia.com/gpu]: quantity 'eight'"},
      {"quantity a list", R"({"metadata":{"name":"p","uid":"u"},"spec":{"containers":[{"resources":{"requests":{"cpu":[1]}}}]}})",
       "requests[cpu]: expected a quantity string"},
      {"requests a list", R"({"metadata":{"name":"p","uid":"u"},"spec":{"containers":[{"resources":{"requests":[]}}]}})",
       "expected a map of resource name to quantity"},
      {"too many gpus", R"({"metadata":{"name":"p","uid":"u"},"spec":{"containers":[{"resources":{"limits":{"nvidia.com/gpu":"5000"}}}]}})",
       "at most 4096"},
      {"gpu-milli on 2 gpus",
       R"({"metadata":{"name":"p","uid":"u","annotations":{"tidal.io/gpu-milli":"500"}},"spec":{"containers":[{"resources":{"limits":{"nvidia.com/gpu":"2"}}}]}})",
       "must ask nvidia.com/gpu: 1"},
      {"gpu-milli 0", R"({"metadata":{"name":"p","uid":"u","annotations":{"tidal.io/gpu-milli":"0"}}})", "tidal.io/gpu-milli='0' must be a whole number in [1, 1000]"},
      {"gpu-milli text", R"({"metadata":{"name":"p","uid":"u","annotations":{"tidal.io/gpu-milli":"half"}}})", "must be a whole number"},
      {"bad qos", R"({"metadata":{"name":"p","uid":"u","labels":{"tidal.io/qos":"gold"}}})", "tidal.io/qos='gold' must be guaranteed, standard or spot"},
      {"gang without size", R"({"metadata":{"name":"p","uid":"u","labels":{"tidal.io/gang":"g"}}})", "no tidal.io/gang-size label"},
      {"gang size 0", R"({"metadata":{"name":"p","uid":"u","labels":{"tidal.io/gang":"g","tidal.io/gang-size":"0"}}})", "tidal.io/gang-size='0'"},
      {"empty gang", R"({"metadata":{"name":"p","uid":"u","labels":{"tidal.io/gang":""}}})", "label tidal.io/gang is empty"},
      {"min runtime negative", R"({"metadata":{"name":"p","uid":"u","annotations":{"tidal.io/min-runtime-s":"-1"}}})", "tidal.io/min-runtime-s='-1'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto p = ReadPod(ojson::parse(c.pod));
    ASSERT_FALSE(p);
    EXPECT_THAT(p.error().message, HasSubstr(c.want));
  }
}

std::string Node(const std::string& name, const std::string& leaf, int gpus, bool cordoned = false) {
  return fmt::format(
      R"({{"metadata":{{"name":"{}","labels":{{"nvidia.com/gpu.product":"NVIDIA-H100-80GB-HBM3","nvidia.com/gpu.count":"{}","fabric.topograph.run/tier-0":"{}"}}}},)"
      R"("spec":{{"unschedulable":{}}},"status":{{"allocatable":{{"cpu":"96","memory":"1Ti","nvidia.com/gpu":"{}","pods":"110"}}}}}})",
      name, gpus, leaf, cordoned ? "true" : "false", gpus);
}

TEST(ImportNodes, ANodeListBecomesTidalsCluster) {
  const std::string list = "{\"kind\":\"NodeList\",\"items\":[" + Node("n1", "leaf1", 8) + "," + Node("n2", "leaf1", 8) + "," +
                           Node("n3", "leaf2", 8, true) + "]}";
  auto c = ImportNodes(ojson::parse(list), "nodes.json");
  ASSERT_TRUE(c) << c.error().message;
  ASSERT_EQ(c->nodes.size(), 3u);
  EXPECT_EQ(c->nodes[0].name, "n1");
  EXPECT_EQ(c->nodes[0].cpu_milli, 96000);
  EXPECT_EQ(c->nodes[0].memory_mib, 1048576);
  EXPECT_EQ(c->nodes[0].gpu_count, 8);
  EXPECT_FALSE(c->nodes[0].gpu_model.empty());
  EXPECT_THAT(c->unschedulable, ::testing::ElementsAre("n3"));
  ASSERT_TRUE(c->topology);
  EXPECT_EQ(c->topology->num_hosts(), 3);
  auto cluster = ClusterState::Build(c->nodes);
  ASSERT_TRUE(cluster);
  EXPECT_TRUE(cluster->AttachTopology(c->topology));
}

TEST(ImportNodes, ReadsTheNodesOfARealFilterRequest) {
  const auto file = testing::ExtenderFixtures() / "simulator-2024-filter-result-nodecache-false.json";
  if (!std::filesystem::exists(file)) GTEST_SKIP() << "no fixtures";
  auto r = ParseExtenderFilterResult(testing::Slurp(file));
  ASSERT_TRUE(r);
  auto c = ImportNodes(*r->nodes, "simulator");
  ASSERT_TRUE(c) << c.error().message;
  ASSERT_EQ(c->nodes.size(), 1u);
  EXPECT_EQ(c->nodes[0].name, "node-tzjll");
  EXPECT_EQ(c->nodes[0].cpu_milli, 4000);
  EXPECT_EQ(c->nodes[0].memory_mib, 32768);
  EXPECT_EQ(c->nodes[0].gpu_count, 0);
}

TEST(ImportNodes, BadNodeListsAreRefused) {
  struct Case {
    const char* name;
    std::string list, want;
  } cases[] = {
      {"no items", R"({"kind":"NodeList"})", "nodes.json: no nodes"},
      {"empty items", R"({"items":[]})", "no nodes"},
      {"bad cpu", R"({"items":[{"metadata":{"name":"a"},"status":{"allocatable":{"cpu":"lots"}}}]})", "node 'a') status.allocatable[cpu]: quantity 'lots'"},
      {"no name", R"({"items":[{"metadata":{},"status":{}}]})", ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto r = ImportNodes(ojson::parse(c.list), "nodes.json");
    ASSERT_FALSE(r);
    EXPECT_THAT(r.error().message, HasSubstr(c.want));
  }
}

}  // namespace
}  // namespace tidal::k8s

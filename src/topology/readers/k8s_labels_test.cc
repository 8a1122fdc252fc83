#include "topology/readers/k8s_labels.h"

#include <array>
#include <map>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/rng.h"
#include "topology/formats.h"
#include "topology/topology_test_util.h"

namespace tidal::topo {
namespace {

using nlohmann::json;
using testing::Describe;
using testing::HasNote;
using testing::ReadShared;
using Labels = std::map<std::string, std::string>;

const std::string kDir = "fixtures/k8s-gpu-labels/";

// A Node as `kubectl get nodes -o json` prints it (the fields tidal ignores
// included, so the reader is tested against the real shape).
json MakeNode(const std::string& name, Labels labels, int gpus) {
  labels.emplace("kubernetes.io/hostname", name);
  labels.emplace("kubernetes.io/os", "linux");
  labels.emplace("beta.kubernetes.io/arch", "arm64");
  json capacity = {{"cpu", "144"}, {"memory", "1968505140Ki"}, {"pods", "110"}, {"ephemeral-storage", "3750635464Ki"}};
  if (gpus >= 0) capacity["nvidia.com/gpu"] = std::to_string(gpus);
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata",
           {{"name", name},
            {"labels", labels},
            {"annotations", {{"node.alpha.kubernetes.io/ttl", "0"}, {"volumes.kubernetes.io/controller-managed-attach-detach", "true"}}},
            {"creationTimestamp", "2025-03-01T10:00:00Z"},
            {"uid", "6a1f0c4e-1111-2222-3333-444455556666"}}},
          {"spec", {{"podCIDR", "10.244.1.0/24"}}},
          {"status", {{"capacity", capacity}, {"allocatable", capacity}, {"nodeInfo", {{"kubeletVersion", "v1.31.4"}}}}}};
}

std::string NodeList(const std::vector<json>& items) {
  json j = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}, {"metadata", {{"resourceVersion", ""}}}};
  return j.dump(4);
}

// An NVL72 system: 18 GB200 compute trays (4 GPUs each) per rack, one
// clique per rack, topograph tiers leaf (tier-0) and spine (tier-1).
std::vector<json> Nvl72Nodes(bool old_topograph_keys) {
  std::vector<json> nodes;
  const char* uuids[] = {"7b968a6d-c8aa-45e1-9e07-e1e51be99c31", "2f4e9c1a-58b0-4c77-9a61-0d2f3e8b7c10"};
  for (int rack = 0; rack < 2; ++rack) {
    for (int tray = 1; tray <= 18; ++tray) {
      Labels l = {{"nvidia.com/gpu.count", "4"},
                  {"nvidia.com/gpu.product", "NVIDIA-GB200"},
                  {"nvidia.com/gpu.memory", "189471"},
                  {"nvidia.com/gpu.family", "blackwell"},
                  {"nvidia.com/mig.capable", "false"}};
      const std::string clique = fmt::format("{}.{}", uuids[rack], 32766);
      const std::string leaf = fmt::format("leaf-{}", rack + 1);
      if (old_topograph_keys) {
        l["network.topology.nvidia.com/accelerator"] = clique;
        l["network.topology.nvidia.com/leaf"] = leaf;
        l["network.topology.nvidia.com/spine"] = "spine-1";
      } else {
        l["nvidia.com/gpu.clique"] = clique;
        l["fabric.topograph.run/tier-0"] = leaf;
        l["fabric.topograph.run/tier-1"] = "spine-1";
      }
      nodes.push_back(MakeNode(fmt::format("gb200-r{}-t{:02}", rack + 1, tray), l, 4));
    }
  }
  return nodes;
}

TEST(K8sLabels, GpuOperatorH100NodeWithMigDisabled) {
  if (!testing::HaveShared(kDir)) GTEST_SKIP() << "no shared fixtures";
  auto t = ReadK8sNodeLabels(ReadShared(kDir + "gpu-operator-docs-h100-mig-node-labels.json"), "h100.json");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(Describe(*t), (std::vector<std::string>{"node s4124-0073 <- - gpus=1"}));
  EXPECT_EQ(t->layout(0).gpu_model, "NVIDIA-H100-80GB-HBM3");
  EXPECT_FALSE(t->layout(0).nvlink);
  // MIG is capable but configured all-disabled: the count is one whole GPU and there is nothing to note about MIG.
  EXPECT_FALSE(HasNote(*t, "MIG"));
}

TEST(K8sLabels, GpuOperatorH100NodeWithMigMixed) {
  if (!testing::HaveShared(kDir)) GTEST_SKIP() << "no shared fixtures";
  auto t = ReadK8sNodeLabels(ReadShared(kDir + "gpu-operator-docs-h100-mig-mixed-node-labels.json"), "mixed.json");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(Describe(*t), (std::vector<std::string>{"node s4124-0073 <- - gpus=1"}));
  EXPECT_EQ(t->layout(0).gpu_model, "NVIDIA-H100-80GB-HBM3");
  EXPECT_TRUE(HasNote(*t,
                      "MIG mixed strategy on 1 node(s) (s4124-0073): nvidia.com/gpu.count 1 counts whole GPUs, as tidal does; "
                      "their MIG devices (2x 1g.10gb, 1x 2g.20gb, 1x 3g.40gb) are partitions of those GPUs, not more GPUs"));
}

TEST(K8sLabels, DocumentationExcerptIsAClearError) {
  if (!testing::HaveShared(kDir)) GTEST_SKIP() << "no shared fixtures";
  const std::string text = ReadShared(kDir + "cloud-native-docs-a100-pcie-mig-single-node-labels.txt");
  auto t = ReadK8sNodeLabels(text, "a100.txt");
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message.find("a100.txt:1: the text starts with '...': it is an excerpt of a label dump"), std::string::npos)
      << t.error().message;
  EXPECT_EQ(DetectFormat(text, "a100.txt").value_or(Format::kAuto), Format::kK8sLabels);
  // The same labels made whole (the dots dropped, the object closed, a
  // hostname added): MIG single counts 7 MIG devices of one A100.
  std::string whole = "{\n" + text.substr(text.find("...") + 3);
  whole.insert(whole.find('{') + 1, "\n\"kubernetes.io/hostname\": \"a100-node\",");
  auto w = ReadK8sNodeLabels(whole, "a100.json");
  ASSERT_TRUE(w) << w.error().message;
  EXPECT_EQ(Describe(*w), (std::vector<std::string>{"node a100-node <- - gpus=1"}));
  EXPECT_EQ(w->layout(0).gpu_model, "A100-PCIE-40GB");
  EXPECT_TRUE(HasNote(*w,
                      "MIG single strategy on 1 node(s) (a100-node): nvidia.com/gpu.count 7 counts 1g.5gb MIG devices of "
                      "A100-PCIE-40GB; tidal counts whole GPUs: 1 (7 devices per GPU)"));
}

TEST(K8sLabels, MigSingleOnEightGpusCountsWholeGpus) {
  // GFD's own example: 8 A100s in 7 slices each report gpu.count 56.
  Labels l = {{"kubernetes.io/hostname", "dgx-a100"}, {"nvidia.com/mig.strategy", "single"},
              {"nvidia.com/gpu.count", "56"},         {"nvidia.com/gpu.product", "A100-SXM4-40GB-MIG-1g.5gb"},
              {"nvidia.com/gpu.slices.gi", "1"},      {"nvidia.com/gpu.memory", "5120"}};
  auto t = ReadK8sNodeLabels(json(l).dump(), "dgx.json");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->total_gpus(), 8);
  EXPECT_EQ(t->layout(0).gpu_model, "A100-SXM4-40GB");
  l["nvidia.com/gpu.count"] = "16";
  l["nvidia.com/gpu.product"] = "A100-SXM4-40GB-MIG-3g.20gb";
  l["nvidia.com/gpu.slices.gi"] = "3";  // two 3g devices per GPU
  t = ReadK8sNodeLabels(json(l).dump(), "dgx.json");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->total_gpus(), 8);
  // Time-slicing renames the product; the count stays physical.
  Labels s = {{"kubernetes.io/hostname", "t4"},
              {"nvidia.com/gpu.count", "4"},
              {"nvidia.com/gpu.product", "Tesla-T4-SHARED"},
              {"nvidia.com/gpu.replicas", "4"}};
  t = ReadK8sNodeLabels(json(s).dump(), "t4.json");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->total_gpus(), 4);
  EXPECT_EQ(t->layout(0).gpu_model, "Tesla-T4");
}

TEST(K8sLabels, Nvl72CliquesAndTopographTiers) {
  auto nodes = Nvl72Nodes(false);
  nodes.push_back(MakeNode("cpu-ctl-1", {{"node-role.kubernetes.io/control-plane", ""}}, -1));
  auto t = ReadK8sNodeLabels(NodeList(nodes), "nvl72.json");
  ASSERT_TRUE(t) << t.error().message;
  std::vector<std::string> want = {"core cluster <- - hosts=37 gpus=144", "spine spine-1 <- cluster hosts=36 gpus=144",
                                   "leaf leaf-1 <- spine-1 hosts=18 gpus=72",
                                   "block 7b968a6d-c8aa-45e1-9e07-e1e51be99c31.32766 <- leaf-1 hosts=18 gpus=72 nvlink"};
  for (int i = 1; i <= 18; ++i)
    want.push_back(fmt::format("node gb200-r1-t{:02} <- 7b968a6d-c8aa-45e1-9e07-e1e51be99c31.32766 gpus=4 nvlink", i));
  want.push_back("leaf leaf-2 <- spine-1 hosts=18 gpus=72");
  want.push_back("block 2f4e9c1a-58b0-4c77-9a61-0d2f3e8b7c10.32766 <- leaf-2 hosts=18 gpus=72 nvlink");
  for (int i = 1; i <= 18; ++i)
    want.push_back(fmt::format("node gb200-r2-t{:02} <- 2f4e9c1a-58b0-4c77-9a61-0d2f3e8b7c10.32766 gpus=4 nvlink", i));
  want.push_back("node cpu-ctl-1 <- cluster gpus=0");
  EXPECT_EQ(Describe(*t), want);
  // All 72 GPUs of a rack are one NVLink domain; each rack has its own leaf, so racks meet at the spine.
  const DomainId g = t->host_gpu(*t->FindHost("gb200-r1-t01"), 0);
  EXPECT_EQ(t->gpus_under(t->NvlinkDomain(g)), 72);
  const DomainId other = t->host_gpu(*t->FindHost("gb200-r2-t18"), 3);
  EXPECT_EQ(t->level(t->Between(g, other).common), Level::kSpine);
  EXPECT_EQ(t->layout(0).gpu_model, "NVIDIA-GB200");
  EXPECT_TRUE(HasNote(*t, "1 node(s) carry no topology label (cpu-ctl-1); they sit directly under the root"));
  // Topograph's original keys give the same tree.
  auto old = ReadK8sNodeLabels(NodeList(Nvl72Nodes(true)), "old.json");
  ASSERT_TRUE(old) << old.error().message;
  want.erase(want.begin());  // no control-plane node: spine-1 is the root
  want.pop_back();
  want[0] = "spine spine-1 <- - hosts=36 gpus=144";
  EXPECT_EQ(Describe(*old), want);
}

TEST(K8sLabels, CliqueWinsOverACoarserAcceleratorDomain) {
  // AWS: topograph's accelerator domain is the capacity block (the whole
  // NVL domain), the clique one partition of it (topograph node-labels.md).
  std::vector<json> nodes;
  for (int i = 0; i < 4; ++i) {
    nodes.push_back(MakeNode(fmt::format("p6e-{}", i),
                             {{"nvidia.com/gpu.count", "4"},
                              {"accelerator.topograph.run/domain", "cr-0a1b2c3d"},
                              {"nvidia.com/gpu.clique", fmt::format("9d0e.{}", i / 2)}},
                             4));
  }
  auto t = ReadK8sNodeLabels(NodeList(nodes), "aws.json");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(Describe(*t), (std::vector<std::string>{"leaf cluster <- - hosts=4 gpus=16", "block 9d0e.0 <- cluster hosts=2 gpus=8 nvlink",
                                                    "node p6e-0 <- 9d0e.0 gpus=4 nvlink", "node p6e-1 <- 9d0e.0 gpus=4 nvlink",
                                                    "block 9d0e.1 <- cluster hosts=2 gpus=8 nvlink", "node p6e-2 <- 9d0e.1 gpus=4 nvlink",
                                                    "node p6e-3 <- 9d0e.1 gpus=4 nvlink"}));
  EXPECT_TRUE(HasNote(*t, "4 node(s) carry both nvidia.com/gpu.clique and a topograph accelerator domain that differ"));
}

TEST(K8sLabels, KueueDocsExampleRacksAreNamedWithinTheirBlock) {
  // kueue site/content/en/docs/concepts/topology_aware_scheduling.md: node-1
  // and node-3 share the rack label but are in different blocks.
  const std::vector<std::array<const char*, 3>> rows = {
      {"node-1", "block-1", "rack-1"}, {"node-2", "block-1", "rack-2"}, {"node-3", "block-2", "rack-1"}, {"node-4", "block-2", "rack-3"}};
  std::vector<json> nodes;
  for (const auto& r : rows) {
    nodes.push_back(MakeNode(r[0],
                             {{"cloud.provider.com/topology-block", r[1]},
                              {"cloud.provider.com/topology-rack", r[2]},
                              {"topology.kubernetes.io/zone", "us-east1-b"},
                              {"topology.kubernetes.io/region", "us-east1"}},
                             8));
  }
  auto t = ReadK8sNodeLabels(NodeList(nodes), "kueue.json");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(Describe(*t),
            (std::vector<std::string>{
                "zone us-east1-b <- - hosts=4 gpus=32", "spine us-east1-b/block-1 <- us-east1-b hosts=2 gpus=16",
                "leaf us-east1-b/block-1/rack-1 <- us-east1-b/block-1 hosts=1 gpus=8", "node node-1 <- us-east1-b/block-1/rack-1 gpus=8",
                "leaf us-east1-b/block-1/rack-2 <- us-east1-b/block-1 hosts=1 gpus=8", "node node-2 <- us-east1-b/block-1/rack-2 gpus=8",
                "spine us-east1-b/block-2 <- us-east1-b hosts=2 gpus=16",
                "leaf us-east1-b/block-2/rack-1 <- us-east1-b/block-2 hosts=1 gpus=8", "node node-3 <- us-east1-b/block-2/rack-1 gpus=8",
                "leaf us-east1-b/block-2/rack-3 <- us-east1-b/block-2 hosts=1 gpus=8", "node node-4 <- us-east1-b/block-2/rack-3 gpus=8"}));
  EXPECT_TRUE(HasNote(*t, "label topology.kubernetes.io/region (on 4 node(s)) is not modelled: tidal's outermost level is the zone"));
}

TEST(K8sLabels, GkeBlocksAndSubblocks) {
  std::vector<json> nodes;
  for (int i = 0; i < 4; ++i) {
    nodes.push_back(MakeNode(fmt::format("gke-a3u-{}", i),
                             {{"cloud.google.com/gce-topology-block", "34a5b6c7d8e9"},
                              {"cloud.google.com/gce-topology-subblock", i < 2 ? "f00d01" : "f00d02"},
                              {"cloud.google.com/gce-topology-host", fmt::format("h{}", i)},
                              {"nvidia.com/gpu.count", "8"},
                              {"nvidia.com/gpu.product", "NVIDIA-H200"}},
                             8));
  }
  auto t = ReadK8sNodeLabels(NodeList(nodes), "gke.json");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(Describe(*t), (std::vector<std::string>{"spine 34a5b6c7d8e9 <- - hosts=4 gpus=32",
                                                    "leaf f00d01 <- 34a5b6c7d8e9 hosts=2 gpus=16", "node gke-a3u-0 <- f00d01 gpus=8",
                                                    "node gke-a3u-1 <- f00d01 gpus=8", "leaf f00d02 <- 34a5b6c7d8e9 hosts=2 gpus=16",
                                                    "node gke-a3u-2 <- f00d02 gpus=8", "node gke-a3u-3 <- f00d02 gpus=8"}));
  EXPECT_TRUE(HasNote(*t, "label cloud.google.com/gce-topology-host (on 4 node(s)) is not modelled"));
}

TEST(K8sLabels, ValuesSharedByTwoLevelsArePrefixed) {
  std::vector<json> nodes = {MakeNode("n1", {{"fabric.topograph.run/tier-0", "sw1"}, {"fabric.topograph.run/tier-1", "sw2"}}, 8),
                             MakeNode("n2", {{"fabric.topograph.run/tier-0", "sw2"}, {"fabric.topograph.run/tier-1", "sw2"}}, 8)};
  auto t = ReadK8sNodeLabels(NodeList(nodes), "clash.json");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(Describe(*t),
            (std::vector<std::string>{"spine spine:sw2 <- - hosts=2 gpus=16", "leaf sw1 <- spine:sw2 hosts=1 gpus=8",
                                      "node n1 <- sw1 gpus=8", "leaf leaf:sw2 <- spine:sw2 hosts=1 gpus=8", "node n2 <- leaf:sw2 gpus=8"}));
  EXPECT_TRUE(HasNote(*t, "2 domain name(s) are prefixed with their level (e.g. leaf:x)"));
}

TEST(K8sLabels, ShowLabelsText) {
  const std::string text =
      "NAME       STATUS                     ROLES           AGE   VERSION   LABELS\n"
      "cp-0       Ready,SchedulingDisabled   control-plane   41d   v1.30.4   beta.kubernetes.io/arch=amd64,kubernetes.io/hostname=cp-0,"
      "node-role.kubernetes.io/control-plane=\n"
      "h100-001   Ready                      <none>          41d   v1.30.4   fabric.topograph.run/tier-0=leaf-07,fabric.topograph.run/"
      "tier-1=spine-2,kubernetes.io/hostname=h100-001,nvidia.com/gpu.count=8,nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3\n"
      "h100-002   Ready                      <none>          41d   v1.30.4   fabric.topograph.run/tier-0=leaf-07,fabric.topograph.run/"
      "tier-1=spine-2,kubernetes.io/hostname=h100-002,nvidia.com/gpu.count=8,nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3\n";
  EXPECT_EQ(DetectFormat(text, "nodes.txt").value_or(Format::kAuto), Format::kK8sLabels);
  auto t = ReadK8sNodeLabels(text, "nodes.txt");
  ASSERT_TRUE(t) << t.error().message;
  // cp-0 gives no GPU count (text has no status), so GPUs are unknown overall.
  EXPECT_EQ(Describe(*t),
            (std::vector<std::string>{"core cluster <- - hosts=3", "spine spine-2 <- cluster hosts=2", "leaf leaf-07 <- spine-2 hosts=2",
                                      "node h100-001 <- leaf-07", "node h100-002 <- leaf-07", "node cp-0 <- cluster"}));
  EXPECT_FALSE(t->gpus_known());
  EXPECT_EQ(t->layout(*t->FindHost("h100-001")).gpus, 8);
  EXPECT_TRUE(HasNote(*t, "1 node(s) give no GPU count (no nvidia.com/gpu.count label, no status.capacity): cp-0"));
  // `-o wide` adds columns with blanks (OS-IMAGE); only NAME and LABELS are read.
  const std::string wide =
      "NAME    STATUS   ROLES    AGE   VERSION   INTERNAL-IP   EXTERNAL-IP   OS-IMAGE             KERNEL-VERSION     CONTAINER-RUNTIME    "
      "LABELS\n"
      "gpu-1   Ready    <none>   2d    v1.31.0   10.0.0.5      <none>        Ubuntu 22.04.4 LTS   5.15.0-102-generic containerd://1.7.2   "
      "nvidia.com/gpu.count=8,topology.kubernetes.io/zone=z1\n";
  auto w = ReadK8sNodeLabels(wide, "wide.txt");
  ASSERT_TRUE(w) << w.error().message;
  EXPECT_EQ(Describe(*w), (std::vector<std::string>{"zone z1 <- - hosts=1 gpus=8", "node gpu-1 <- z1 gpus=8"}));
}

TEST(K8sLabels, YamlListAndJsonStream) {
  const std::string yaml =
      "apiVersion: v1\nkind: List\nitems:\n"
      "- apiVersion: v1\n  kind: Node\n  metadata:\n    name: a1\n    labels:\n      tidal.io/topology-leaf: l1\n      "
      "nvidia.com/gpu.count: 8\n"
      "  status:\n    capacity:\n      cpu: \"64\"\n      nvidia.com/gpu: \"8\"\n"
      "- apiVersion: v1\n  kind: Node\n  metadata:\n    name: a2\n    labels:\n      tidal.io/topology-leaf: l1\n"
      "  status:\n    capacity:\n      nvidia.com/gpu: \"2\"\n";
  auto t = ReadK8sNodeLabels(yaml, "nodes.yaml");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(Describe(*t), (std::vector<std::string>{"leaf l1 <- - hosts=2 gpus=10", "node a1 <- l1 gpus=8", "node a2 <- l1 gpus=2"}));
  const std::string stream = MakeNode("b1", {{"fabric.topograph.run/tier-0", "x"}}, 8).dump(2) + "\n" +
                             MakeNode("b2", {{"fabric.topograph.run/tier-0", "x"}}, 8).dump();
  auto s = ReadK8sNodeLabels(stream, "stream.json");
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(Describe(*s), (std::vector<std::string>{"leaf x <- - hosts=2 gpus=16", "node b1 <- x gpus=8", "node b2 <- x gpus=8"}));
}

TEST(K8sLabels, VolcanoHyperNodesFromTheDocs) {
  // volcano docs/user-guide/how_to_use_network_topology_aware_scheduling.md:
  // s0..s3 (tier 1) hold node0..node7, s4/s5 (tier 2) hold them, s6 the top.
  std::string yaml;
  auto hn = [&](const std::string& name, int tier, const std::string& type, const std::vector<std::string>& members, bool regex = false) {
    yaml += fmt::format(
        "---\napiVersion: topology.volcano.sh/v1alpha1\nkind: HyperNode\nmetadata:\n  name: {}\nspec:\n  tier: {}\n  members:\n", name,
        tier);
    for (const auto& m : members) {
      if (regex)
        yaml += fmt::format("  - type: {}\n    selector:\n      regexMatch:\n        pattern: \"{}\"\n", type, m);
      else
        yaml += fmt::format("  - type: {}\n    selector:\n      exactMatch:\n        name: {}\n", type, m);
    }
  };
  hn("s0", 1, "Node", {"node0", "node1"});
  hn("s1", 1, "Node", {"node2", "node3"});
  hn("s2", 1, "Node", {"^node[45]$"}, true);
  hn("s3", 1, "Node", {"node6", "node7"});
  hn("s4", 2, "HyperNode", {"s0", "s1"});
  hn("s5", 2, "HyperNode", {"s2", "s3"});
  hn("s6", 3, "HyperNode", {"s4", "s5"});
  // The regex needs the node names: the Node objects come in the same file.
  for (int i = 0; i < 8; ++i) yaml += fmt::format("---\napiVersion: v1\nkind: Node\nmetadata:\n  name: node{}\n", i);
  auto t = ReadK8sNodeLabels(yaml, "hn.yaml");
  ASSERT_TRUE(t) << t.error().message;
  // The Node objects give no GPU counts, so Describe shows hosts only.
  EXPECT_EQ(Describe(*t),
            (std::vector<std::string>{"core s6 <- - hosts=8", "spine s4 <- s6 hosts=4", "leaf s0 <- s4 hosts=2", "node node0 <- s0",
                                      "node node1 <- s0", "leaf s1 <- s4 hosts=2", "node node2 <- s1", "node node3 <- s1",
                                      "spine s5 <- s6 hosts=4", "leaf s2 <- s5 hosts=2", "node node4 <- s2", "node node5 <- s2",
                                      "leaf s3 <- s5 hosts=2", "node node6 <- s3", "node node7 <- s3"}));
  EXPECT_EQ(t->domain(t->root()).name, "s6");
}

TEST(K8sLabels, HyperNodeLabelMatch) {
  const std::string yaml =
      "apiVersion: topology.volcano.sh/v1alpha1\nkind: HyperNode\nmetadata:\n  name: rack1\nspec:\n  tier: 1\n  members:\n"
      "  - type: Node\n    selector:\n      labelMatch:\n        matchLabels:\n          topology-rack: rack1\n"
      "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n  labels:\n    topology-rack: rack1\n    nvidia.com/gpu.count: \"8\"\n"
      "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: n2\n  labels:\n    topology-rack: rack2\n    nvidia.com/gpu.count: \"8\"\n";
  auto t = ReadK8sNodeLabels(yaml, "lm.yaml");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(Describe(*t), (std::vector<std::string>{"spine cluster <- - hosts=2 gpus=16", "leaf rack1 <- cluster hosts=1 gpus=8",
                                                    "node n1 <- rack1 gpus=8", "node n2 <- cluster gpus=8"}));
  EXPECT_TRUE(HasNote(*t, "1 node(s) are in no HyperNode (n2)"));
}

TEST(K8sLabels, ParallelHyperNodesAreOneSpinePlane) {
  // Two spine switches over the same leaves (a HyperNode per switch, as
  // discovery from a fabric manager may write them) are one domain of 2 switches.
  std::string yaml;
  auto hn = [&](const std::string& name, int tier, const std::string& type, const std::vector<std::string>& members) {
    yaml += fmt::format(
        "---\napiVersion: topology.volcano.sh/v1alpha1\nkind: HyperNode\nmetadata:\n  name: {}\nspec:\n  tier: {}\n  members:\n", name,
        tier);
    for (const auto& m : members) yaml += fmt::format("  - type: {}\n    selector:\n      exactMatch:\n        name: {}\n", type, m);
  };
  hn("leaf1", 1, "Node", {"n1", "n2"});
  hn("leaf2", 1, "Node", {"n3", "n4"});
  hn("spine1", 2, "HyperNode", {"leaf1", "leaf2"});
  hn("spine2", 2, "HyperNode", {"leaf1", "leaf2"});
  auto t = ReadK8sNodeLabels(yaml, "planes.yaml");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(Describe(*t),
            (std::vector<std::string>{"spine spine[1-2] <- - hosts=4", "leaf leaf1 <- spine[1-2] hosts=2", "node n1 <- leaf1",
                                      "node n2 <- leaf1", "leaf leaf2 <- spine[1-2] hosts=2", "node n3 <- leaf2", "node n4 <- leaf2"}));
  EXPECT_EQ(t->domain(t->root()).switches, 2);
  EXPECT_TRUE(HasNote(*t, "4 node(s) are known only as HyperNode members (n1, n2, n3, n4), so their GPU counts are unknown"));
}

TEST(K8sLabels, KueueTopologyWithAForeignLevelIsNoted) {
  const std::string yaml =
      "apiVersion: kueue.x-k8s.io/v1beta1\nkind: Topology\nmetadata:\n  name: default\nspec:\n  levels:\n"
      "  - nodeLabel: example.com/pod\n  - nodeLabel: example.com/topology-rack\n  - nodeLabel: kubernetes.io/hostname\n"
      "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n  labels:\n    example.com/pod: p1\n    example.com/topology-rack: r1\n";
  auto t = ReadK8sNodeLabels(yaml, "kueue.yaml");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(Describe(*t), (std::vector<std::string>{"leaf r1 <- - hosts=1", "node n1 <- r1"}));
  EXPECT_TRUE(HasNote(*t, "kueue.yaml:1: Topology 'default' has level 'example.com/pod', which tidal does not map to a level"));
}

TEST(K8sLabels, FormatDispatchReadsKubectlOutput) {
  const std::string text = NodeList(Nvl72Nodes(false));
  auto f = DetectFormat(text, "nodes.json");
  ASSERT_TRUE(f);
  EXPECT_EQ(*f, Format::kK8sLabels);
  auto t = ParseTopology(text, "nodes.json");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->num_hosts(), 36);
  EXPECT_EQ(t->total_gpus(), 144);
  auto y = DetectFormat("apiVersion: v1\nitems:\n- apiVersion: v1\n  kind: Node\n", "nodes.yaml");
  ASSERT_TRUE(y);
  EXPECT_EQ(*y, Format::kK8sLabels);
}

TEST(K8sLabels, HugeAndDeepInputsFailCleanly) {
  EXPECT_FALSE(ReadK8sNodeLabels(std::string(200000, '['), "deep.json"));
  EXPECT_FALSE(ReadK8sNodeLabels(std::string(100000, '{'), "deep.json"));
  std::string deep_yaml;
  for (int i = 0; i < 5000; ++i) deep_yaml += std::string(static_cast<size_t>(i), ' ') + "a:\n";
  EXPECT_FALSE(ReadK8sNodeLabels(deep_yaml, "deep.yaml"));
  EXPECT_FALSE(ReadK8sNodeLabels("kind: Node\nmetadata: {name: " + std::string(100000, '[') + "\n", "flow.yaml"));
  // Many nodes are fine: 20,000 labelled nodes.
  std::vector<json> nodes;
  for (int i = 0; i < 20000; ++i) {
    nodes.push_back(json{{"kind", "Node"},
                         {"metadata",
                          {{"name", fmt::format("n{:05}", i)},
                           {"labels",
                            {{"fabric.topograph.run/tier-0", fmt::format("l{}", i / 32)},
                             {"fabric.topograph.run/tier-1", fmt::format("s{}", i / 1024)},
                             {"nvidia.com/gpu.count", "8"}}}}}});
  }
  auto t = ReadK8sNodeLabels(NodeList(nodes), "big.json");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->total_gpus(), 160000);
  EXPECT_EQ(t->domains_at(Level::kLeaf).size(), 625u);
  EXPECT_EQ(t->domains_at(Level::kSpine).size(), 20u);
}

struct Bad {
  const char* name;
  std::string text;
  std::vector<std::string> want;
};

std::string OneNode(const Labels& l) { return NodeList({MakeNode("n1", l, 8)}); }

TEST(K8sLabels, BadInputsSayWhereAndWhat) {
  const std::string hn_head = "apiVersion: topology.volcano.sh/v1alpha1\nkind: HyperNode\nmetadata:\n  name: s1\nspec:\n";
  const std::string node_member = "  members:\n  - type: Node\n    selector:\n      exactMatch:\n        name: n1\n";
  const std::vector<Bad> cases = {
      {"empty", "  \n\n", {"bad:", "empty"}},
      {"broken JSON", "{\n  \"a\": \"b\",\n  \"c\" \"d\"\n}\n", {"bad:3:9:", "not valid JSON", "expected ':'"}},
      {"truncated JSON", NodeList({MakeNode("n1", {}, 8)}).substr(0, 200), {"bad:", "not valid JSON", "truncated"}},
      {"labels without hostname", "{\"nvidia.com/gpu.count\": \"8\"}", {"bad:1:", "without kubernetes.io/hostname"}},
      {"label not a string",
       "{\"kubernetes.io/hostname\": \"h\", \"nvidia.com/gpu.count\": 8}",
       {"bad:1:", "'nvidia.com/gpu.count' must be a string"}},
      {"gpu count not a number",
       OneNode({{"nvidia.com/gpu.count", "eight"}}),
       {"node 'n1'", "nvidia.com/gpu.count", "'eight' is not a whole number"}},
      {"tier too deep", OneNode({{"fabric.topograph.run/tier-4", "x"}}), {"node 'n1'", "fabric.topograph.run/tier-4", "four switch tiers"}},
      {"empty topology value", OneNode({{"fabric.topograph.run/tier-0", ""}}), {"node 'n1'", "'fabric.topograph.run/tier-0' is empty"}},
      {"two leaf labels disagree",
       OneNode({{"fabric.topograph.run/tier-0", "a"}, {"network.topology.nvidia.com/leaf", "b"}}),
       {"node 'n1'", "two leaf labels disagree", "fabric.topograph.run/tier-0=a", "network.topology.nvidia.com/leaf=b"}},
      {"leaf under two spines",
       NodeList({MakeNode("n1", {{"fabric.topograph.run/tier-0", "l1"}, {"fabric.topograph.run/tier-1", "s1"}}, 8),
                 MakeNode("n2", {{"fabric.topograph.run/tier-0", "l1"}, {"fabric.topograph.run/tier-1", "s2"}}, 8)}),
       {"node 'n2'", "switch 'l1' is under both 's1'", "node 'n1'", "'s2'"}},
      {"duplicate node",
       NodeList({MakeNode("n1", {}, 8), MakeNode("n1", {}, 4)}),
       {"bad:1: items[1]", "node 'n1' appears twice", "items[0]"}},
      {"Node without name", "{\"kind\": \"Node\", \"metadata\": {}}", {"bad:1:", "has no 'name'"}},
      {"unknown kind", "{\"kind\": \"Pod\", \"metadata\": {\"name\": \"p\"}}", {"bad:1:", "kind 'Pod'"}},
      {"List without items", "{\"kind\": \"List\"}", {"bad:1:", "without items"}},
      {"YAML syntax", "kind: Node\nmetadata:\n  name: [n1\n", {"bad:", "not valid YAML"}},
      {"YAML not a mapping", "- a\n- b\n", {"bad:1:", "expected a mapping"}},
      {"HyperNode without tier", hn_head + node_member, {"bad:1: HyperNode 's1'", "no spec.tier"}},
      {"HyperNode without members", hn_head + "  tier: 1\n", {"HyperNode 's1'", "at least one"}},
      {"HyperNode two selectors",
       hn_head + "  tier: 1\n  members:\n  - type: Node\n    selector:\n      exactMatch:\n        name: n1\n      regexMatch:\n        "
                 "pattern: n\n",
       {"bad:1: HyperNode 's1': member 1", "exactly one of"}},
      {"HyperNode unknown member",
       hn_head + "  tier: 2\n  members:\n  - type: HyperNode\n    selector:\n      exactMatch:\n        name: s9\n",
       {"member 1", "HyperNode 's9' is not in the input"}},
      {"HyperNode tier order",
       hn_head + "  tier: 1\n" + node_member +
           "---\napiVersion: topology.volcano.sh/v1alpha1\nkind: HyperNode\nmetadata:\n  name: s2\nspec:\n  tier: 1\n  members:\n"
           "  - type: HyperNode\n    selector:\n      exactMatch:\n        name: s1\n",
       {"bad:13: HyperNode 's2': member 1", "lists HyperNode 's1' of tier 1 from tier 1"}},
      {"regex without nodes",
       hn_head + "  tier: 1\n  members:\n  - type: Node\n    selector:\n      regexMatch:\n        pattern: \"^n[0-9]+\"\n",
       {"member 1", "regexMatch '^n[0-9]+' needs the node names"}},
      {"bad regex",
       hn_head + "  tier: 1\n  members:\n  - type: Node\n    selector:\n      regexMatch:\n        pattern: \"n[\"\n---\nkind: "
                 "Node\nmetadata:\n  name: n1\n",
       {"member 1", "is not a regular expression"}},
      {"show-labels truncated",
       "NAME STATUS ROLES AGE VERSION LABELS\nn1 Ready <none> 1d v1.30 a=b\nn2 Ready <none>\n",
       {"bad:3:", "3 columns where the header has 6"}},
      {"show-labels bad label",
       "NAME STATUS ROLES AGE VERSION LABELS\nn1 Ready <none> 1d v1.30 a=b,cdef\n",
       {"bad:2:", "node 'n1'", "'cdef' is not key=value"}},
      {"Topology wrong api",
       "apiVersion: example.com/v1\nkind: Topology\nspec:\n  levels:\n  - nodeLabel: x\n",
       {"bad:1:", "apiVersion 'example.com/v1'"}},
      {"nvlink flag not bool",
       OneNode({{"tidal.io/topology-block", "b"}, {"tidal.io/topology-block-nvlink", "yes"}}),
       {"node 'n1'", "must be true or false"}},
      {"NVLink flag disagrees in a block",
       NodeList({MakeNode("n1", {{"tidal.io/topology-block", "b"}, {"tidal.io/topology-block-nvlink", "true"}}, 4),
                 MakeNode("n2", {{"tidal.io/topology-block", "b"}}, 4)}),
       {"node 'n2'", "makes block 'b' not an NVLink domain", "node 'n1'"}},
      {"second JSON value broken",
       MakeNode("n1", {}, 8).dump() + "\n{\"kind\": \"Node\",\n \"metadata\": {\"name\": }}\n",
       {"bad:3:", "not valid JSON"}},
      {"text after JSON", MakeNode("n1", {}, 8).dump() + "\nhello\n", {"bad:2:1:", "expected '{'"}},
      {"labels passed as .metadata", "{\"name\": \"n1\", \"labels\": {\"a\": \"b\"}}", {"bad:1:", "label 'labels' must be a string"}},
      {"capacity not a number",
       "{\"kind\": \"Node\", \"metadata\": {\"name\": \"n1\"}, \"status\": {\"capacity\": {\"nvidia.com/gpu\": \"8Gi\"}}}",
       {"bad:1: node 'n1'", "status.capacity nvidia.com/gpu = '8Gi' is not a whole number"}},
  };
  for (const Bad& c : cases) {
    auto t = ReadK8sNodeLabels(c.text, "bad");
    ASSERT_FALSE(t) << c.name;
    for (const auto& w : c.want) EXPECT_NE(t.error().message.find(w), std::string::npos) << c.name << ": " << t.error().message;
  }
}

// Deterministic fuzzing of every input shape: bytes replaced, text cut and
// repeated. Whatever the reader makes of it, it returns, and an error names
// the source.
TEST(K8sLabels, MutationsNeverCrash) {
  std::vector<std::string> bases = {
      NodeList({Nvl72Nodes(false)[0], Nvl72Nodes(false)[20]}),
      "NAME STATUS ROLES AGE VERSION LABELS\nn1 Ready <none> 1d v1 a=b,fabric.topograph.run/tier-0=l\n",
      "apiVersion: topology.volcano.sh/v1alpha1\nkind: HyperNode\nmetadata:\n  name: s1\nspec:\n  tier: 1\n"
      "  members:\n  - type: Node\n    selector:\n      regexMatch:\n        pattern: \"^n.*\"\n---\nkind: Node\n"
      "metadata:\n  name: n1\n",
      "apiVersion: kueue.x-k8s.io/v1beta1\nkind: Topology\nmetadata:\n  name: tidal\nspec:\n  levels:\n"
      "    - nodeLabel: tidal.io/topology-block\n    - nodeLabel: kubernetes.io/hostname\n---\napiVersion: v1\n"
      "kind: Node\nmetadata:\n  name: \"t1\"\n  labels:\n    tidal.io/topology-block: \"nvl1\"\n"
      "    tidal.io/topology-block-nvlink: \"true\"\n    kubernetes.io/hostname: \"t1\"\n"};
  if (testing::HaveShared(kDir)) bases.push_back(ReadShared(kDir + "gpu-operator-docs-h100-mig-mixed-node-labels.json").substr(0, 3000));
  const std::string alphabet("{}[]\",:\n -.\\/a0\0", 17);
  Rng rng(4962);
  int ok = 0, failed = 0;
  for (int iter = 0; iter < 2000; ++iter) {
    std::string s = bases[rng.Uniform(bases.size())];
    s = testing::Damage(std::move(s), rng, alphabet, 5, 60, 30);
    auto t = ReadK8sNodeLabels(s, "fuzz.in");
    if (t) {
      ++ok;
    } else {
      ++failed;
      ASSERT_NE(t.error().message.find("fuzz.in"), std::string::npos) << t.error().message;
    }
  }
  EXPECT_GT(ok, 0);
  EXPECT_GT(failed, 0);
}

}  // namespace
}  // namespace tidal::topo

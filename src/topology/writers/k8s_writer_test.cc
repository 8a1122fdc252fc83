#include "topology/writers/k8s.h"

#include <functional>
#include <regex>

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "topology/formats.h"
#include "topology/readers/k8s_labels.h"
#include "topology/readers/lingjun.h"
#include "topology/readers/tidal_yaml.h"
#include "topology/topology_test_util.h"

namespace tidal::topo {
namespace {

using testing::Shape;

// A 3-tier fat tree: 4 parallel core switches, 2 spines, 4 rail-optimised
// leaves (8 rails), 16 DGX hosts.
const char* kFatTree = R"(version: 1
name: fat-tree
host_types:
  dgx: {gpus: 8, gpu_model: H100, nvlink: true}
root:
  level: core
  name: core
  switches: 4
  children:
  - level: spine
    names: spine[1-2]
    children:
    - level: leaf
      names: leaf[1-4]
      rails: 8
      hosts: dgx[001-016]
      host_type: dgx
)";

// NVL72-style: 4 racks (NVLink blocks of 18 GB200 trays), two per leaf.
const char* kNvl72 = R"(version: 1
name: nvl72
host_types:
  gb200: {gpus: 4, gpu_model: GB200, nvlink: true}
root:
  level: spine
  name: spine1
  children:
  - level: leaf
    names: leaf[1-2]
    children:
    - level: block
      names: nvl[1-4]
      nvlink: true
      hosts: tray[001-072]
      host_type: gb200
)";

// Mixed depths: hosts directly under a spine next to a leaf, and a leaf
// directly under the zone.
const char* kMixed = R"(version: 1
name: mixed
host_types:
  a: {gpus: 8}
root:
  level: zone
  name: dc1
  children:
  - level: spine
    name: sp1
    children:
    - level: leaf
      name: lf1
      hosts: m[1-3]
      host_type: a
    - level: node
      names: m[4-5]
      host_type: a
  - level: leaf
    name: lf2
    hosts: m[6-7]
    host_type: a
)";

Topology Load(const char* yaml, const std::string& name) {
  auto t = ReadTidalYaml(yaml, name);
  EXPECT_TRUE(t) << t.error().message;
  return std::move(*t);
}

using Writer = std::function<Result<std::string>(const Topology&)>;
struct Named {
  const char* name;
  Writer write;
};
const std::vector<Named> kWriters = {{"kueue", WriteKueueTopology}, {"kai", WriteKaiTopology}, {"volcano", WriteVolcanoHyperNodes}};

bool IsDnsSubdomain(const std::string& s) {
  static const std::regex re("^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$");
  return s.size() <= 253 && std::regex_match(s, re);
}
bool IsLabelValue(const std::string& s) {
  static const std::regex re("^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$");
  return s.size() <= 63 && std::regex_match(s, re);
}

// What the API server would check of each object: kind and apiVersion, a
// valid metadata.name, string label values, the CRDs' own rules (levels
// unique, hostname last, 1-16 of them; a HyperNode's members of lower tiers,
// one selector each, exactMatch names that are qualified names).
void CheckObjects(const std::string& text, const std::string& what) {
  SCOPED_TRACE(what);
  std::vector<YAML::Node> docs;
  ASSERT_NO_THROW(docs = YAML::LoadAll(text));
  std::map<std::string, int> tiers;
  std::vector<std::pair<int, std::string>> hn_members;  // (tier, member HyperNode)
  for (const YAML::Node& d : docs) {
    if (d.IsNull()) continue;
    ASSERT_TRUE(d.IsMap());
    ASSERT_TRUE(d["apiVersion"] && d["kind"] && d["metadata"] && d["metadata"]["name"]);
    const std::string kind = d["kind"].as<std::string>(), name = d["metadata"]["name"].as<std::string>();
    EXPECT_TRUE(IsDnsSubdomain(name)) << name;
    if (kind == "Topology") {
      const auto levels = d["spec"]["levels"];
      ASSERT_TRUE(levels.IsSequence());
      EXPECT_GE(levels.size(), 1u);
      EXPECT_LE(levels.size(), 16u);
      std::set<std::string> keys;
      for (const auto& l : levels) EXPECT_TRUE(keys.insert(l["nodeLabel"].as<std::string>()).second);
      EXPECT_EQ(levels[levels.size() - 1]["nodeLabel"].as<std::string>(), "kubernetes.io/hostname");
    } else if (kind == "Node") {
      EXPECT_EQ(d["apiVersion"].as<std::string>(), "v1");
      for (const auto& kv : d["metadata"]["labels"]) {
        EXPECT_EQ(kv.second.Tag(), "!") << "label values are quoted strings: " << kv.first.as<std::string>();
        EXPECT_TRUE(IsLabelValue(kv.second.as<std::string>())) << kv.second.as<std::string>();
      }
    } else {
      ASSERT_EQ(kind, "HyperNode");
      EXPECT_EQ(d["apiVersion"].as<std::string>(), "topology.volcano.sh/v1alpha1");
      EXPECT_LE(name.size(), 63u);
      const int tier = d["spec"]["tier"].as<int>();
      EXPECT_GE(tier, 1);
      tiers[name] = tier;
      ASSERT_GE(d["spec"]["members"].size(), 1u);
      for (const auto& m : d["spec"]["members"]) {
        const std::string type = m["type"].as<std::string>();
        ASSERT_TRUE(type == "Node" || type == "HyperNode");
        ASSERT_EQ(m["selector"].size(), 1u);
        if (m["selector"]["exactMatch"]) {
          const std::string n = m["selector"]["exactMatch"]["name"].as<std::string>();
          EXPECT_TRUE(IsLabelValue(n) && !n.empty()) << n;
          if (type == "HyperNode") hn_members.push_back({tier, n});
        } else {
          ASSERT_TRUE(m["selector"]["regexMatch"]);
          EXPECT_EQ(type, "Node");
          EXPECT_NO_THROW(std::regex(m["selector"]["regexMatch"]["pattern"].as<std::string>()));
        }
      }
    }
  }
  for (const auto& [tier, member] : hn_members) {
    ASSERT_TRUE(tiers.contains(member)) << member;
    EXPECT_LT(tiers[member], tier) << member;
  }
}

// Names of the domains of each switch level, sorted.
std::map<Level, std::vector<std::string>> NamesByLevel(const Topology& t) {
  std::map<Level, std::vector<std::string>> out;
  for (Level l : t.levels()) {
    if (LevelIndex(l) <= LevelIndex(Level::kNode)) continue;
    for (DomainId d : t.domains_at(l)) out[l].push_back(t.domain(d).name);
    std::sort(out[l].begin(), out[l].end());
  }
  return out;
}

void RoundTrip(const Topology& t, bool names_kept) {
  for (const Named& w : kWriters) {
    SCOPED_TRACE(std::string(w.name) + " of " + t.source());
    auto text = w.write(t);
    ASSERT_TRUE(text) << text.error().message;
    CheckObjects(*text, w.name);
    EXPECT_EQ(DetectFormat(*text, "out.yaml").value_or(Format::kAuto), Format::kK8sLabels);
    auto back = ReadK8sNodeLabels(*text, "out.yaml");
    ASSERT_TRUE(back) << back.error().message << "\n" << text->substr(0, 2000);
    EXPECT_EQ(testing::HostNames(*back), testing::HostNames(t));
    EXPECT_EQ(Shape(*back), Shape(t));
    if (names_kept) {
      EXPECT_EQ(NamesByLevel(*back), NamesByLevel(t));
    }
  }
}

TEST(K8sWriters, FatTreeRoundTrips) { RoundTrip(Load(kFatTree, "fat-tree.yaml"), true); }
TEST(K8sWriters, Nvl72RoundTripsWithNvlinkBlocks) {
  const Topology t = Load(kNvl72, "nvl72.yaml");
  RoundTrip(t, true);
  // The NVLink blocks come back as NVLink domains of 72 GPUs once the GPU count is known again.
  auto back = ReadK8sNodeLabels(*WriteKueueTopology(t), "k.yaml");
  ASSERT_TRUE(back);
  for (DomainId b : back->domains_at(Level::kBlock)) EXPECT_TRUE(back->domain(b).nvlink);
  for (int32_t h = 0; h < back->num_hosts(); ++h) EXPECT_TRUE(back->layout(h).nvlink);
}
TEST(K8sWriters, MixedDepthsRoundTrip) { RoundTrip(Load(kMixed, "mixed.yaml"), true); }

TEST(K8sWriters, LingjunRoundTripsDespiteNamesKubernetesCannotTake) {
  // ToRs are "P10/S14" (a '/' is in no label value nor object name) and the
  // hosts are 64-hex hashes (one over the 63 a label value or exactMatch allows).
  std::string csv = "ip,DSW,PSW,ASW\n";
  const std::string hex = "0c9d9de1b19e7f39b08f49ddfa26744ae26d3adf8bd59af1b16e203b6fa5fe4";
  for (int i = 0; i < 6; ++i) csv += fmt::format("{}{},G6,P{},S{}\n", hex, i, i < 3 ? 10 : 12, 1 + i % 2);
  auto t = ReadLingjunCsv(csv, "lingjun.csv");
  ASSERT_TRUE(t) << t.error().message;
  RoundTrip(*t, false);
  auto volcano = WriteVolcanoHyperNodes(*t);
  ASSERT_TRUE(volcano);
  // Volcano keeps the names in annotations, so they come back exactly.
  auto back = ReadK8sNodeLabels(*volcano, "v.yaml");
  ASSERT_TRUE(back);
  EXPECT_EQ(NamesByLevel(*back), NamesByLevel(*t));
  EXPECT_NE(volcano->find("name: \"p10-s1\""), std::string::npos);
  EXPECT_NE(volcano->find("tidal.io/name: \"P10/S1\""), std::string::npos);
  EXPECT_NE(volcano->find("pattern: \"^" + hex + "0$\""), std::string::npos);
  auto kueue = WriteKueueTopology(*t);
  ASSERT_TRUE(kueue);
  EXPECT_NE(kueue->find("# domain 'P10/S1' is labelled 'P10-S1' (not a valid label value)"), std::string::npos);
  EXPECT_NE(kueue->find("# 6 node name(s) are too long for a label value (e.g. " + hex +
                        "0); their kubernetes.io/hostname is left to the "
                        "kubelet\n"),
            std::string::npos);
  EXPECT_EQ(kueue->find("kubernetes.io/hostname: \"" + hex), std::string::npos);
}

TEST(K8sWriters, RealLingjunTraceRoundTrips) {
  if (!testing::HaveShared("traces/alibaba-lingjun-2023/topo.csv")) GTEST_SKIP() << "no Lingjun trace";
  auto t = ReadLingjunCsv(testing::ReadShared("traces/alibaba-lingjun-2023/topo.csv"), "topo.csv");
  ASSERT_TRUE(t) << t.error().message;
  RoundTrip(*t, false);
}

TEST(K8sWriters, KueueExactOutput) {
  const Topology t = Load(kMixed, "mixed.yaml");
  auto k = WriteKueueTopology(t);
  ASSERT_TRUE(k) << k.error().message;
  std::string want =
      "# Kueue Topology Aware Scheduling: a Topology and node labels written by tidal from mixed.yaml (7 hosts).\n"
      "# Node labels tidal.io/topology-<level> hold each host's domains; label values are domain names.\n"
      "---\n"
      "apiVersion: kueue.x-k8s.io/v1beta1\nkind: Topology\nmetadata:\n  name: tidal\nspec:\n  levels:\n"
      "    - nodeLabel: tidal.io/topology-zone\n    - nodeLabel: tidal.io/topology-spine\n    - nodeLabel: tidal.io/topology-leaf\n"
      "    - nodeLabel: kubernetes.io/hostname\n";
  auto node = [](const std::string& name, const std::string& labels) {
    return "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: \"" + name + "\"\n  labels:\n" + labels + "    kubernetes.io/hostname: \"" +
           name + "\"\n";
  };
  const std::string z = "    tidal.io/topology-zone: \"dc1\"\n", s = "    tidal.io/topology-spine: \"sp1\"\n";
  for (int i = 1; i <= 3; ++i) want += node(fmt::format("m{}", i), z + s + "    tidal.io/topology-leaf: \"lf1\"\n");
  for (int i = 4; i <= 5; ++i) want += node(fmt::format("m{}", i), z + s);
  for (int i = 6; i <= 7; ++i) want += node(fmt::format("m{}", i), z + "    tidal.io/topology-leaf: \"lf2\"\n");
  EXPECT_EQ(*k, want);
  // KAI: the same but for the API group.
  auto kai = WriteKaiTopology(t);
  ASSERT_TRUE(kai);
  std::string want_kai = want;
  want_kai.replace(want_kai.find("kueue.x-k8s.io/v1beta1"), 22, "kai.scheduler/v1alpha1");
  want_kai.replace(0, want_kai.find(" written by"), "# KAI scheduler topology: a Topology and node labels");
  EXPECT_EQ(*kai, want_kai);
}

TEST(K8sWriters, VolcanoExactOutput) {
  const Topology t = Load(kMixed, "mixed.yaml");
  auto v = WriteVolcanoHyperNodes(t);
  ASSERT_TRUE(v) << v.error().message;
  auto hn = [](const std::string& name, const char* level, int tier, const std::string& members) {
    return fmt::format(
        "---\napiVersion: topology.volcano.sh/v1alpha1\nkind: HyperNode\nmetadata:\n  name: \"{}\"\n  annotations:\n"
        "    tidal.io/level: {}\nspec:\n  tier: {}\n  members:\n{}",
        name, level, tier, members);
  };
  auto member = [](const char* type, const std::string& name) {
    return fmt::format("    - type: {}\n      selector:\n        exactMatch:\n          name: \"{}\"\n", type, name);
  };
  std::string want =
      "# Volcano HyperNodes written by tidal from mixed.yaml (7 hosts).\n"
      "# One HyperNode per switch domain; tier 1 is the level nearest the nodes. Annotations keep tidal's level and name.\n";
  want += hn("lf1", "leaf", 1, member("Node", "m1") + member("Node", "m2") + member("Node", "m3"));
  want += hn("lf2", "leaf", 1, member("Node", "m6") + member("Node", "m7"));
  want += hn("sp1", "spine", 2, member("HyperNode", "lf1") + member("Node", "m4") + member("Node", "m5"));
  want += hn("dc1", "zone", 3, member("HyperNode", "sp1") + member("HyperNode", "lf2"));
  EXPECT_EQ(*v, want);
}

TEST(K8sWriters, EmptyDomainsAreLeftOutAndSaidSo) {
  const char* yaml = R"(version: 1
host_types:
  a: {gpus: 8}
root:
  level: spine
  name: sp
  children:
  - level: leaf
    name: full
    hosts: h[1-2]
    host_type: a
  - level: leaf
    name: spare
)";
  const Topology t = Load(yaml, "spare.yaml");
  auto k = WriteKueueTopology(t);
  ASSERT_TRUE(k);
  EXPECT_NE(k->find("# 1 domain(s) without hosts cannot be node labels and are left out: spare\n"), std::string::npos);
  EXPECT_EQ(k->find("\"spare\""), std::string::npos);
  auto v = WriteVolcanoHyperNodes(t);
  ASSERT_TRUE(v);
  EXPECT_NE(v->find("# 1 domain(s) without hosts are left out (a HyperNode needs a member): spare\n"), std::string::npos);
  CheckObjects(*v, "volcano");
  auto back = ReadK8sNodeLabels(*v, "v.yaml");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(testing::Describe(*back),
            (std::vector<std::string>{"spine sp <- - hosts=2", "leaf full <- sp hosts=2", "node h1 <- full", "node h2 <- full"}));
}

TEST(K8sWriters, OneHostAndNoSwitches) {
  const char* yaml = "version: 1\nhost_types:\n  a: {gpus: 2}\nroot:\n  level: node\n  name: solo\n  host_type: a\n";
  const Topology t = Load(yaml, "solo.yaml");
  auto k = WriteKueueTopology(t);
  ASSERT_TRUE(k);
  CheckObjects(*k, "kueue");
  auto back = ReadK8sNodeLabels(*k, "k.yaml");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(testing::HostNames(*back), std::vector<std::string>{"solo"});
  auto v = WriteVolcanoHyperNodes(t);
  ASSERT_TRUE(v);
  EXPECT_NE(v->find("# the topology has no switch domains, so there are no HyperNodes\n"), std::string::npos);
}

TEST(K8sWriters, HostNamesKubernetesRejectsAreAnError) {
  const char* yaml = "version: 1\nroot:\n  level: leaf\n  name: l\n  hosts: [GPU_Node1, ok-node]\n";
  const Topology t = Load(yaml, "caps.yaml");
  for (const Named& w : kWriters) {
    auto r = w.write(t);
    ASSERT_FALSE(r) << w.name;
    EXPECT_NE(r.error().message.find("caps.yaml: 1 host name(s) are not valid Kubernetes node names ('GPU_Node1')"), std::string::npos)
        << r.error().message;
  }
}

TEST(K8sWriters, ClashingSanitisedNamesGetHashes) {
  // "a/b" and "a_b" both become "a-b" as HyperNode names; the second one gets a hash.
  const char* yaml =
      "version: 1\nroot:\n  level: spine\n  name: top\n  children:\n  - level: leaf\n    name: a/b\n    hosts: [h1]\n"
      "  - level: leaf\n    name: a_b\n    hosts: [h2]\n";
  const Topology t = Load(yaml, "clash.yaml");
  auto v = WriteVolcanoHyperNodes(t);
  ASSERT_TRUE(v);
  CheckObjects(*v, "volcano");
  EXPECT_NE(v->find("name: \"a-b\""), std::string::npos);
  EXPECT_NE(v->find("name: \"x"), std::string::npos);
  auto back = ReadK8sNodeLabels(*v, "v.yaml");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(NamesByLevel(*back), NamesByLevel(t));
  RoundTrip(t, false);
}

}  // namespace
}  // namespace tidal::topo

// Test helpers shared by the topology placer tests (header-only: each test
// target is one source): a small cluster with a topology from tidal YAML,
// filler jobs that hold chosen devices, and placements written as
// "node:devices" strings ("a1:0-3 b2:6-7", in assignment order) so tests
// compare whole placements exactly.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "framework/framework.h"
#include "plugins/registry.h"
#include "topology/builder.h"
#include "topology/readers/tidal_yaml.h"

namespace tidal::plugins::testing {

// Test setup that cannot fail unless the test itself is wrong: aborts with the error.
inline void MustOk(const Status& s, std::string_view what) {
  if (!s) {
    std::fprintf(stderr, "%.*s: %s\n", static_cast<int>(what.size()), what.data(), s.error().ToString().c_str());
    std::abort();
  }
}
template <typename T>
T Must(Result<T> r, std::string_view what) {
  MustOk(r ? Ok() : Status(std::unexpected(r.error())), what);
  return std::move(*r);
}

// "0-3,6": runs of consecutive ascending devices as ranges.
inline std::string Devices(const std::vector<int32_t>& d) {
  std::string s;
  for (size_t i = 0; i < d.size();) {
    size_t j = i;
    while (j + 1 < d.size() && d[j + 1] == d[j] + 1) ++j;
    s += (s.empty() ? "" : ",") + std::to_string(d[i]) + (j > i ? "-" + std::to_string(d[j]) : "");
    i = j + 1;
  }
  return s;
}

inline std::string Show(const ClusterState& c, const Placement& p) {
  std::string s;
  for (const auto& a : p.assignments) s += (s.empty() ? "" : " ") + c.node_name(a.node) + ":" + Devices(a.gpus);
  return s;
}

struct Host {
  std::string name;
  int32_t gpus = 8;
  std::string model = "H100";
  int64_t cpu = 64000;
  int64_t mem = 262144;
};

// spine -> leaf1 {a1, a2}, leaf2 {b1, b2}: 8-GPU hosts.
constexpr std::string_view kTwoLeaves = R"(version: 1
root:
  level: spine
  name: spine
  children:
    - {level: leaf, name: leaf1, hosts: [a1, a2]}
    - {level: leaf, name: leaf2, hosts: [b1, b2]}
)";
inline const std::vector<Host> kTwoLeavesHosts = {{"a1"}, {"a2"}, {"b1"}, {"b2"}};

// The topology placers, as the registry builds them (one profile each).
inline std::vector<std::string> TopologyPlacers() {
  std::vector<std::string> v;
  for (const auto& n : PlacerNames())
    if (IsTopologyPlacer(n)) v.push_back(n);
  return v;
}

struct Placer {
  Profile profile;
  GangPlacePlugin& gang() { return *profile.gang; }
};
inline Placer MakePlacer(std::string_view name) {
  Placer p{Must(MakePolicyProfile(name, nullptr), name)};
  if (p.profile.gang == nullptr) std::abort();
  return p;
}

class World {
 public:
  // Nodes in `hosts` order (the node list); the topology read from `yaml`,
  // its hosts' GPU counts and models from the node list.
  World(std::string_view yaml, const std::vector<Host>& hosts) {
    std::vector<NodeSpec> specs;
    std::vector<topo::NodeGpus> ng;
    for (const Host& h : hosts) {
      specs.push_back({h.name, h.cpu, h.mem, h.gpus, h.model});
      ng.push_back({h.name, h.gpus, h.model});
    }
    cluster = Must(ClusterState::Build(specs), "nodes");
    const topo::Topology t = Must(topo::ReadTidalYaml(yaml, "test.yaml"), "yaml");
    auto m = std::make_shared<const topo::Topology>(Must(topo::Materialize(t, ng), "materialize"));
    MustOk(cluster.AttachTopology(m), "attach");
  }

  ClusterState cluster;
  Rng rng{1};
  std::deque<Job> jobs;  // stable addresses

  NodeId Id(std::string_view name) const { return *cluster.FindNode(name); }

  Job& NewJob(int32_t gpus, bool single_node = false, int64_t cpu = 0, int64_t mem = 0) {
    Job j;
    j.id = 1000 + static_cast<JobId>(jobs.size());
    j.name = "j" + std::to_string(j.id);
    j.num_gpu = gpus;
    j.gpu_milli = gpus > 0 ? kMilliPerGpu : 0;
    j.single_node = single_node;
    j.cpu_milli = cpu;
    j.memory_mib = mem;
    j.submit_time_s = 0;
    jobs.push_back(j);
    return jobs.back();
  }
  PodRequest Req(const Job& j) const { return Must(ResolveRequest(j, cluster.models()), j.name); }

  // Binds a filler job holding whole devices `devs` of `node`.
  void Hold(std::string_view node, std::vector<int32_t> devs, int64_t cpu = 0, int64_t mem = 0) {
    NodeAssignment a{Id(node), cpu, mem, devs, std::vector<int32_t>(devs.size(), kMilliPerGpu)};
    ASSERT_TRUE(cluster.Bind(next_hold_++, Placement{{a}}).has_value()) << node;
  }
  void HoldFirst(std::string_view node, int32_t count) {
    std::vector<int32_t> d;
    for (int32_t i = 0; i < count; ++i) d.push_back(i);
    Hold(node, d);
  }

  // Places `job` with `placer`; the placement must be bindable and hold
  // exactly the job's GPUs, CPU and memory. "" when not placed.
  std::string Place(GangPlacePlugin& placer, const Job& job, PlacementCost* cost = nullptr, int64_t now = 0,
                    std::string* deferred = nullptr) {
    CycleContext ctx{cluster, rng, now, cost, deferred};
    auto p = placer.PlaceGang(ctx, Req(job));
    if (!p) return "";
    Check(job, *p);
    return Show(cluster, *p);
  }
  std::string Place(std::string_view placer, const Job& job) {
    Placer p = MakePlacer(placer);
    return Place(p.gang(), job);
  }

  void Check(const Job& job, const Placement& p) const {
    EXPECT_TRUE(cluster.CanBind(p).has_value()) << Show(cluster, p);
    int64_t gpus = 0, cpu = 0, mem = 0;
    for (const auto& a : p.assignments) {
      gpus += static_cast<int64_t>(a.gpus.size());
      cpu += a.cpu_milli;
      mem += a.memory_mib;
      for (int32_t m : a.gpu_milli) EXPECT_EQ(m, kMilliPerGpu);
    }
    EXPECT_EQ(gpus, job.num_gpu) << Show(cluster, p);
    EXPECT_EQ(cpu, job.cpu_milli);
    EXPECT_EQ(mem, job.memory_mib);
    if (job.single_node) {
      EXPECT_EQ(p.assignments.size(), 1u) << Show(cluster, p);
    }
  }

 private:
  JobId next_hold_ = 1;
};

// A placement cost that returns the slowdown a test chooses for each
// placement (by its "node:devices" string).
class FakeCost final : public PlacementCost {
 public:
  explicit FakeCost(std::function<std::optional<double>(const std::string&)> f) : f_(std::move(f)) {}
  std::optional<double> Slowdown(const ClusterState& c, const Job&, const Placement& p) override {
    ++calls;
    return f_(Show(c, p));
  }
  int calls = 0;

 private:
  std::function<std::optional<double>(const std::string&)> f_;
};

}  // namespace tidal::plugins::testing

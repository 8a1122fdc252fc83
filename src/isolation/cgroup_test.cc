// PlanCgroup and Throttle: exact values per class (computed by hand in the
// comments), the NUMA choice on real `nvidia-smi topo -m` fixtures, and a
// table of bad inputs that must be clear errors.
#include "isolation/cgroup.h"

#include <gtest/gtest.h>

#include <cmath>

#include "isolation/isolation_test_util.h"
#include "topology/readers/reader_test_util.h"

namespace tidal::isolation {
namespace {

using testing::H100Layout;
using testing::Request;
using topo::FormatCpuList;
constexpr int64_t kMiB = int64_t{1} << 20;
constexpr WorkloadKind kTrain = WorkloadKind::kTraining;
constexpr WorkloadKind kInfer = WorkloadKind::kInference;

struct Expect {
  std::string what;
  ContainerRequest req;
  std::optional<int64_t> quota;
  int weight;
  std::string cpus, mems;
  int64_t min_mib;
  std::optional<int64_t> high_mib;
  int64_t max_mib;
  std::optional<int64_t> wbps;
};

ContainerRequest With(ContainerRequest c, bool borrowed, bool colocated) {
  c.borrowed = borrowed;
  c.colocated_with_inference = colocated;
  return c;
}

TEST(PlanCgroup, ExactValuesPerClass) {
  const NodeLayout n = H100Layout();
  const IsolationPolicy p = DefaultIsolationPolicy();
  const std::string node0 = "0-55,112-167", node0_free = "0-51,112-163", node1 = "56-111,168-223";
  const std::vector<Expect> cases = {
      // No CPU limit, weight 1000, the reserve included, memory protected in full, no memory.high.
      {"guaranteed inference", Request("llm", Tier::kGuaranteed, kInfer, 8, 65536, {0}), std::nullopt, 1000, node0, "0", 65536,
       std::nullopt, 65536, std::nullopt},
      // 4.5 CPUs -> 450000 µs; high 32768 * 0.95 = 31129.6 -> 31129 MiB.
      {"standard inference", Request("embed", Tier::kStandard, kInfer, 4.5, 32768, {2}), 450000, 400, node0, "0", 0, 31129,
       32768, std::nullopt},
      // Spot inference stays off the reserve; high 8192 * 0.9 = 7372.8 -> 7372.
      {"spot inference", Request("batch-infer", Tier::kSpot, kInfer, 2, 8192, {5}), 200000, 50, node1, "1", 0, 7372, 8192,
       std::nullopt},
      // GPUs on both nodes: both nodes, less the reserve; protected in full, so no memory.high below the hard limit.
      {"guaranteed training across NUMA", Request("pretrain", Tier::kGuaranteed, kTrain, 24, 196608, {3, 4}), 2400000, 200,
       "0-51,56-163,168-223", "0-1", 196608, std::nullopt, 196608, std::nullopt},
      // 16 CPUs -> 1600000; high 131072 * 0.9 = 117964.8 -> 117964; 500 MB/s -> 500000000 B/s.
      {"standard training", Request("finetune", Tier::kStandard, kTrain, 16, 131072, {0, 1}, 500), 1600000, 100, node0_free, "0", 0,
       117964, 131072, 500000000},
      // Borrowed beside inference: 8 CPUs at 500 per mille -> 4 CPUs -> 400000.
      {"borrowed standard training beside inference", With(Request("borrow", Tier::kStandard, kTrain, 8, 16384, {1}), true, true),
       400000, 100, node0_free, "0", 0, 14745, 16384, std::nullopt},
      // Borrowed, but alone with training: its full quota.
      {"borrowed standard training alone", With(Request("borrow", Tier::kStandard, kTrain, 8, 16384, {1}), true, false), 800000, 100,
       node0_free, "0", 0, 14745, 16384, std::nullopt},
      // Spot beside inference: 32 -> 16 CPUs -> 1600000; high 262144 * 0.8 = 209715.2 -> 209715.
      {"spot training beside inference", With(Request("sweep", Tier::kSpot, kTrain, 32, 262144, {4, 5, 6, 7}), false, true), 1600000,
       10, node1, "1", 0, 209715, 262144, std::nullopt},
      // Standard training that is not borrowed keeps its quota beside inference.
      {"standard training beside inference", With(Request("own", Tier::kStandard, kTrain, 8, 16384, {1}), false, true), 800000, 100,
       node0_free, "0", 0, 14745, 16384, std::nullopt},
  };
  for (const Expect& e : cases) {
    SCOPED_TRACE(e.what);
    auto s = PlanCgroup(e.req, n, p);
    ASSERT_TRUE(s.has_value()) << s.error().message;
    EXPECT_EQ(s->cpu_quota_us, e.quota);
    EXPECT_EQ(s->cpu_period_us, 100000);
    EXPECT_EQ(s->cpu_weight, e.weight);
    EXPECT_EQ(FormatCpuList(s->cpuset_cpus), e.cpus);
    EXPECT_EQ(FormatCpuList(s->cpuset_mems), e.mems);
    EXPECT_EQ(s->memory_min_bytes, e.min_mib * kMiB);
    EXPECT_EQ(s->memory_high_bytes, e.high_mib ? std::optional<int64_t>(*e.high_mib * kMiB) : std::nullopt);
    EXPECT_EQ(s->memory_max_bytes, e.max_mib * kMiB);
    EXPECT_EQ(s->io_max ? std::optional<int64_t>(s->io_max->wbps) : std::nullopt, e.wbps);
  }
}

TEST(PlanCgroup, WeightsOrderInferenceAboveTrainingAboveSpot) {
  const IsolationPolicy p = DefaultIsolationPolicy();
  EXPECT_GT(p.For(kInfer, Tier::kGuaranteed).cpu_weight, p.For(kTrain, Tier::kStandard).cpu_weight);
  EXPECT_GT(p.For(kTrain, Tier::kStandard).cpu_weight, p.For(kTrain, Tier::kSpot).cpu_weight);
  EXPECT_GT(p.For(kTrain, Tier::kStandard).cpu_weight, p.For(kInfer, Tier::kSpot).cpu_weight);
  EXPECT_TRUE(ValidatePolicy(p).has_value());
}

TEST(PlanCgroup, IoMaxKeepsTheDevicePath) {
  auto s = PlanCgroup(Request("ckpt", Tier::kStandard, kTrain, 4, 4096, {0}, 250), H100Layout(), DefaultIsolationPolicy());
  ASSERT_TRUE(s.has_value()) << s.error().message;
  EXPECT_EQ(s->io_max->major, 259);
  EXPECT_EQ(s->io_max->minor, 0);
  EXPECT_EQ(s->io_max->path, "/dev/nvme1n1");
  NodeLayout bare = H100Layout();
  bare.checkpoint_device->path = "";
  s = PlanCgroup(Request("ckpt", Tier::kStandard, kTrain, 4, 4096, {0}, 250), bare, DefaultIsolationPolicy());
  ASSERT_TRUE(s.has_value()) << s.error().message;
  EXPECT_EQ(s->io_max->path, "/dev/block/259:0");
}

// The NUMA node nearest the GPUs, on real fixtures.
TEST(PlanCgroup, NumaChoiceOnRealFixtures) {
  const std::string dir = topo::testing::FixtureDir("nvidia-smi-topo");
  TIDAL_REQUIRE_DIR(dir);
  struct Case {
    std::string file;
    std::vector<int> gpus;
    double cpus;
    std::string cpuset, mems;
  };
  const std::vector<Case> cases = {
      {"dgx-h100-12nic-tabs-TRUNCATED-talos-report.txt", {6}, 8, "56-111,168-223", "1"},
      {"dgx-h100-12nic-tabs-TRUNCATED-talos-report.txt", {1}, 8, "0-55,112-167", "0"},
      {"dgx-h100-12nic-tabs-TRUNCATED-talos-report.txt", {3, 4}, 8, "0-223", "0-1"},
      {"stas00-ml-engineering-a100-8gpu-nv12.txt", {5}, 8, "24-47", "1"},
      {"stas00-ml-engineering-h100-8gpu-nv18-ht-affinity.txt", {4}, 16, "52-103,156-207", "1"},
      {"hpe-dl380a-gen11-h100-pcie-x2-nvlink-bridge.txt", {0, 1}, 16, "32-63,96-127", "1"},
      {"h100-sxm-8gpu-vm-passthrough-tabs-rhel-ai.txt", {7}, 8, "0-63", "0"},
      // NUMA Affinity N/A: the CPUs near the GPU, memory left to the parent.
      {"xuesongtap-desktop-2x-gtx1080ti-phb.txt", {1}, 4, "0-11", ""},
      // 60 CPUs but 52 near GPU0: the whole node, memory left to the parent.
      {"stas00-ml-engineering-h100-8gpu-nv18.txt", {0}, 60, "0-103", ""},
      // 52 CPUs fit the 52 near GPU0; 52.001 need a 53rd.
      {"stas00-ml-engineering-h100-8gpu-nv18.txt", {0}, 52, "0-51", "0"},
      {"stas00-ml-engineering-h100-8gpu-nv18.txt", {0}, 52.001, "0-103", ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    auto a = topo::ReadNvidiaSmiAffinity(topo::testing::Slurp(dir + c.file), c.file);
    ASSERT_TRUE(a.has_value()) << a.error().message;
    auto n = NodeLayoutFromAffinity(*a, {});
    ASSERT_TRUE(n.has_value()) << n.error().message;
    auto s = PlanCgroup(Request("job", Tier::kStandard, kTrain, c.cpus, 1024, c.gpus), *n, DefaultIsolationPolicy());
    ASSERT_TRUE(s.has_value()) << s.error().message;
    EXPECT_EQ(FormatCpuList(s->cpuset_cpus), c.cpuset);
    EXPECT_EQ(FormatCpuList(s->cpuset_mems), c.mems);
  }
}

TEST(PlanCgroup, NumaNodeTooSmallForTheMemoryLeavesMemsToTheParent) {
  auto a = topo::ReadNvidiaSmiAffinity(testing::H100Matrix(), "h100.txt");
  ASSERT_TRUE(a.has_value());
  NodeLayoutOptions o;
  o.numa_memory_mib = {{0, 65536}, {1, 65536}};
  auto n = NodeLayoutFromAffinity(*a, o);
  ASSERT_TRUE(n.has_value()) << n.error().message;
  auto fits = PlanCgroup(Request("a", Tier::kStandard, kTrain, 8, 65536, {0}), *n, DefaultIsolationPolicy());
  ASSERT_TRUE(fits.has_value());
  EXPECT_EQ(FormatCpuList(fits->cpuset_mems), "0");
  auto big = PlanCgroup(Request("a", Tier::kStandard, kTrain, 8, 65537, {0}), *n, DefaultIsolationPolicy());
  ASSERT_TRUE(big.has_value());
  EXPECT_TRUE(big->cpuset_mems.empty());
  EXPECT_EQ(FormatCpuList(big->cpuset_cpus), "0-55,112-167");
  ASSERT_FALSE(big->notes.empty());
  EXPECT_EQ(big->notes.back(), "NUMA node(s) 0 hold 65536 MiB, less than memory.max (65537 MiB): cpuset.mems is left to the parent "
                               "so memory may come from other nodes");
}

TEST(PlanCgroup, CpuOnlyContainerGetsTheNodeOutsideTheReserve) {
  auto s = PlanCgroup(Request("etl", Tier::kSpot, kTrain, 2, 1024, {}), H100Layout(), DefaultIsolationPolicy());
  ASSERT_TRUE(s.has_value()) << s.error().message;
  EXPECT_EQ(FormatCpuList(s->cpuset_cpus), "0-51,56-163,168-223");
  EXPECT_TRUE(s->cpuset_mems.empty());
}

TEST(PlanCgroup, SameInputSameOutput) {
  const NodeLayout n = H100Layout();
  const auto c = With(Request("sweep", Tier::kSpot, kTrain, 12.345, 5000, {2, 6}, 77), false, true);
  auto a = PlanCgroup(c, n, DefaultIsolationPolicy()), b = PlanCgroup(c, n, DefaultIsolationPolicy());
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->cpu_quota_us, b->cpu_quota_us);
  EXPECT_EQ(a->cpuset_cpus, b->cpuset_cpus);
  EXPECT_EQ(a->notes, b->notes);
  EXPECT_EQ(a->cpu_quota_us, 617200);  // 12345 milli * 500 / 1000 = 6172 milli -> 617200 µs
}

TEST(PlanCgroup, BadInputs) {
  const NodeLayout n = H100Layout();
  const IsolationPolicy p = DefaultIsolationPolicy();
  auto req = [](auto edit) {
    ContainerRequest c = Request("job", Tier::kStandard, kTrain, 8, 1024, {0});
    edit(c);
    return c;
  };
  auto pol = [&](auto edit) {
    IsolationPolicy q = p;
    edit(q);
    return q;
  };
  auto lay = [&](auto edit) {
    NodeLayout m = n;
    edit(m);
    return m;
  };
  struct Case {
    std::string what;
    ContainerRequest c;
    IsolationPolicy p;
    NodeLayout n;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"GPU the node lacks", req([](auto& c) { c.gpus = {8}; }), p, n, "container job: GPU 8 is not on node h100.txt, which has GPUs 0-7"},
      {"negative GPU", req([](auto& c) { c.gpus = {-1}; }), p, n, "GPU -1 is not on node h100.txt"},
      {"GPU twice", req([](auto& c) { c.gpus = {2, 2}; }), p, n, "container job: GPU 2 is listed twice"},
      {"zero CPUs", req([](auto& c) { c.cpus = 0; }), p, n, "container job: cpus is 0; ask for 0.001 CPUs or more"},
      {"NaN CPUs", req([](auto& c) { c.cpus = std::nan(""); }), p, n, "container job: cpus is nan"},
      {"below a millicore", req([](auto& c) { c.cpus = 0.0004; }), p, n, "cpus is 0.0004; ask for 0.001 CPUs or more"},
      {"quota below 1 ms", req([](auto& c) { c.cpus = 0.005; }), p, n,
       "container job: cpu.max quota 500 µs per 100000 µs is below the kernel's 1000 µs minimum"},
      {"more CPUs than the node", req([](auto& c) { c.cpus = 300; }), p, n, "container job: asks for 300 CPUs but node h100.txt has 224"},
      {"more CPUs than outside the reserve", req([](auto& c) { c.cpus = 220; }), p, n,
       "container job: needs 220 CPUs but node h100.txt has 216 outside the inference reserve"},
      {"zero memory", req([](auto& c) { c.memory_mib = 0; }), p, n, "container job: memory is 0 MiB; ask for 1 MiB"},
      {"bad name", req([](auto& c) { c.name = "Train_A"; }), p, n, "container name 'Train_A' must be a DNS-1123 label"},
      {"empty name", req([](auto& c) { c.name = ""; }), p, n, "container name '' must be a DNS-1123 label"},
      {"checkpoint without a device", req([](auto& c) { c.checkpoint_write_mbps = 100; }), p,
       lay([](auto& m) { m.checkpoint_device.reset(); }), "container job: checkpoint writes of 100 MB/s need node h100.txt's checkpoint block device"},
      {"negative checkpoint rate", req([](auto& c) { c.checkpoint_write_mbps = -1; }), p, n, "checkpoint_write_mbps is -1"},
      {"guaranteed and borrowed", req([](auto& c) { c.tier = Tier::kGuaranteed, c.borrowed = true; }), p, n,
       "a guaranteed container cannot run on borrowed quota"},
      {"memory.min above memory.max", req([](auto&) {}), pol([](auto& q) { q.For(kTrain, Tier::kStandard).memory_min_permille = 1200; }), n,
       "policy standard training: memory.min (1200‰ of the request) is above memory.max (1000‰ of it)"},
      {"memory.high below memory.min", req([](auto&) {}), pol([](auto& q) { q.For(kTrain, Tier::kStandard).memory_min_permille = 1000; }), n,
       "policy standard training: memory.high (900‰ of memory.max) falls below memory.min (1000‰ of the request)"},
      {"weight 0", req([](auto&) {}), pol([](auto& q) { q.For(kInfer, Tier::kSpot).cpu_weight = 0; }), n,
       "policy spot inference: cpu.weight 0 is outside the kernel's 1..10000"},
      {"weight 10001", req([](auto&) {}), pol([](auto& q) { q.For(kInfer, Tier::kSpot).cpu_weight = 10001; }), n, "cpu.weight 10001 is outside"},
      {"period too short", req([](auto&) {}), pol([](auto& q) { q.cpu_period_us = 999; }), n,
       "policy: cpu period 999 µs is outside the kernel's 1000..1000000 µs"},
      {"period too long", req([](auto&) {}), pol([](auto& q) { q.cpu_period_us = 1000001; }), n, "cpu period 1000001 µs"},
      {"no CPUs on the node", req([](auto&) {}), p, lay([](auto& m) { m.cpus_total = 0; }), "node h100.txt: cpus_total is 0"},
      {"GPU CPUs off the node", req([](auto&) {}), p, lay([](auto& m) { m.gpus[7].cpus = {230}; }),
       "node h100.txt: GPU7's CPU list (230) names CPUs outside 0-223"},
      {"NUMA nodes share CPUs", req([](auto&) {}), p, lay([](auto& m) { m.numa_cpus[1].insert(m.numa_cpus[1].begin(), 0); }),
       "node h100.txt: NUMA nodes 0 and 1 both hold CPUs 0"},
      {"bad device", req([](auto&) {}), p, lay([](auto& m) { m.checkpoint_device->major = 0; }), "checkpoint device 0:0 is not a block device number"},
      {"device path with a space", req([](auto&) {}), p, lay([](auto& m) { m.checkpoint_device->path = "/dev/my disk"; }),
       "checkpoint device path '/dev/my disk' must be an absolute path"},
  };
  for (const Case& c : cases) {
    auto s = PlanCgroup(c.c, c.n, c.p);
    ASSERT_FALSE(s.has_value()) << c.what;
    EXPECT_NE(s.error().message.find(c.error), std::string::npos) << c.what << ": " << s.error().message;
  }
}

TEST(NodeLayoutFromAffinity, BadOptions) {
  auto a = topo::ReadNvidiaSmiAffinity(testing::H100Matrix(), "h100.txt");
  ASSERT_TRUE(a.has_value());
  struct Case {
    std::string what;
    NodeLayoutOptions o;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"reserve syntax", {0, {}, "0-3,,4", {}}, "h100.txt: inference reserve '0-3,,4': item 2 is empty"},
      {"reserve off the node", {0, {}, "500", {}}, "node h100.txt: the inference reserve (500) names CPUs outside 0-223"},
      {"fewer CPUs than the lists", {100, {}, "", {}}, "h100.txt: the affinity columns name CPU 223 but the node is said to have 100 CPUs"},
      {"memory of an unknown node", {0, {{7, 1024}}, "", {}}, "h100.txt: memory is given for NUMA node 7, which no GPU row names"},
      {"zero node memory", {0, {{0, 0}}, "", {}}, "NUMA node 0 memory 0 MiB"},
  };
  for (const Case& c : cases) {
    auto n = NodeLayoutFromAffinity(*a, c.o);
    ASSERT_FALSE(n.has_value()) << c.what;
    EXPECT_NE(n.error().message.find(c.error), std::string::npos) << c.what << ": " << n.error().message;
  }
}

TEST(NodeLayoutFromAffinity, NumaNodesFromTheGpuRows) {
  const NodeLayout n = H100Layout("");
  EXPECT_EQ(n.cpus_total, 224);
  ASSERT_EQ(n.numa_cpus.size(), 2u);
  EXPECT_EQ(FormatCpuList(n.numa_cpus.at(0)), "0-55,112-167");
  EXPECT_EQ(FormatCpuList(n.numa_cpus.at(1)), "56-111,168-223");
}

TEST(Throttle, LowersTrainingToTheFractions) {
  auto s = PlanCgroup(Request("finetune", Tier::kStandard, kTrain, 16, 131072, {0, 1}, 500), H100Layout(), DefaultIsolationPolicy());
  ASSERT_TRUE(s.has_value());
  const CgroupSettings t = Throttle(*s, 0.5, 0.5, 0.25);
  EXPECT_EQ(t.cpu_quota_us, 800000);                  // 1600000 / 2
  EXPECT_EQ(t.memory_high_bytes, 58982 * kMiB);       // 117964 MiB / 2
  EXPECT_EQ(t.io_max->wbps, 125000000);               // 500000000 / 4
  EXPECT_EQ(t.memory_max_bytes, s->memory_max_bytes);  // the hard limit stays
  EXPECT_EQ(t.cpuset_cpus, s->cpuset_cpus);
  EXPECT_EQ(t.notes.back(), "throttled for an inference spike: cpu.max 1600000 -> 800000 µs, memory.high -> 58982 MiB, io.max wbps "
                            "500000000 -> 125000000");
}

TEST(Throttle, Floors) {
  auto s = PlanCgroup(Request("pretrain", Tier::kGuaranteed, kTrain, 24, 196608, {3, 4}, 500), H100Layout(), DefaultIsolationPolicy());
  ASSERT_TRUE(s.has_value());
  const CgroupSettings t = Throttle(*s, 0, -3, 0);
  EXPECT_EQ(t.cpu_quota_us, 1000);                      // the kernel's minimum
  EXPECT_EQ(t.memory_high_bytes, s->memory_min_bytes);  // never below the protection
  EXPECT_EQ(t.io_max->wbps, 1000000);                   // 1 MB/s
}

TEST(Throttle, NeverInferenceAndSafeOnAnyFraction) {
  const NodeLayout n = H100Layout();
  auto inf = PlanCgroup(Request("llm", Tier::kStandard, kInfer, 8, 8192, {0}), n, DefaultIsolationPolicy());
  ASSERT_TRUE(inf.has_value());
  const CgroupSettings t = Throttle(*inf, 0.1, 0.1, 0.1);
  EXPECT_EQ(t.cpu_quota_us, inf->cpu_quota_us);
  EXPECT_EQ(t.memory_high_bytes, inf->memory_high_bytes);
  EXPECT_EQ(t.notes.back(), "not throttled: the co-location ladder lowers training, never inference");
  auto tr = PlanCgroup(Request("job", Tier::kSpot, kTrain, 8, 8192, {0}), n, DefaultIsolationPolicy());
  ASSERT_TRUE(tr.has_value());
  const CgroupSettings same = Throttle(*tr, std::nan(""), 1, 2.5);  // NaN counts as 1; 2.5 clamps to 1
  EXPECT_EQ(same.cpu_quota_us, tr->cpu_quota_us);
  EXPECT_EQ(same.memory_high_bytes, tr->memory_high_bytes);
  EXPECT_EQ(same.notes, tr->notes);
  IsolationPolicy unlimited = DefaultIsolationPolicy();
  unlimited.For(kTrain, Tier::kSpot).cpu_limit_permille = 0;
  auto free = PlanCgroup(Request("job", Tier::kSpot, kTrain, 8, 8192, {0}), n, unlimited);
  ASSERT_TRUE(free.has_value());
  EXPECT_FALSE(free->cpu_quota_us.has_value());
  EXPECT_EQ(Throttle(*free, 0.25, 1, 1).cpu_quota_us, 200000);  // 8 CPUs' 800000 µs, a quarter
}

}  // namespace
}  // namespace tidal::isolation

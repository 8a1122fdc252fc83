#include "cluster/cluster_state.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

namespace tidal {
namespace {

ClusterState TwoNodes() {
  auto s = ClusterState::Build({{"a", 8000, 16384, 2, "T4"}, {"b", 4000, 8192, 0, ""}});
  EXPECT_TRUE(s.has_value());
  return std::move(*s);
}

TEST(ClusterStateTest, BindAndUnbindUpdateAggregates) {
  ClusterState s = TwoNodes();
  EXPECT_EQ(s.total_gpus(), 2);
  Placement p{{{0, 1000, 2048, {1}, {300}}}};
  ASSERT_TRUE(s.Bind(7, p).has_value());
  EXPECT_EQ(s.cpu_free(0), 7000);
  EXPECT_EQ(s.gpu_free(0)[1], 700);
  EXPECT_EQ(s.free_whole_gpus(0), 1);
  EXPECT_EQ(s.total_gpu_milli_allocated(), 300);
  EXPECT_EQ(s.version(0), 1u);
  ASSERT_TRUE(s.CheckInvariants().has_value());
  ASSERT_TRUE(s.Unbind(7).has_value());
  EXPECT_EQ(s.free_whole_gpus(0), 2);
  EXPECT_EQ(s.total_gpu_milli_allocated(), 0);
  ASSERT_TRUE(s.CheckInvariants().has_value());
}

TEST(ClusterStateTest, RejectsOverAllocationWithoutSideEffects) {
  ClusterState s = TwoNodes();
  ASSERT_TRUE(s.Bind(1, {{{0, 0, 0, {0}, {800}}}}).has_value());
  // Second assignment would over-allocate GPU 0; the first (valid) one must not apply either.
  auto r = s.Bind(2, {{{1, 100, 0, {}, {}}, {0, 0, 0, {0}, {300}}}});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kUnschedulable);
  EXPECT_EQ(s.cpu_free(1), 4000);
  EXPECT_FALSE(s.HasAllocation(2));
  // Same device twice in one placement counts both.
  EXPECT_FALSE(s.Bind(3, {{{0, 0, 0, {1, 1}, {600, 600}}}}).has_value());
}

// Free capacity exactly equal to the request fits (CPU, memory and a
// device's milli each); one unit more does not, and the error says which.
TEST(ClusterStateTest, ExactFitBindsAndOneUnitMoreDoesNot) {
  ClusterState s = TwoNodes();  // a: 8000 milli-CPU, 16384 MiB, 2 GPUs
  ASSERT_TRUE(s.Bind(1, {{{0, 7000, 15360, {0}, {300}}}}).has_value());
  // Left on a: 1000 milli-CPU, 1024 MiB, GPU 0 700, GPU 1 1000.
  auto cpu = s.CanBind({{{0, 1001, 0, {}, {}}}});
  ASSERT_FALSE(cpu.has_value());
  EXPECT_EQ(cpu.error().code, ErrorCode::kUnschedulable);
  EXPECT_NE(cpu.error().message.find("1001 milli-CPU, 1000 free"), std::string::npos) << cpu.error().message;
  EXPECT_FALSE(s.CanBind({{{0, 0, 1025, {}, {}}}}).has_value());
  EXPECT_FALSE(s.CanBind({{{0, 0, 0, {0}, {701}}}}).has_value());
  // Two assignments on one node are judged on their sum.
  EXPECT_FALSE(s.CanBind({{{0, 600, 0, {}, {}}, {0, 401, 0, {}, {}}}}).has_value());
  EXPECT_TRUE(s.CanBind({{{0, 600, 0, {}, {}}, {0, 400, 0, {}, {}}}}).has_value());
  // Exactly what is left, all of it at once.
  ASSERT_TRUE(s.Bind(2, {{{0, 1000, 1024, {0, 1}, {700, 1000}}}}).has_value());
  EXPECT_EQ(s.cpu_free(0), 0);
  EXPECT_EQ(s.memory_free(0), 0);
  EXPECT_EQ(s.gpu_milli_free(0), 0);
  EXPECT_EQ(s.free_whole_gpus(0), 0);
  ASSERT_TRUE(s.CheckInvariants().has_value());
  EXPECT_FALSE(s.CanBind({{{0, 1, 0, {}, {}}}}).has_value());
  EXPECT_FALSE(s.CanBind({{{0, 0, 1, {}, {}}}}).has_value());
  EXPECT_FALSE(s.CanBind({{{0, 0, 0, {1}, {1}}}}).has_value());
  EXPECT_TRUE(s.CanBind({{{0, 0, 0, {}, {}}}}).has_value());  // nothing fits in nothing
  // A whole device is 1000 milli: exactly that is a valid amount.
  ASSERT_TRUE(s.Unbind(2).has_value());
  EXPECT_EQ(s.free_whole_gpus(0), 1);
  EXPECT_TRUE(s.CanBind({{{0, 0, 0, {1}, {1000}}}}).has_value());
}

TEST(ClusterStateTest, RejectsBadInput) {
  ClusterState s = TwoNodes();
  EXPECT_FALSE(s.Bind(1, {{{5, 0, 0, {}, {}}}}).has_value());
  EXPECT_FALSE(s.Bind(1, {{{0, 0, 0, {2}, {100}}}}).has_value());
  EXPECT_FALSE(s.Bind(1, {{{0, 0, 0, {0}, {1001}}}}).has_value());
  EXPECT_FALSE(s.Bind(1, {{{0, -1, 0, {}, {}}}}).has_value());
  EXPECT_FALSE(s.Unbind(99).has_value());
  ASSERT_TRUE(s.Bind(1, {{{0, 1, 1, {}, {}}}}).has_value());
  EXPECT_FALSE(s.Bind(1, {{{0, 1, 1, {}, {}}}}).has_value());  // already bound
  EXPECT_FALSE(ClusterState::Build({{"x", 1, 1, 1, ""}}).has_value());  // GPU without model
  EXPECT_FALSE(ClusterState::Build({{"x", 1, 1, 0, ""}, {"x", 1, 1, 0, ""}}).has_value());
}

// A placement must take at least 1 milli-GPU from each device it names
// (found by mutation testing): 0 is refused as invalid, 1 and 1000 are not.
TEST(ClusterStateTest, EachDeviceTakeIsOneToAThousandMilli) {
  ClusterState s = TwoNodes();
  auto zero = s.CanBind({{{0, 0, 0, {0}, {0}}}});
  ASSERT_FALSE(zero.has_value());
  EXPECT_EQ(zero.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(zero.error().message.find("(0, 1000]"), std::string::npos) << zero.error().message;
  EXPECT_TRUE(s.CanBind({{{0, 0, 0, {0}, {1}}}}).has_value());
  EXPECT_TRUE(s.CanBind({{{0, 0, 0, {0}, {1000}}}}).has_value());
  auto over = s.CanBind({{{0, 0, 0, {0}, {1001}}}});
  ASSERT_FALSE(over.has_value());
  EXPECT_EQ(over.error().code, ErrorCode::kInvalidArgument);
}

// Any sequence of binds and unbinds, valid or not, leaves the state
// consistent: no device over-allocated, capacity conserved, aggregates exact.
RC_GTEST_PROP(ClusterStateProperty, NeverOverAllocatesAndConservesCapacity, ()) {
  auto built = ClusterState::Build({{"n0", 16000, 65536, 8, "G2"},
                                    {"n1", 8000, 32768, 2, "T4"},
                                    {"n2", 4000, 8192, 0, ""}});
  RC_ASSERT(built.has_value());
  ClusterState s = std::move(*built);
  const int64_t total = s.total_gpu_milli();
  std::vector<JobId> live;
  const int steps = *rc::gen::inRange(1, 200);
  for (int step = 0; step < steps; ++step) {
    if (!live.empty() && *rc::gen::inRange(0, 3) == 0) {
      const size_t k = static_cast<size_t>(*rc::gen::inRange<int>(0, static_cast<int>(live.size())));
      RC_ASSERT(s.Unbind(live[k]).has_value());
      live.erase(live.begin() + static_cast<long>(k));
    } else {
      const NodeId node = *rc::gen::inRange(0, 3);
      NodeAssignment a{node, *rc::gen::inRange<int64_t>(0, 6000), *rc::gen::inRange<int64_t>(0, 20000), {}, {}};
      const int ngpu = s.gpu_count(node) == 0 ? 0 : *rc::gen::inRange(0, 3);
      for (int g = 0; g < ngpu; ++g) {
        a.gpus.push_back(*rc::gen::inRange(0, s.gpu_count(node)));
        a.gpu_milli.push_back(*rc::gen::inRange(1, 1001));
      }
      const JobId id = step;
      if (s.Bind(id, {{a}}).has_value()) live.push_back(id);
    }
    RC_ASSERT(s.CheckInvariants().has_value());
    RC_ASSERT(s.total_gpu_milli_free() + s.total_gpu_milli_allocated() == total);
  }
  for (JobId id : live) RC_ASSERT(s.Unbind(id).has_value());
  RC_ASSERT(s.total_gpu_milli_free() == total);
  for (NodeId n = 0; n < s.num_nodes(); ++n) RC_ASSERT(s.cpu_free(n) == s.cpu_capacity(n));
}

}  // namespace
}  // namespace tidal

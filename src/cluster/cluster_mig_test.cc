#include <gtest/gtest.h>

#include "cluster/cluster_state.h"

namespace tidal {
namespace {

ClusterState H100Node() {
  auto s = ClusterState::Build({{"h0", 64000, 1 << 20, 2, "H100"}, {"v0", 8000, 1 << 16, 1, "V100"}});
  EXPECT_TRUE(s);
  return std::move(*s);
}

const mig::Geometry& G() { return *mig::FindGeometry("H100"); }
int32_t P(const char* name) { return G().FindProfile(name); }

Placement MigJob(int32_t gpu, const char* profile, int32_t start, int64_t cpu = 1000) {
  NodeAssignment a;
  a.node = 0;
  a.cpu_milli = cpu;
  a.mig = {{gpu, P(profile), start}};
  return Placement{{a}};
}

TEST(ClusterMig, BindingAnInstanceOnAnIdleGpuEntersMigMode) {
  ClusterState s = H100Node();
  ASSERT_TRUE(s.Bind(1, MigJob(0, "3g.40gb", 0)));
  const MigDevice* d = s.mig_device(0, 0);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(mig::FormatLayout(G(), d->layout), "3g.40gb@0");
  EXPECT_EQ(d->owner, std::vector<JobId>{1});
  // The device leaves the milli pool: MIG-unaware jobs cannot land on it.
  EXPECT_EQ(s.gpu_free(0)[0], 0);
  EXPECT_EQ(s.free_whole_gpus(0), 1);
  EXPECT_EQ(s.mig_gpus(), 1);
  EXPECT_EQ(s.mig_idle_compute(), 4);
  EXPECT_DOUBLE_EQ(s.gpus_in_use(), 3.0 / 7.0);
  EXPECT_EQ(s.mig_counters().mode_changes, 1);
  EXPECT_EQ(s.mig_counters().instances_created, 1);
  EXPECT_EQ(s.cpu_free(0), 63000);
  EXPECT_TRUE(s.CheckInvariants()) << s.CheckInvariants().error().message;
  auto milli = s.Bind(2, Placement{{{0, 0, 0, {0}, {500}}}});
  ASSERT_FALSE(milli);
  EXPECT_EQ(milli.error().code, ErrorCode::kUnschedulable);
}

// The count of MIG-mode devices per node follows mode changes, and a node
// added after devices entered MIG mode has none (its devices are whole).
TEST(ClusterMig, DevicesInMigModeAreCountedPerNode) {
  ClusterState s = H100Node();
  EXPECT_EQ(s.mig_gpus(0), 0);
  ASSERT_TRUE(s.Bind(1, MigJob(1, "3g.40gb", 0)));
  EXPECT_EQ(s.mig_gpus(0), 1);
  EXPECT_EQ(s.mig_gpus(1), 0);
  ASSERT_TRUE(s.SetMigLayout(0, 0, {}));
  EXPECT_EQ(s.mig_gpus(0), 2);
  ASSERT_TRUE(s.AddNode({"h1", 64000, 1 << 20, 2, "H100"}));
  EXPECT_EQ(s.mig_gpus(2), 0);
  EXPECT_EQ(s.mig_device(2, 1), nullptr);
  EXPECT_EQ(s.gpu_free(2)[1], kMilliPerGpu);
  ASSERT_TRUE(s.SetMigLayout(2, 1, {}));
  EXPECT_EQ(s.mig_gpus(2), 1);
  ASSERT_TRUE(s.DisableMig(0, 0));
  EXPECT_EQ(s.mig_gpus(0), 1);
  EXPECT_EQ(s.mig_gpus(), 2);
  EXPECT_TRUE(s.CheckInvariants()) << s.CheckInvariants().error().message;
}

// The idle MIG devices (in MIG mode, holding no job), which the simulator
// releases from MIG mode, are counted through every change of mode, layout
// and owner.
TEST(ClusterMig, IdleDevicesInMigModeAreCounted) {
  ClusterState s = H100Node();
  auto check = [&](int64_t want) {
    EXPECT_EQ(s.idle_mig_gpus(), want);
    EXPECT_EQ(s.mig_idle_compute(0), s.mig_idle_compute());  // one node holds them all
    EXPECT_TRUE(s.CheckInvariants()) << s.CheckInvariants().error().message;
  };
  check(0);
  ASSERT_TRUE(s.Bind(1, MigJob(0, "3g.40gb", 0)));  // enters MIG mode held
  check(0);
  ASSERT_TRUE(s.SetMigLayout(0, 1, {}));  // enters MIG mode idle
  check(1);
  ASSERT_TRUE(s.Bind(2, MigJob(1, "1g.10gb", 6)));
  check(0);
  ASSERT_TRUE(s.Bind(3, MigJob(1, "1g.10gb", 5)));
  check(0);
  ASSERT_TRUE(s.Unbind(2));  // one of two held: still busy
  check(0);
  ASSERT_TRUE(s.Unbind(3));
  check(1);
  ASSERT_TRUE(s.SetMigLayout(0, 1, *mig::ParseLayout(G(), "7g.80gb@0")));  // re-partitioned, still idle
  check(1);
  ASSERT_TRUE(s.Unbind(1));
  check(2);
  ASSERT_TRUE(s.DisableMig(0, 1));
  check(1);
  ASSERT_TRUE(s.DisableMig(0, 0));
  check(0);
  ClusterState copy = s;
  ASSERT_TRUE(copy.SetMigLayout(0, 0, {}));
  EXPECT_EQ(copy.idle_mig_gpus(), 1);
  check(0);
}

// A re-partition changes the node (caches keyed by its version see it), and
// DisableMig names a GPU of that node only: one past its last is an error,
// not the next node's first.
TEST(ClusterMig, SetMigLayoutMovesTheNodeVersionAndDisableMigStaysOnItsNode) {
  auto built = ClusterState::Build({{"h0", 64000, 1 << 20, 2, "H100"}, {"h1", 64000, 1 << 20, 2, "H100"}});
  ASSERT_TRUE(built);
  ClusterState& s = *built;
  const uint64_t before = s.version(0);
  ASSERT_TRUE(s.SetMigLayout(0, 1, {}));
  EXPECT_GT(s.version(0), before);
  const uint64_t again = s.version(0);
  ASSERT_TRUE(s.SetMigLayout(0, 1, *mig::ParseLayout(G(), "7g.80gb@0")));
  EXPECT_GT(s.version(0), again);
  ASSERT_TRUE(s.SetMigLayout(1, 0, {}));
  auto past = s.DisableMig(0, 2);
  ASSERT_FALSE(past);
  EXPECT_EQ(past.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(s.mig_device(1, 0), nullptr);  // h1's GPU 0 stays in MIG mode
  EXPECT_EQ(s.idle_mig_gpus(), 2);
}

TEST(ClusterMig, UnbindKeepsTheInstanceForTheNextJob) {
  ClusterState s = H100Node();
  ASSERT_TRUE(s.Bind(1, MigJob(0, "2g.20gb", 2)));
  ASSERT_TRUE(s.Unbind(1));
  EXPECT_EQ(mig::FormatLayout(G(), s.mig_device(0, 0)->layout), "2g.20gb@2");
  EXPECT_EQ(s.mig_idle_compute(), 7);
  EXPECT_DOUBLE_EQ(s.gpus_in_use(), 0.0);
  ASSERT_TRUE(s.Bind(2, MigJob(0, "2g.20gb", 2)));
  EXPECT_EQ(s.mig_counters().instances_created, 1);  // reused, not created again
  EXPECT_EQ(s.mig_idle_compute(), 5);
  EXPECT_TRUE(s.CheckInvariants());
}

TEST(ClusterMig, HeldInstancesAndInvalidCreationsAreRefused) {
  ClusterState s = H100Node();
  ASSERT_TRUE(s.Bind(1, MigJob(0, "3g.40gb", 0)));
  auto held = s.Bind(2, MigJob(0, "3g.40gb", 0));
  ASSERT_FALSE(held);
  EXPECT_NE(held.error().message.find("held by job 1"), std::string::npos) << held.error().message;
  auto overlap = s.Bind(3, MigJob(0, "2g.20gb", 2));
  ASSERT_FALSE(overlap);
  EXPECT_NE(overlap.error().message.find("overlaps 3g.40gb@0"), std::string::npos) << overlap.error().message;
  auto v100 = s.Bind(4, Placement{{{1, 0, 0, {}, {}, {{0, 0, 0}}}}});
  ASSERT_FALSE(v100);
  EXPECT_EQ(v100.error().code, ErrorCode::kUnresolvable);
  // A GPU a job holds milli of cannot enter MIG mode.
  ASSERT_TRUE(s.Bind(5, Placement{{{0, 0, 0, {1}, {300}}}}));
  auto busy = s.Bind(6, MigJob(1, "1g.10gb", 0));
  ASSERT_FALSE(busy);
  EXPECT_NE(busy.error().message.find("not in MIG mode and not idle"), std::string::npos);
  // Two instances of one job that collide with each other fail as one.
  Placement two = MigJob(0, "2g.20gb", 4);
  two.assignments[0].mig.push_back({0, P("1g.20gb"), 4});
  ASSERT_FALSE(s.Bind(7, two));
  EXPECT_FALSE(s.HasAllocation(7));
  EXPECT_EQ(mig::FormatLayout(G(), s.mig_device(0, 0)->layout), "3g.40gb@0");
  EXPECT_TRUE(s.CheckInvariants());
}

TEST(ClusterMig, RepartitionKeepsHeldInstancesAndCountsChanges) {
  ClusterState s = H100Node();
  ASSERT_TRUE(s.SetMigLayout(0, 0, *mig::ParseLayout(G(), "3g.40gb@0,2g.20gb@4,1g.10gb@6")));
  EXPECT_EQ(s.mig_counters().instances_created, 3);
  ASSERT_TRUE(s.Bind(1, MigJob(0, "1g.10gb", 6)));
  // Dropping the held 1g is refused; dropping the free ones is fine.
  auto drop = s.SetMigLayout(0, 0, *mig::ParseLayout(G(), "7g.80gb@0"));
  ASSERT_FALSE(drop);
  EXPECT_NE(drop.error().message.find("held by job 1"), std::string::npos);
  ASSERT_TRUE(s.SetMigLayout(0, 0, *mig::ParseLayout(G(), "1g.10gb@0,1g.10gb@1,1g.10gb@2,1g.10gb@3,1g.10gb@4,1g.10gb@5,1g.10gb@6")));
  EXPECT_EQ(s.mig_counters().instances_destroyed, 2);
  EXPECT_EQ(s.mig_counters().instances_created, 3 + 6);
  EXPECT_EQ(s.mig_device(0, 0)->owner[6], 1);
  EXPECT_EQ(s.mig_idle_compute(), 6);
  EXPECT_TRUE(s.CheckInvariants());
  // Leaving MIG mode needs every instance free.
  EXPECT_FALSE(s.DisableMig(0, 0));
  ASSERT_TRUE(s.Unbind(1));
  const uint64_t before = s.version(0);
  ASSERT_TRUE(s.DisableMig(0, 0));
  EXPECT_GT(s.version(0), before);  // caches keyed by node version see the change
  EXPECT_EQ(s.mig_device(0, 0), nullptr);
  EXPECT_EQ(s.gpu_free(0)[0], kMilliPerGpu);
  EXPECT_EQ(s.free_whole_gpus(0), 2);
  EXPECT_EQ(s.mig_gpus(), 0);
  EXPECT_EQ(s.mig_idle_compute(), 0);
  EXPECT_EQ(s.mig_counters().mode_changes, 2);
  EXPECT_EQ(s.mig_counters().instances_destroyed, 2 + 7);
  EXPECT_TRUE(s.CheckInvariants());
}

TEST(ClusterMig, SetMigLayoutRejectsBadLayoutsAndBusyGpus) {
  ClusterState s = H100Node();
  mig::Layout bad;
  bad.instances = {{P("4g.40gb"), 0}, {P("3g.40gb"), 0}};
  auto st = s.SetMigLayout(0, 0, bad);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("node 'h0' GPU 0"), std::string::npos) << st.error().message;
  EXPECT_NE(st.error().message.find("overlaps"), std::string::npos) << st.error().message;
  EXPECT_EQ(s.mig_device(0, 0), nullptr);
  ASSERT_TRUE(s.Bind(1, Placement{{{0, 0, 0, {0}, {300}}}}));
  auto busy = s.SetMigLayout(0, 0, {});
  ASSERT_FALSE(busy);
  EXPECT_NE(busy.error().message.find("jobs hold 300 milli-GPU; MIG mode needs the GPU idle"), std::string::npos) << busy.error().message;
  EXPECT_FALSE(s.SetMigLayout(1, 0, {}));  // V100
  EXPECT_TRUE(s.CheckInvariants());
}

TEST(ClusterMig, CopiesAreIndependent) {
  ClusterState s = H100Node();
  ASSERT_TRUE(s.Bind(1, MigJob(0, "1g.10gb", 0)));
  ClusterState copy = s;
  ASSERT_TRUE(copy.Unbind(1));
  ASSERT_TRUE(copy.DisableMig(0, 0));
  EXPECT_NE(s.mig_device(0, 0), nullptr);
  EXPECT_EQ(s.mig_device(0, 0)->owner[0], 1);
  EXPECT_TRUE(s.CheckInvariants());
  EXPECT_TRUE(copy.CheckInvariants());
}

// One placement cannot both put a device into MIG mode (an instance on an
// idle GPU) and take milli-GPU from it (found by mutation testing).
TEST(ClusterMig, APlacementCannotTakeMilliFromADeviceItPutsIntoMigMode) {
  ClusterState s = H100Node();
  Placement p = MigJob(0, "3g.40gb", 0);
  p.assignments[0].gpus = {0};
  p.assignments[0].gpu_milli = {100};
  auto r = s.CanBind(p);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument) << r.error().message;
  EXPECT_FALSE(s.Bind(1, p));
  EXPECT_EQ(s.mig_device(0, 0), nullptr);
  // The instance on GPU 0 and milli from GPU 1 are fine together.
  p.assignments[0].gpus = {1};
  EXPECT_TRUE(s.Bind(1, p));
  EXPECT_EQ(s.gpu_free(0)[1], 900);
  EXPECT_TRUE(s.CheckInvariants());
}

}  // namespace
}  // namespace tidal

namespace tidal {
namespace {

TEST(ClusterMig, BindDestroysFreeInstancesInTheWayButNeverHeldOnes) {
  ClusterState s = H100Node();
  ASSERT_TRUE(s.SetMigLayout(0, 0, *mig::ParseLayout(G(), "2g.20gb@0,2g.20gb@2,2g.20gb@4")));
  ASSERT_TRUE(s.Bind(1, MigJob(0, "2g.20gb", 0)));
  // 3g@4 needs slices 4-7: the free 2g@4 goes; 2g@2 stays.
  ASSERT_TRUE(s.Bind(2, MigJob(0, "3g.40gb", 4)));
  EXPECT_EQ(mig::FormatLayout(G(), s.mig_device(0, 0)->layout), "2g.20gb@0,2g.20gb@2,3g.40gb@4");
  EXPECT_EQ(s.mig_device(0, 0)->owner, (std::vector<JobId>{1, MigDevice::kNoOwner, 2}));
  EXPECT_EQ(s.mig_counters().instances_destroyed, 1);
  EXPECT_EQ(s.mig_counters().instances_created, 4);
  // 4g@0 would need the held 2g@0: refused, nothing changes.
  auto st = s.Bind(3, MigJob(0, "4g.40gb", 0));
  ASSERT_FALSE(st);
  EXPECT_EQ(mig::FormatLayout(G(), s.mig_device(0, 0)->layout), "2g.20gb@0,2g.20gb@2,3g.40gb@4");
  EXPECT_EQ(s.mig_counters().instances_destroyed, 1);
  EXPECT_TRUE(s.CheckInvariants());
}

// The MIG layout version moves exactly when some device's instances do:
// entering MIG mode, creating or destroying instances (by a Bind or by
// SetMigLayout) and leaving MIG mode; a job taking or leaving an instance
// that exists, and a failed change, leave it.
TEST(ClusterMig, TheLayoutVersionMovesWithTheInstancesOnly) {
  ClusterState s = H100Node();
  uint64_t v = s.mig_layout_version();
  auto moved = [&] {
    const uint64_t now = s.mig_layout_version();
    const bool m = now != v;
    v = now;
    return m;
  };
  ASSERT_TRUE(s.Bind(1, MigJob(0, "2g.20gb", 2)));  // enters MIG mode, creates 2g@2
  EXPECT_TRUE(moved());
  ASSERT_TRUE(s.Unbind(1));
  EXPECT_FALSE(moved());
  ASSERT_TRUE(s.Bind(2, MigJob(0, "2g.20gb", 2)));  // the instance is there
  EXPECT_FALSE(moved());
  ASSERT_TRUE(s.Bind(3, MigJob(0, "1g.10gb", 0)));  // creates 1g@0
  EXPECT_TRUE(moved());
  ASSERT_FALSE(s.Bind(4, MigJob(0, "3g.40gb", 0)));  // would need held slices: refused
  EXPECT_FALSE(moved());
  ASSERT_TRUE(s.Unbind(2));
  ASSERT_TRUE(s.Unbind(3));
  EXPECT_FALSE(moved());
  ASSERT_TRUE(s.Bind(5, MigJob(0, "4g.40gb", 0)));  // destroys the free 1g@0 and 2g@2 in its way
  EXPECT_TRUE(moved());
  ASSERT_TRUE(s.Unbind(5));
  ASSERT_TRUE(s.SetMigLayout(0, 0, *mig::ParseLayout(G(), "7g.80gb@0")));
  EXPECT_TRUE(moved());
  ASSERT_FALSE(s.SetMigLayout(0, 9, {}));  // no such GPU
  EXPECT_FALSE(moved());
  ASSERT_TRUE(s.DisableMig(0, 0));
  EXPECT_TRUE(moved());
  const ClusterState copy = s;
  EXPECT_EQ(copy.mig_layout_version(), s.mig_layout_version());
  EXPECT_NE(copy.instance_id(), s.instance_id());
}

}  // namespace
}  // namespace tidal

// The MIG placers through the Scheduler: where instances go, what a
// MIG-unaware job can no longer use, and what can never fit.
#include <gtest/gtest.h>

#include <deque>

#include "plugins/mig/mig_pack.h"
#include "plugins/registry.h"
#include "scheduler/scheduler.h"

namespace tidal::plugins {
namespace {

const mig::Geometry& G() { return *mig::FindGeometry("H100"); }

struct Fixture {
  Scheduler scheduler;
  std::deque<Job> jobs;

  explicit Fixture(std::string_view mig_placer, std::vector<NodeSpec> nodes = {{"n0", 64000, 1 << 20, 8, "H100"}, {"n1", 64000, 1 << 20, 2, "H100"}})
      : scheduler(*ClusterState::Build(nodes), *MakePolicyProfile("bestfit", nullptr, mig_placer), 7) {}

  const Job& Mig(const char* profile) {
    Job j;
    j.id = static_cast<JobId>(jobs.size() + 1);
    j.name = "m" + std::to_string(j.id);
    j.cpu_milli = 1000;
    j.memory_mib = 1024;
    j.num_gpu = 1;
    j.gpu_milli = MigMilli(G().profile(G().FindProfile(profile)).compute);
    j.mig_profile = profile;
    jobs.push_back(j);
    return jobs.back();
  }
  const Job& Whole(int32_t n) {
    Job j;
    j.id = static_cast<JobId>(jobs.size() + 1);
    j.name = "w" + std::to_string(j.id);
    j.num_gpu = n;
    j.gpu_milli = kMilliPerGpu;
    jobs.push_back(j);
    return jobs.back();
  }
  // "node/gpu/profile@start" of a bound MIG job.
  std::string Where(const Job& j) {
    auto p = scheduler.ScheduleAndBind(j);
    if (!p) return "error: " + p.error().message;
    const NodeAssignment& a = (*p)->assignments.at(0);
    const MigSlice& s = a.mig.at(0);
    return fmt::format("{}/{}/{}@{}", a.node, s.gpu, G().profile(s.profile).name, s.start);
  }
};

TEST(MigPack, MigJobsAskForMigShares) {
  EXPECT_EQ(MigMilli(1), 143);
  EXPECT_EQ(MigMilli(2), 286);
  EXPECT_EQ(MigMilli(3), 429);
  EXPECT_EQ(MigMilli(4), 572);
  EXPECT_EQ(MigMilli(7), 1000);
}

TEST(MigPack, PacksOneGpuBeforeOpeningAnother) {
  Fixture f("pack");
  // The first enters MIG mode on the fullest node's idle GPU: n1 has 2
  // free, n0 8, so the 8-GPU node stays whole for gangs. A 3g goes to the
  // upper half (@4): the lower half then still takes a 4g or four 1g, while
  // a 3g@0 would leave room for neither a 4g nor a fourth 1g (by hand, over
  // the uniform mix: expected unusable compute 10/7 against 17/7).
  EXPECT_EQ(f.Where(f.Mig("3g.40gb")), "1/0/3g.40gb@4");
  EXPECT_EQ(f.Where(f.Mig("1g.10gb")), "1/0/1g.10gb@0");
  EXPECT_EQ(f.Where(f.Mig("1g.10gb")), "1/0/1g.10gb@1");
  // 3 + 1 + 1 + 2 = 7 compute slices: the GPU is full.
  EXPECT_EQ(f.Where(f.Mig("2g.20gb")), "1/0/2g.20gb@2");
  EXPECT_EQ(f.Where(f.Mig("7g.80gb")), "1/1/7g.80gb@0");
  EXPECT_EQ(f.Where(f.Mig("7g.80gb")), "0/0/7g.80gb@0");
  EXPECT_TRUE(f.scheduler.cluster().CheckInvariants());
}

TEST(MigPack, FirstFitTakesTheFirstIdleGpu) {
  Fixture f("first-fit");
  EXPECT_EQ(f.Where(f.Mig("3g.40gb")), "0/0/3g.40gb@0");
  EXPECT_EQ(f.Where(f.Mig("1g.10gb")), "0/0/1g.10gb@4");
  EXPECT_EQ(f.Where(f.Mig("1g.10gb")), "0/0/1g.10gb@5");
}

TEST(MigPack, FragmentationDecidesBetweenGpus) {
  Fixture f("pack", {{"n0", 64000, 1 << 20, 2, "H100"}});
  ASSERT_TRUE(f.scheduler.Bind(f.Mig("3g.40gb"), Placement{{{0, 1000, 1024, {}, {}, {{0, G().FindProfile("3g.40gb"), 0}}}}}));
  ASSERT_TRUE(f.scheduler.Bind(f.Mig("3g.40gb"), Placement{{{0, 1000, 1024, {}, {}, {{1, G().FindProfile("3g.40gb"), 4}}}}}));
  ASSERT_TRUE(f.scheduler.Bind(f.Mig("1g.10gb"), Placement{{{0, 1000, 1024, {}, {}, {{1, G().FindProfile("1g.10gb"), 0}}}}}));
  // GPU 0 has slices 4-7 free (a 3g fits), GPU 1 slices 1-3 (no 3g):
  // a 1g on GPU 1 breaks nothing a 3g could use.
  EXPECT_EQ(f.Where(f.Mig("1g.10gb")), "0/1/1g.10gb@1");
}

// Two GPUs that hold the same instances differ in their free ones: the
// later GPU, whose free instance is where the request goes, wins (it is
// reused); a GPU in the very same state as an earlier one loses the tie.
TEST(MigPack, TheSameHeldInstancesWithAFreeOneToReuseWin) {
  const int three = G().FindProfile("3g.40gb");
  const int one = G().FindProfile("1g.10gb");
  // Where a 1g goes beside a held 3g@0.
  Fixture probe("pack", {{"n0", 64000, 1 << 20, 1, "H100"}});
  ASSERT_TRUE(probe.scheduler.Bind(probe.Mig("3g.40gb"), Placement{{{0, 1000, 1024, {}, {}, {{0, three, 0}}}}}));
  const std::string alone = probe.Where(probe.Mig("1g.10gb"));
  ASSERT_EQ(alone.substr(0, 4), "0/0/") << alone;
  const int at = std::stoi(alone.substr(alone.find('@') + 1));
  Fixture f("pack", {{"n0", 64000, 1 << 20, 2, "H100"}});
  ASSERT_TRUE(f.scheduler.Bind(f.Mig("3g.40gb"), Placement{{{0, 1000, 1024, {}, {}, {{0, three, 0}}}}}));
  ASSERT_TRUE(f.scheduler.Bind(f.Mig("3g.40gb"), Placement{{{0, 1000, 1024, {}, {}, {{1, three, 0}}}}}));
  const Job& gone = f.Mig("1g.10gb");
  ASSERT_TRUE(f.scheduler.Bind(gone, Placement{{{0, 1000, 1024, {}, {}, {{1, one, at}}}}}));
  ASSERT_TRUE(f.scheduler.Release(gone));  // its instance stays, free
  EXPECT_EQ(f.Where(f.Mig("1g.10gb")), fmt::format("0/1/1g.10gb@{}", at));
  // Identical states: the first GPU.
  Fixture same("pack", {{"n0", 64000, 1 << 20, 2, "H100"}});
  ASSERT_TRUE(same.scheduler.Bind(same.Mig("3g.40gb"), Placement{{{0, 1000, 1024, {}, {}, {{0, three, 0}}}}}));
  ASSERT_TRUE(same.scheduler.Bind(same.Mig("3g.40gb"), Placement{{{0, 1000, 1024, {}, {}, {{1, three, 0}}}}}));
  EXPECT_EQ(same.Where(same.Mig("1g.10gb")), fmt::format("0/0/1g.10gb@{}", at));
}

// The fragmentation increase decides before how busy a GPU is: a 1g beside
// GPU 0's 1g@0 (at @1) breaks less than beside GPU 1's 2g@0, though GPU 1
// is the busier (the busier GPU wins only a tie).
TEST(MigPack, TheSmallerIncreaseBeatsTheBusierGpu) {
  Fixture f("pack", {{"n0", 64000, 1 << 20, 2, "H100"}});
  ASSERT_TRUE(f.scheduler.Bind(f.Mig("1g.10gb"), Placement{{{0, 1000, 1024, {}, {}, {{0, G().FindProfile("1g.10gb"), 0}}}}}));
  ASSERT_TRUE(f.scheduler.Bind(f.Mig("2g.20gb"), Placement{{{0, 1000, 1024, {}, {}, {{1, G().FindProfile("2g.20gb"), 0}}}}}));
  EXPECT_EQ(f.Where(f.Mig("1g.10gb")), "0/0/1g.10gb@1");
}

// GPUs that differ in their first instance only are two states: GPU 0
// (1g@0, 1g@5) has no start for a 3g, GPU 1 (1g@4, 1g@5) has 3g@0.
TEST(MigPack, GpusDifferingInTheirFirstInstanceAreNotTheSame) {
  Fixture f("pack", {{"n0", 64000, 1 << 20, 2, "H100"}});
  const int one = G().FindProfile("1g.10gb");
  for (const auto& [gpu, start] : std::vector<std::pair<int32_t, int32_t>>{{0, 0}, {0, 5}, {1, 4}, {1, 5}})
    ASSERT_TRUE(f.scheduler.Bind(f.Mig("1g.10gb"), Placement{{{0, 1000, 1024, {}, {}, {{gpu, one, start}}}}}));
  EXPECT_EQ(f.Where(f.Mig("3g.40gb")), "0/1/3g.40gb@0");
}

// A node whose MIG GPUs have, all together, just the compute a request
// needs is searched (it packs there rather than opening an idle GPU); one
// whose GPUs are full and which has no idle GPU is passed over.
TEST(MigPack, ANodeWithJustEnoughComputeIsSearched) {
  for (const char* placer : {"pack", "first-fit"}) {
    SCOPED_TRACE(placer);
    Fixture f(placer, {{"full", 64000, 1 << 20, 1, "H100"}, {"n0", 64000, 1 << 20, 1, "H100"}, {"n1", 64000, 1 << 20, 1, "H100"}});
    ASSERT_TRUE(f.scheduler.Bind(f.Mig("7g.80gb"), Placement{{{0, 1000, 1024, {}, {}, {{0, G().FindProfile("7g.80gb"), 0}}}}}));
    ASSERT_TRUE(f.scheduler.Bind(f.Mig("4g.40gb"), Placement{{{1, 1000, 1024, {}, {}, {{0, G().FindProfile("4g.40gb"), 0}}}}}));
    EXPECT_EQ(f.scheduler.cluster().mig_idle_compute(0), 0);
    EXPECT_EQ(f.scheduler.cluster().mig_idle_compute(1), 3);
    EXPECT_EQ(f.Where(f.Mig("3g.40gb")), "1/0/3g.40gb@4");
    EXPECT_EQ(f.scheduler.cluster().mig_idle_compute(1), 0);
    EXPECT_EQ(f.Where(f.Mig("1g.10gb")).substr(0, 4), "2/0/");
    EXPECT_TRUE(f.scheduler.cluster().CheckInvariants());
  }
}

// A GPU in MIG mode with compute to spare but no start slice for the
// profile is no candidate: 1g@1 and 1g@5 leave 5 compute slices, but a 3g
// starts only at 0 or 4, both taken. The 3g opens GPU 1; with GPU 1 busy
// it waits.
TEST(MigPack, AGpuWithComputeButNoStartIsSkipped) {
  for (const char* placer : {"pack", "first-fit"}) {
    SCOPED_TRACE(placer);
    Fixture f(placer, {{"n0", 64000, 1 << 20, 2, "H100"}});
    const int one = G().FindProfile("1g.10gb");
    ASSERT_TRUE(f.scheduler.Bind(f.Mig("1g.10gb"), Placement{{{0, 1000, 1024, {}, {}, {{0, one, 1}}}}}));
    ASSERT_TRUE(f.scheduler.Bind(f.Mig("1g.10gb"), Placement{{{0, 1000, 1024, {}, {}, {{0, one, 5}}}}}));
    const std::string first = f.Where(f.Mig("3g.40gb"));
    EXPECT_EQ(first.substr(0, 4), "0/1/") << first;
    Fixture busy(placer, {{"n0", 64000, 1 << 20, 2, "H100"}});
    ASSERT_TRUE(busy.scheduler.Bind(busy.Mig("1g.10gb"), Placement{{{0, 1000, 1024, {}, {}, {{0, one, 1}}}}}));
    ASSERT_TRUE(busy.scheduler.Bind(busy.Mig("1g.10gb"), Placement{{{0, 1000, 1024, {}, {}, {{0, one, 5}}}}}));
    ASSERT_TRUE(busy.scheduler.Bind(busy.Whole(1), Placement{{{0, 0, 0, {1}, {kMilliPerGpu}, {}}}}));
    auto waits = busy.scheduler.ScheduleAndBind(busy.Mig("3g.40gb"));
    ASSERT_FALSE(waits);
    EXPECT_EQ(waits.error().code, ErrorCode::kUnschedulable);
  }
}

// On a node with no GPU in MIG mode the idle GPU taken is its first fully
// free one: GPU 0 holds a whole-GPU job.
TEST(MigPack, TheIdleGpuTakenIsTheNodesFirstFreeOne) {
  for (const char* placer : {"pack", "first-fit"}) {
    SCOPED_TRACE(placer);
    Fixture f(placer, {{"n0", 64000, 1 << 20, 3, "H100"}});
    ASSERT_TRUE(f.scheduler.Bind(f.Whole(1), Placement{{{0, 0, 0, {0}, {kMilliPerGpu}, {}}}}));
    EXPECT_EQ(f.Where(f.Mig("7g.80gb")), "0/1/7g.80gb@0");
    EXPECT_EQ(f.scheduler.cluster().mig_gpus(0), 1);
    EXPECT_EQ(f.Where(f.Mig("7g.80gb")), "0/2/7g.80gb@0");
    EXPECT_EQ(f.scheduler.cluster().mig_gpus(0), 2);
    EXPECT_TRUE(f.scheduler.cluster().CheckInvariants());
  }
}

TEST(MigPack, MigUnawareJobsCannotUseMigGpus) {
  Fixture f("pack", {{"n0", 64000, 1 << 20, 2, "H100"}});
  // A lone 1g takes the last slot (@6), keeping 0-5 whole for a 4g + 2g.
  EXPECT_EQ(f.Where(f.Mig("1g.10gb")), "0/0/1g.10gb@6");
  EXPECT_TRUE(f.scheduler.ScheduleAndBind(f.Whole(1)));
  auto second = f.scheduler.ScheduleAndBind(f.Whole(1));
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code, ErrorCode::kUnschedulable);
  // And with every GPU busy a MIG job waits.
  auto mig = f.scheduler.ScheduleAndBind(f.Mig("7g.80gb"));
  ASSERT_FALSE(mig);
  EXPECT_EQ(mig.error().code, ErrorCode::kUnschedulable);
}

TEST(MigPack, ProfilesNoGpuHasAreUnresolvable) {
  Fixture f("pack", {{"v0", 64000, 1 << 20, 8, "V100"}});
  auto r = f.scheduler.ScheduleAndBind(f.Mig("1g.10gb"));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kUnresolvable);
  EXPECT_NE(r.error().message.find("no node has a MIG-capable GPU with profile 1g.10gb"), std::string::npos) << r.error().message;
  Fixture h("pack");
  Job odd = h.Mig("1g.10gb");
  odd.mig_profile = "1g.5gb";  // an A100-40GB profile
  auto r2 = h.scheduler.ScheduleAndBind(odd);
  ASSERT_FALSE(r2);
  EXPECT_EQ(r2.error().code, ErrorCode::kUnresolvable);
  EXPECT_FALSE(CheckMigPlacer("hami"));
  EXPECT_FALSE(MakePolicyProfile("bestfit", nullptr, "hami"));
}

TEST(MigPack, ReleaseKeepsTheInstanceForReuse) {
  Fixture f("pack", {{"n0", 64000, 1 << 20, 1, "H100"}});
  const Job& a = f.Mig("2g.20gb");
  // 2g@4 keeps 0-3 for a 4g or a 3g; 2g@0 would break the 4g slot.
  EXPECT_EQ(f.Where(a), "0/0/2g.20gb@4");
  EXPECT_EQ(f.Where(f.Mig("1g.10gb")), "0/0/1g.10gb@6");
  ASSERT_TRUE(f.scheduler.Release(a));
  // The free 2g@0 is reused rather than a new one created.
  const int64_t created = f.scheduler.cluster().mig_counters().instances_created;
  EXPECT_EQ(f.Where(f.Mig("2g.20gb")), "0/0/2g.20gb@4");
  EXPECT_EQ(f.scheduler.cluster().mig_counters().instances_created, created);
}

// A node without the job's memory (or CPU) is no candidate, however well
// its GPU would pack: n0 (one GPU, the fuller node) has 512 MiB, the job asks
// 1024; then n0's CPU is short (500 of the 1000 milli-CPU asked).
TEST(MigPack, NodesWithoutTheCpuOrMemoryAreSkipped) {
  Fixture f("pack", {{"n0", 64000, 512, 1, "H100"}, {"n1", 64000, 1 << 20, 2, "H100"}});
  EXPECT_EQ(f.Where(f.Mig("1g.10gb")), "1/0/1g.10gb@6");
  Fixture g("pack", {{"n0", 500, 1 << 20, 1, "H100"}, {"n1", 64000, 1 << 20, 2, "H100"}});
  EXPECT_EQ(g.Where(g.Mig("1g.10gb")), "1/0/1g.10gb@6");
}

// Exactly the CPU or the memory asked is enough: n0 (the fuller node) has
// 1000 milli-CPU, then 1024 MiB, just what the job asks (found by mutation
// testing, seed 2: `<` -> `<=` skipped it).
TEST(MigPack, ANodeWithExactlyTheCpuOrMemoryAskedIsACandidate) {
  for (const bool cpu : {true, false}) {
    SCOPED_TRACE(cpu ? "cpu" : "memory");
    Fixture f("pack", {{"n0", cpu ? 1000 : 64000, cpu ? 1 << 20 : 1024, 1, "H100"}, {"n1", 64000, 1 << 20, 2, "H100"}});
    EXPECT_EQ(f.Where(f.Mig("1g.10gb")), "0/0/1g.10gb@6");
  }
}

// A MIG job goes only to the GPU models it allows, though another model has
// the same profile: n0 (A100 80 GB, the fuller node, with 1g.10gb too) is
// skipped for a job that asks for H100 (found by mutation testing, seed 2:
// `||` -> `&&` took n0).
TEST(MigPack, AJobGoesOnlyToTheModelsItAllows) {
  for (const char* placer : {"pack", "first-fit"}) {
    SCOPED_TRACE(placer);
    Fixture f(placer, {{"n0", 64000, 1 << 20, 1, "A100-80GB"}, {"n1", 64000, 1 << 20, 2, "H100"}});
    f.Mig("1g.10gb");
    Job& j = f.jobs.back();
    j.gpu_spec = {"H100"};
    EXPECT_EQ(f.Where(j).substr(0, 4), "1/0/");
  }
}

TEST(MigPack, ReserveAndUnreserveAreIdempotent) {
  MigPack p;
  ClusterState c = *ClusterState::Build({{"n0", 64000, 1 << 20, 1, "H100"}});
  Job j;
  j.id = 9;
  j.mig_profile = "3g.40gb";
  Job whole;
  whole.id = 10;
  p.Reserve(c, j, {});
  p.Reserve(c, j, {});
  p.Reserve(c, whole, {});
  EXPECT_EQ(p.bound("3g.40gb"), 1);
  p.Unreserve(c, j, {});
  p.Unreserve(c, j, {});
  p.Unreserve(c, whole, {});
  EXPECT_EQ(p.bound("3g.40gb"), 0);
  EXPECT_EQ(p.bound(""), 0);
}

// Equal fragmentation on two GPUs: the one with a free instance of the
// profile wins over a lower device index (no reconfiguration).
TEST(MigPack, AFreeInstanceBeatsALowerIndex) {
  Fixture f("pack", {{"n0", 64000, 1 << 20, 2, "H100"}});
  const int two = G().FindProfile("2g.20gb");
  ASSERT_TRUE(f.scheduler.Bind(f.Mig("2g.20gb"), Placement{{{0, 1000, 1024, {}, {}, {{0, two, 0}}}}}));
  ASSERT_TRUE(f.scheduler.Bind(f.Mig("2g.20gb"), Placement{{{0, 1000, 1024, {}, {}, {{1, two, 0}}}}}));
  const Job& spare = f.Mig("1g.10gb");
  ASSERT_TRUE(f.scheduler.Bind(spare, Placement{{{0, 1000, 1024, {}, {}, {{1, G().FindProfile("1g.10gb"), 6}}}}}));
  ASSERT_TRUE(f.scheduler.Release(spare));
  const int64_t created = f.scheduler.cluster().mig_counters().instances_created;
  EXPECT_EQ(f.Where(f.Mig("1g.10gb")), "0/1/1g.10gb@6");
  EXPECT_EQ(f.scheduler.cluster().mig_counters().instances_created, created);
}

// A cordoned (drained) node gives no instance to a new job: neither a new
// one on its idle GPU nor an idle instance left by a finished job. The jobs
// ask no CPU or memory, so only the cordon keeps the placers off n0 (its
// free CPU and memory read 0, which a request for 0 would pass).
TEST(MigPack, CordonedNodesAreSkipped) {
  for (const bool pack : {false, true}) {
    const char* placer = pack ? "pack" : "first-fit";
    SCOPED_TRACE(placer);
    Fixture f(placer, {{"n0", 64000, 1 << 20, 1, "H100"}, {"n1", 64000, 1 << 20, 1, "H100"}});
    auto light = [&](const char* profile) -> const Job& {
      f.Mig(profile);
      Job& j = f.jobs.back();
      j.cpu_milli = 0;
      j.memory_mib = 0;
      return j;
    };
    const int three = G().FindProfile("3g.40gb");
    const Job& done = light("3g.40gb");
    ASSERT_TRUE(f.scheduler.Bind(done, Placement{{{0, 0, 0, {}, {}, {{0, three, 4}}}}}));
    ASSERT_TRUE(f.scheduler.Release(done));  // n0 GPU 0: an idle 3g@4 instance
    ASSERT_TRUE(f.scheduler.Cordon(0));
    // Both 3g instances on n1's GPU (pack opens the upper half first).
    EXPECT_EQ(f.Where(light("3g.40gb")), pack ? "1/0/3g.40gb@4" : "1/0/3g.40gb@0");
    EXPECT_EQ(f.Where(light("3g.40gb")), pack ? "1/0/3g.40gb@0" : "1/0/3g.40gb@4");
    // n1 is full now and n0 drained: the job waits.
    auto waits = f.scheduler.ScheduleAndBind(light("3g.40gb"));
    ASSERT_FALSE(waits);
    EXPECT_EQ(waits.error().code, ErrorCode::kUnschedulable);
    EXPECT_EQ(mig::FormatLayout(G(), f.scheduler.cluster().mig_device(0, 0)->layout), "3g.40gb@4");
    ASSERT_TRUE(f.scheduler.Uncordon(0));
    EXPECT_EQ(f.Where(light("3g.40gb")), "0/0/3g.40gb@4");  // the idle instance, reused
    EXPECT_TRUE(f.scheduler.cluster().CheckInvariants());
  }
}

}  // namespace
}  // namespace tidal::plugins

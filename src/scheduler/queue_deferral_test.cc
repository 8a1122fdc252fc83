// JobQueue with a placer that defers (ErrorCode::kDeferred: "it fits, but I
// wait for a better placement") and with run times that depend on the
// placement (SetRunTime). The queue is driven by hand, pass by pass, so "a
// later pass without any release" is exactly that.
#include <algorithm>
#include <deque>
#include <optional>
#include <vector>

#include <gtest/gtest.h>

#include "plugins/first_fit/first_fit.h"
#include "scheduler/queue.h"

namespace tidal {
namespace {

// First-fit, except that it defers (or, with refuse, plainly fails) one job
// while the clock is before `until`. Records every call as (now, job id).
class FakePlace final : public GangPlacePlugin {
 public:
  JobId target = -1;
  int64_t until = 0;
  bool refuse = false;  // fail without saying why (kUnschedulable) instead of deferring
  std::vector<std::pair<int64_t, JobId>> calls;

  std::string_view name() const override { return "FakePlace"; }
  bool PlacesWholeGpuJobs() const override { return true; }
  std::optional<Placement> PlaceGang(const CycleContext& ctx, const PodRequest& pod) override {
    calls.emplace_back(ctx.now_s, pod.job->id);
    if (pod.job->id == target && ctx.now_s < until) {
      if (!refuse && ctx.deferred != nullptr) *ctx.deferred = "waiting for a compact placement";
      return std::nullopt;
    }
    return inner_.PlaceGang(ctx, pod);
  }
  std::vector<JobId> CallsAt(int64_t now) const {
    std::vector<JobId> out;
    for (const auto& [t, id] : calls)
      if (t == now) out.push_back(id);
    return out;
  }

 private:
  plugins::FirstFitPlace inner_;
};

Job MakeJob(JobId id, int32_t gpus, int64_t duration) {
  Job j;
  j.id = id;
  j.name = fmt::format("j{}", id);
  j.source = fmt::format("test:{}", id);
  j.num_gpu = gpus;
  j.gpu_milli = kMilliPerGpu;
  j.single_node = false;
  j.submit_time_s = 0;
  j.duration_s = duration;
  return j;
}

struct Harness {
  explicit Harness(int nodes, QueuePolicy policy = QueuePolicy::kFifoBackfill) {
    std::vector<NodeSpec> specs;
    for (int i = 0; i < nodes; ++i) specs.push_back({fmt::format("n{}", i), 64000, 262144, 4, "A"});
    Profile p;
    p.name = "fake";
    fake = p.Own<FakePlace>();
    p.gang = fake;
    scheduler = std::make_unique<Scheduler>(std::move(*ClusterState::Build(specs)), std::move(p), 1);
    queue = std::make_unique<JobQueue>(*scheduler, policy);
  }
  void Push(const Job& j) {
    std::vector<UnresolvableJob> u;
    ASSERT_TRUE(queue->Push(j, u));
    ASSERT_TRUE(u.empty());
  }
  QueuePass Schedule(int64_t now) {
    auto p = queue->Schedule(now);
    EXPECT_TRUE(p) << p.error().message;
    return p ? std::move(*p) : QueuePass{};
  }
  std::vector<JobId> Ids(const QueuePass& p) const {
    std::vector<JobId> out;
    for (const Job* j : p.started) out.push_back(j->id);
    return out;
  }
  int32_t FreeOn(NodeId n) const { return scheduler->cluster().free_whole_gpus(n); }

  FakePlace* fake = nullptr;
  std::unique_ptr<Scheduler> scheduler;
  std::unique_ptr<JobQueue> queue;
};

TEST(QueueDeferral, DeferredHeadStaysHeadAndStartsWithoutARelease) {
  Harness h(3);
  const Job j1 = MakeJob(1, 4, 100), j2 = MakeJob(2, 4, 100), j3 = MakeJob(3, 2, 10), j4 = MakeJob(4, 2, 10);
  h.fake->target = 2;
  h.fake->until = 20;
  h.Push(j1);
  h.Push(j2);
  h.Push(j3);
  const QueuePass p0 = h.Schedule(0);
  // j1 takes n0; j2 is deferred and stays the head; backfill still runs behind it
  // (j3 on n1 leaves n2 whole for the head's compact reservation).
  EXPECT_EQ(h.Ids(p0), (std::vector<JobId>{1, 3}));
  EXPECT_EQ(p0.ends, (std::vector<int64_t>{100, 10}));
  EXPECT_EQ(p0.backfilled, 1);
  ASSERT_NE(h.queue->head(), nullptr);
  EXPECT_EQ(h.queue->head()->id, 2);
  EXPECT_EQ(h.queue->reservation_s(), 0);  // n2 holds it now: the placer, not capacity, holds it back
  EXPECT_EQ(h.fake->CallsAt(0), (std::vector<JobId>{1, 2, 3}));

  // A pass with a new arrival and no release: the head is tried first again, then the newcomer.
  h.Push(j4);
  const QueuePass p1 = h.Schedule(5);
  EXPECT_EQ(h.fake->CallsAt(5), (std::vector<JobId>{2, 4}));
  EXPECT_EQ(h.Ids(p1), (std::vector<JobId>{4}));
  EXPECT_EQ(p1.ends, (std::vector<int64_t>{15}));
  EXPECT_EQ(h.queue->head()->id, 2);

  // Still deferring: tried, nothing starts.
  EXPECT_TRUE(h.Schedule(12).started.empty());
  EXPECT_EQ(h.fake->CallsAt(12), (std::vector<JobId>{2}));

  // No release since (j3 and j4 have not been finished): the head was never
  // marked unfit, so once the placer stops deferring it starts.
  const QueuePass p2 = h.Schedule(20);
  EXPECT_EQ(h.Ids(p2), (std::vector<JobId>{2}));
  EXPECT_EQ(p2.ends, (std::vector<int64_t>{120}));
  EXPECT_EQ(h.queue->waiting(), 0u);
  EXPECT_EQ(h.FreeOn(2), 0);
}

TEST(QueueDeferral, ARefusedHeadIsMarkedUnfitUntilARelease) {
  // The contrast: the same placer failing without a reason is kUnschedulable;
  // capacity only shrinks until a release, so the head is not retried.
  Harness h(3);
  const Job j1 = MakeJob(1, 4, 100), j2 = MakeJob(2, 4, 100), j3 = MakeJob(3, 2, 10);
  h.fake->target = 2;
  h.fake->until = 20;
  h.fake->refuse = true;
  h.Push(j1);
  h.Push(j2);
  h.Push(j3);
  EXPECT_EQ(h.Ids(h.Schedule(0)), (std::vector<JobId>{1, 3}));
  EXPECT_TRUE(h.Schedule(20).started.empty());
  EXPECT_TRUE(h.fake->CallsAt(20).empty());
  ASSERT_TRUE(h.queue->Finish(j3));
  EXPECT_EQ(h.Ids(h.Schedule(21)), (std::vector<JobId>{2}));
}

// n0 full until 100; n1 and n2 each keep 1 GPU free (3-GPU jobs until 50 and 80).
void Fill(Harness& h, const std::vector<Job>& base) {
  for (const Job& j : base) h.Push(j);
  const QueuePass p = h.Schedule(0);
  ASSERT_EQ(h.Ids(p), (std::vector<JobId>{1, 2, 3}));
  ASSERT_EQ(h.FreeOn(1), 1);
  ASSERT_EQ(h.FreeOn(2), 1);
}
std::vector<Job> Base() { return {MakeJob(1, 4, 100), MakeJob(2, 3, 50), MakeJob(3, 3, 80)}; }

TEST(QueueDeferral, DeferredHeadReservesASingleNodeWhenItFitsOnOne) {
  const std::vector<Job> base = Base();
  const Job head = MakeJob(10, 2, 10), behind = MakeJob(11, 1, 100);
  {
    // Deferred: the reservation waits for one node with 2 free GPUs (n1 at 50),
    // so the long 1-GPU job behind it may take n1's spare GPU (3 left at 50).
    Harness h(3);
    h.fake->target = 10;
    h.fake->until = 1000;
    Fill(h, base);
    h.Push(head);
    h.Push(behind);
    const QueuePass p = h.Schedule(1);
    EXPECT_EQ(h.queue->head()->id, 10);
    EXPECT_EQ(h.queue->reservation_s(), 50);
    EXPECT_EQ(h.Ids(p), (std::vector<JobId>{11}));
    EXPECT_EQ(p.ends, (std::vector<int64_t>{101}));
  }
  {
    // Refused (not deferred): the two spare GPUs gathered across n1 and n2 hold
    // it now, so the long job behind may not take one of them.
    Harness h(3);
    h.fake->target = 10;
    h.fake->until = 1000;
    h.fake->refuse = true;
    Fill(h, base);
    h.Push(head);
    h.Push(behind);
    const QueuePass p = h.Schedule(1);
    EXPECT_EQ(h.queue->reservation_s(), 1);
    EXPECT_TRUE(p.started.empty());
  }
  {
    // A deferred gang larger than any node gathers GPUs as usual: 1 + 1 now,
    // + 3 at 50, + 3 at 80 holds 6.
    Harness h(3);
    h.fake->target = 10;
    h.fake->until = 1000;
    Fill(h, base);
    h.Push(MakeJob(10, 6, 10));
    h.Push(behind);
    h.Schedule(1);
    EXPECT_EQ(h.queue->reservation_s(), 80);
  }
}

TEST(QueueDeferral, RunTimesFromThePlacementSetEndsAndReservations) {
  // Job 2 runs three times its trace time, job 4 twice.
  Harness h(2);
  h.queue->SetRunTime([](const Job& j, const Placement& p) -> int64_t {
    EXPECT_EQ(p.TotalGpuMilli(), j.TotalGpuMilli());
    return *j.duration_s * (j.id == 2 ? 3 : j.id == 4 ? 2 : 1);
  });
  const Job j1 = MakeJob(1, 4, 10), j2 = MakeJob(2, 4, 10), j3 = MakeJob(3, 8, 10), j4 = MakeJob(4, 1, 15),
            j5 = MakeJob(5, 1, 12);
  h.Push(j1);
  h.Push(j2);
  h.Push(j3);
  h.Push(j4);
  const QueuePass p0 = h.Schedule(0);
  EXPECT_EQ(h.Ids(p0), (std::vector<JobId>{1, 2}));
  EXPECT_EQ(p0.ends, (std::vector<int64_t>{10, 30}));
  // The 8-GPU head needs both hosts: j2's stretched end, not its trace end.
  EXPECT_EQ(h.queue->reservation_s(), 30);
  ASSERT_TRUE(h.queue->Finish(j1));
  // j4 would end at 25 by its trace time but runs 30 on its placement: 10 + 30
  // = 40 > 30 and it holds a GPU the head needs, so it stays; j5 (12 s) ends at 22.
  h.Push(j5);
  const QueuePass p1 = h.Schedule(10);
  EXPECT_EQ(h.Ids(p1), (std::vector<JobId>{5}));
  EXPECT_EQ(p1.ends, (std::vector<int64_t>{22}));
  EXPECT_EQ(p1.backfilled, 1);
  EXPECT_EQ(h.queue->reservation_s(), 30);
}

// A job behind the head whose placer deferred it is retried in later passes
// without a release: a deferral is not a "does not fit" that only a release
// can change, so Backfill rescans from the top after one. Job 3 fits on n1
// all along; its placer stops deferring at 20, and the pass at 20 (an
// arrival, no release) starts it.
TEST(QueueDeferral, DeferredJobBehindTheHeadIsRetriedWithoutARelease) {
  Harness h(2);
  const Job j1 = MakeJob(1, 4, 100), j2 = MakeJob(2, 8, 10), j3 = MakeJob(3, 2, 10), j4 = MakeJob(4, 1, 1);
  h.fake->target = 3;
  h.fake->until = 20;
  h.Push(j1);
  h.Push(j2);
  h.Push(j3);
  EXPECT_EQ(h.Ids(h.Schedule(0)), (std::vector<JobId>{1}));
  EXPECT_EQ(h.fake->CallsAt(0), (std::vector<JobId>{1, 2, 3}));  // j3 deferred by backfill
  h.Push(j4);
  const QueuePass p = h.Schedule(20);
  EXPECT_EQ(h.fake->CallsAt(20), (std::vector<JobId>{3, 4}));  // today: only {4}
  EXPECT_NE(std::find(p.started.begin(), p.started.end(), &j3), p.started.end());
}

// Backfill reservations and a cordoned (drained) node: what its jobs
// release goes into the cordon's hold (ClusterState::Unbind), so the head's
// reservation must not count on it. n0 and n1 (4 GPUs each) run j1 (ends
// 50) and j2 (ends 100); n0 is cordoned; the 4-GPU head fits at 100 (j2's
// end on n1), not at 50. (j4 waits behind it, so passes backfill and
// compute the reservation.)
TEST(QueueDeferral, AReservationCountsNoReleaseOnACordonedNode) {
  Harness h(2);
  const Job j1 = MakeJob(1, 4, 50), j2 = MakeJob(2, 4, 100), j3 = MakeJob(3, 4, 10), j4 = MakeJob(4, 4, 10);
  h.Push(j1);
  h.Push(j2);
  EXPECT_EQ(h.Ids(h.Schedule(0)), (std::vector<JobId>{1, 2}));
  EXPECT_EQ(h.scheduler->cluster().FindAllocation(1)->assignments[0].node, 0);
  ASSERT_TRUE(h.scheduler->Cordon(0).has_value());
  h.Push(j3);
  h.Push(j4);
  EXPECT_TRUE(h.Ids(h.Schedule(1)).empty());
  ASSERT_NE(h.queue->head(), nullptr);
  EXPECT_EQ(h.queue->head()->id, 3);
  EXPECT_EQ(h.queue->reservation_s(), 100);
  // j1 ends: n0 stays drained, nothing starts, the reservation stays at 100.
  ASSERT_TRUE(h.queue->Finish(j1));
  EXPECT_EQ(h.FreeOn(0), 0);
  EXPECT_TRUE(h.Ids(h.Schedule(50)).empty());
  EXPECT_EQ(h.queue->reservation_s(), 100);
  ASSERT_TRUE(h.queue->Finish(j2));
  EXPECT_EQ(h.Ids(h.Schedule(100)), (std::vector<JobId>{3}));
  EXPECT_EQ(h.scheduler->cluster().FindAllocation(3)->assignments[0].node, 1);
  // The scheduler forwards the cluster's errors.
  EXPECT_EQ(h.scheduler->Cordon(0).error().code, ErrorCode::kFailedPrecondition);
  EXPECT_EQ(h.scheduler->Uncordon(1).error().code, ErrorCode::kFailedPrecondition);
  ASSERT_TRUE(h.scheduler->Uncordon(0).has_value());
  EXPECT_EQ(h.FreeOn(0), 4);
}

// The same on FreeCapacity and BackfillReservation directly: the copy
// keeps the cordon, a release there (Apply +1) adds nothing, and nothing
// fits there — not even a request for nothing.
TEST(QueueDeferral, FreeCapacityOnACordonedNode) {
  ClusterState c = *ClusterState::Build({{"n0", 64000, 262144, 4, "A"}, {"n1", 64000, 262144, 4, "A"}});
  const Placement on0{{{0, 1000, 1024, {0, 1, 2, 3}, {1000, 1000, 1000, 1000}}}};
  ASSERT_TRUE(c.Bind(1, on0).has_value());
  ASSERT_TRUE(c.Bind(2, Placement{{{1, 1000, 1024, {0, 1, 2, 3}, {1000, 1000, 1000, 1000}}}}).has_value());
  Job head = MakeJob(3, 4, 10);
  head.single_node = true;
  Job nothing = MakeJob(4, 0, 10);
  nothing.gpu_milli = 0;
  const PodRequest head_req = *ResolveRequest(head, c.models());
  const PodRequest nothing_req = *ResolveRequest(nothing, c.models());

  BackfillReservation open;
  open.Compute(c, {{50, 1}, {100, 2}}, head_req, 0, {});
  EXPECT_EQ(open.time_s(), 50);
  EXPECT_EQ(open.fits(), (std::vector<uint8_t>{1, 0}));

  ASSERT_TRUE(c.Cordon(0).has_value());
  FreeCapacity f;
  f.CopyFrom(c);
  EXPECT_EQ(f.whole_free(0), 0);
  EXPECT_TRUE(f.Fits(nothing_req, 1));
  EXPECT_FALSE(f.Fits(nothing_req, 0));
  f.Apply(on0.assignments[0], +1);
  EXPECT_EQ(f.whole_free(0), 0);
  EXPECT_FALSE(f.Fits(head_req, 0));

  BackfillReservation drained;
  drained.Compute(c, {{50, 1}, {100, 2}}, head_req, 0, {});
  EXPECT_EQ(drained.time_s(), 100);
  EXPECT_EQ(drained.fits(), (std::vector<uint8_t>{0, 1}));
  EXPECT_EQ(drained.fitting_nodes(), 1);
}

// A reservation's view of the free capacity (FreeCapacity::Fits, the filters'
// rules on a detached copy): exactly enough CPU, memory, device milli or
// whole devices fits; one unit more does not.
TEST(QueueDeferral, FreeCapacityExactFit) {
  ClusterState c = *ClusterState::Build({{"n0", 64000, 262144, 4, "A"}});
  ASSERT_TRUE(c.Bind(1, Placement{{{0, 60000, 262000, {0, 1}, {300, 1000}}}}).has_value());
  // Left: 4000 milli-CPU, 144 MiB, devices 700, 0, 1000, 1000.
  FreeCapacity f;
  f.CopyFrom(c);
  EXPECT_EQ(f.whole_free(0), 2);
  std::deque<Job> jobs;  // a PodRequest points at its job
  auto req = [&](int64_t cpu, int64_t mem, int32_t n, int32_t milli) {
    Job& j = jobs.emplace_back(MakeJob(static_cast<JobId>(jobs.size()) + 10, n, 10));
    j.single_node = true;
    j.cpu_milli = cpu;
    j.memory_mib = mem;
    j.gpu_milli = milli;
    return *ResolveRequest(j, c.models());
  };
  EXPECT_TRUE(f.Fits(req(4000, 144, 0, 0), 0));
  EXPECT_FALSE(f.Fits(req(4001, 144, 0, 0), 0));
  EXPECT_FALSE(f.Fits(req(4000, 145, 0, 0), 0));
  EXPECT_TRUE(f.Fits(req(0, 0, 2, 1000), 0));
  EXPECT_FALSE(f.Fits(req(0, 0, 3, 1000), 0));
  EXPECT_TRUE(f.Fits(req(0, 0, 1, 700), 0));
  EXPECT_TRUE(f.Fits(req(0, 0, 1, 1000), 0));
  // Three devices with 700 or more; with one more milli only the two whole ones.
  EXPECT_TRUE(f.Fits(req(0, 0, 3, 700), 0));
  EXPECT_FALSE(f.Fits(req(0, 0, 3, 701), 0));
  EXPECT_FALSE(f.Fits(req(0, 0, 5, 100), 0));  // more devices than the node has
  // Returning the assignment restores exactly the capacity, and whole devices.
  f.Apply(c.FindAllocation(1)->assignments[0], +1);
  EXPECT_EQ(f.whole_free(0), 4);
  EXPECT_TRUE(f.Fits(req(64000, 262144, 4, 1000), 0));
  EXPECT_FALSE(f.Fits(req(64001, 262144, 4, 1000), 0));
  f.Apply(c.FindAllocation(1)->assignments[0], -1);
  EXPECT_EQ(f.whole_free(0), 2);
  EXPECT_FALSE(f.Fits(req(4001, 144, 0, 0), 0));
}

// A gang head may gather whole GPUs across nodes only of models it allows
// (found by mutation testing): a 4-GPU head of model A is reserved when both
// A nodes are free (100), not now because a B node has 4 free GPUs.
TEST(QueueDeferral, AGangReservationCountsOnlyAllowedModels) {
  ClusterState c = *ClusterState::Build({{"a0", 64000, 262144, 2, "A"}, {"a1", 64000, 262144, 2, "A"}, {"b0", 64000, 262144, 4, "B"}});
  ASSERT_TRUE(c.Bind(1, Placement{{{0, 0, 0, {0, 1}, {1000, 1000}}}}).has_value());
  ASSERT_TRUE(c.Bind(2, Placement{{{1, 0, 0, {0, 1}, {1000, 1000}}}}).has_value());
  Job head = MakeJob(3, 4, 10);
  head.gpu_spec = {"A"};
  const PodRequest req = *ResolveRequest(head, c.models());
  BackfillReservation r;
  r.Compute(c, {{50, 1}, {100, 2}}, req, 0, {.gangs_gather = true, .largest_node_gpus = 4});
  EXPECT_EQ(r.time_s(), 100);
  Job any = MakeJob(4, 4, 10);  // any model: the B node holds it now
  r.Compute(c, {{50, 1}, {100, 2}}, *ResolveRequest(any, c.models()), 0, {.gangs_gather = true, .largest_node_gpus = 4});
  EXPECT_EQ(r.time_s(), 0);
}

}  // namespace
}  // namespace tidal

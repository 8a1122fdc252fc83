// Inference services inside the queue replay (QueueSimOptions::inference,
// the org experiment's co-location lever), checked by hand on two 8-GPU
// nodes: one service needs nothing until noon and 4 TP2 replicas (8 GPUs)
// after it; one training tenant has two 8-GPU jobs.
//   separate fleet (lend false, replicas at the peak): the service's 8-GPU
//     floor is never lent, so one training job runs and the other waits
//     until the first ends; the SLO is met every minute.
//   co-location (lend true, forecast autoscaling): both training jobs run
//     on the idle floor in the morning; at noon the service takes its floor
//     back by preempting one of them, and misses the minutes its replicas
//     take to start.
#include <algorithm>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sim/queue_sim.h"

namespace tidal::sim {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kT0 = 1'000'000'020;  // a minute boundary is not assumed
constexpr int64_t kDay = 86400;

inference::Service NoonService() {
  inference::Service s;
  s.name = "big";
  s.model = "m";
  s.shape = "tp2";
  s.goodput_rps = 10;
  s.gpus_per_replica = 2;
  s.headroom = 0;
  s.min_replicas = 0;
  s.demand.name = "noon";
  s.demand.step_s = 60;
  for (int m = 0; m < 1440; ++m) s.demand.rate.push_back(m < 720 ? 0.0 : 40.0);
  return s;
}

Job Train(JobId id, int64_t submit, int64_t duration) {
  Job j;
  j.id = id;
  j.name = "train" + std::to_string(id);
  j.source = "test";
  j.group = "A";
  j.num_gpu = 8;
  j.gpu_milli = kMilliPerGpu;
  j.single_node = true;
  j.submit_time_s = submit;
  j.duration_s = duration;
  return j;
}

std::vector<NodeSpec> Nodes() { return {{"n0", 64000, 1 << 20, 8, "H100"}, {"n1", 64000, 1 << 20, 8, "H100"}}; }

// Two long jobs at the start; a short one two days later ends the window.
std::vector<Job> Jobs() { return {Train(1, kT0, 3 * kDay), Train(2, kT0, 3 * kDay), Train(3, kT0 + 2 * kDay, 600)}; }

QueueSimOptions Options(bool colocate) {
  QueueSimOptions o;
  o.policy = "bestfit";
  o.queue = QueuePolicy::kTidal;
  o.tenants = "proportional";
  o.checkpoint_interval_s = 5000;
  o.restart_penalty_s = 60;
  QueueSimOptions::Inference inf{.services = {NoonService()}, .lend = colocate};
  inf.fleets.mode = colocate ? ScalingMode::kForecast : ScalingMode::kPeak;
  inf.fleets.error_quantile = 0;
  inf.fleets.notice = colocate;
  inf.fleets.emptiest_first = colocate;
  o.inference = std::move(inf);
  return o;
}

const TenantResult* Tenant(const QueueSimResult& r, const std::string& name) {
  for (const TenantResult& t : r.per_tenant)
    if (t.name == name) return &t;
  return nullptr;
}

TEST(QueueInference, ASeparateFleetHoldsItsPeakAndLendsNothing) {
  auto r = RunQueueSim(Nodes(), Jobs(), Options(false));
  ASSERT_TRUE(r) << r.error().message;
  // The replicas are not training jobs: three records, all finished.
  ASSERT_EQ(r->jobs.size(), 3u);
  EXPECT_EQ(r->jobs_finished, 3);
  ASSERT_EQ(r->inference.size(), 1u);
  const ServiceResult& s = r->inference[0];
  EXPECT_EQ(s.name, "big");
  EXPECT_EQ(s.minutes, 2 * 1440);  // the window: two days of minutes
  EXPECT_DOUBLE_EQ(s.slo_minutes_met, 1.0);
  EXPECT_EQ(s.max_replicas, 4);
  EXPECT_DOUBLE_EQ(s.mean_replicas, 4.0);
  EXPECT_EQ(r->preemptions, 0);
  // The service's tenant: a floor of its peak (8 GPUs); training gets the rest.
  ASSERT_NE(Tenant(*r, "inf-big"), nullptr);
  EXPECT_EQ(Tenant(*r, "inf-big")->floor_gpus, 8);
  EXPECT_EQ(Tenant(*r, "A")->floor_gpus, 8);
  // One training job at a time: job 2 starts when job 1 ends.
  EXPECT_EQ(r->jobs[0].start_s, kT0);
  EXPECT_EQ(r->jobs[1].start_s, kT0 + 3 * kDay);
  EXPECT_DOUBLE_EQ(r->window_inference_gpu_s, 8.0 * 2 * kDay);
  ASSERT_FALSE(r->hourly.empty());
  for (const QueueSimResult::Hour& h : r->hourly) {
    EXPECT_DOUBLE_EQ(h.inference_gpus, 8);
    EXPECT_LE(h.training_gpus, 8);
  }
}

TEST(QueueInference, CoLocationLendsTheNightAndTakesTheFloorBackAtNoon) {
  auto r = RunQueueSim(Nodes(), Jobs(), Options(true));
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->jobs.size(), 3u);
  EXPECT_EQ(r->jobs_finished, 3);
  // Both start at once on the idle inference floor...
  EXPECT_EQ(r->jobs[0].start_s, kT0);
  EXPECT_EQ(r->jobs[1].start_s, kT0);
  // ...and noon takes 8 GPUs back: one preemption a day while they run.
  EXPECT_GE(r->preemptions, 1);
  EXPECT_EQ(r->jobs[0].preemptions + r->jobs[1].preemptions, r->preemptions);
  const ServiceResult& s = r->inference.at(0);
  EXPECT_EQ(s.max_replicas, 4);
  EXPECT_LT(s.mean_replicas, 4.0);  // nothing before noon
  // The minutes its replicas take to start at the first noon are missed; the
  // second noon the forecast has a day of history and scales out ahead.
  EXPECT_LT(s.slo_minutes_met, 1.0);
  EXPECT_GT(s.slo_minutes_met, 0.99);
  ASSERT_EQ(s.missed_by_day.size(), 2u);
  EXPECT_GT(s.missed_by_day[0], 0);
  EXPECT_EQ(s.missed_by_day[1], 0);
  // Training borrowed all 16 GPUs at some hour; inference held less than a fleet at its peak.
  EXPECT_TRUE(std::any_of(r->hourly.begin(), r->hourly.end(), [](const auto& h) { return h.training_gpus == 16; }));
  EXPECT_LT(r->window_inference_gpu_s, 8.0 * 2 * kDay);
  EXPECT_GT(r->window_inference_gpu_s, 0);
  for (const QueueSimResult::Hour& h : r->hourly) EXPECT_LE(h.training_gpus + h.inference_gpus, 16.0 + 1e-9);
}

TEST(QueueInference, SameInputSameOutput) {
  auto a = RunQueueSim(Nodes(), Jobs(), Options(true));
  auto b = RunQueueSim(Nodes(), Jobs(), Options(true));
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->preemptions, b->preemptions);
  EXPECT_EQ(a->inference.at(0).slo_minutes_met, b->inference.at(0).slo_minutes_met);
  for (size_t i = 0; i < a->jobs.size(); ++i) EXPECT_EQ(a->jobs[i].finish_s, b->jobs[i].finish_s);
}

TEST(QueueInference, BadInputsSayWhat) {
  std::vector<Job> jobs = Jobs();
  jobs[2].id = InferenceFleets::kReplicaIdBase + 5;
  auto clash = RunQueueSim(Nodes(), jobs, Options(true));
  ASSERT_FALSE(clash);
  EXPECT_THAT(clash.error().message, HasSubstr("inference replicas'"));

  QueueSimOptions big = Options(false);
  big.inference->services[0].demand.rate.assign(1440, 80.0);  // 8 replicas x 2 GPUs: the whole cluster
  auto full = RunQueueSim(Nodes(), Jobs(), big);
  ASSERT_FALSE(full);
  EXPECT_THAT(full.error().message, HasSubstr("no room for training"));

  QueueSimOptions night = Options(true);
  night.inference->fleets.day_start_hour = 22;
  night.inference->fleets.day_end_hour = 8;  // a day that wraps midnight is refused, not misread
  auto wraps = RunQueueSim(Nodes(), Jobs(), night);
  ASSERT_FALSE(wraps);
  EXPECT_THAT(wraps.error().message, HasSubstr("day hours must satisfy 0 <= start < end <= 24"));
  for (auto [start, end] : {std::pair{-1, 8}, std::pair{8, 25}}) {
    QueueSimOptions o = Options(true);
    o.inference->fleets.day_start_hour = start;
    o.inference->fleets.day_end_hour = end;
    EXPECT_FALSE(RunQueueSim(Nodes(), Jobs(), o)) << start << "-" << end;
  }
  QueueSimOptions given = Options(true);
  tenancy::TenantSpec root{.name = "org"}, a{.name = "A", .parent = "org"};
  a.quotas.push_back({"gpu", tenancy::Quota{.nominal = 16000}});
  given.tenant_tree = std::make_shared<const tenancy::TenantTree>(*tenancy::TenantTree::Build({root, a}));
  auto untold = RunQueueSim(Nodes(), Jobs(), given);
  ASSERT_FALSE(untold);
  EXPECT_THAT(untold.error().message, HasSubstr("inference tenant 'inf-big' is not a leaf"));

  QueueSimOptions groups = Options(true);
  groups.inference->fleets.groups = {"inf-a", "inf-b"};
  auto two = RunQueueSim(Nodes(), Jobs(), groups);
  ASSERT_FALSE(two);
  EXPECT_THAT(two.error().message, HasSubstr("2 groups for 1 services"));

  QueueSimOptions shape = Options(false);
  shape.inference->services[0].shape = "9g.90gb";
  auto bad = RunQueueSim(Nodes(), Jobs(), shape);
  ASSERT_FALSE(bad);
  EXPECT_THAT(bad.error().message, HasSubstr("not a MIG profile"));
}

// Scaling targets: the autoscaler's answers minute by minute (minute m from
// the demand of minute m - 1), the same shared or not, refused for knobs or
// services they were not made for.
TEST(ScalingTargets, FollowTheAutoscalerMinuteByMinute) {
  inference::Service s = NoonService();
  for (int m = 0; m < 1440; ++m) s.demand.rate[static_cast<size_t>(m)] = 5.0 + 35.0 * (m % 97) / 96.0;  // ramps, so scale-in happens
  InferenceFleetsOptions o;
  o.mode = ScalingMode::kForecast;
  o.error_quantile = 0.9;
  o.error_window_s = 3 * 3600;
  o.cooldown_s = 600;
  auto t = ScalingTargets::Make({s}, o);
  ASSERT_TRUE(t) << t.error().message;
  inference::AutoscalerConfig a{.goodput_rps = 10, .headroom = 0, .min_replicas = 0, .lead_s = 1800, .cooldown_s = 600,
                                .error_quantile = 0.9, .error_window_s = 3 * 3600};
  auto ref = inference::Autoscaler::Create(a, 60);
  ASSERT_TRUE(ref);
  int driven = 0, ups = 0, downs = 0, last = 0;
  // Asked out of order (a later minute first) they are the same.
  ASSERT_TRUE((*t)->At(0, 2000));
  for (int64_t m = 0; m <= 2000; ++m) {
    const double seen = s.demand.rate[static_cast<size_t>(m >= 1 ? (m - 1) % 1440 : 0)];
    auto want = ref->Step(kT0 + (m - 1) * 60, seen);  // any origin: only differences count
    ASSERT_TRUE(want);
    auto got = (*t)->At(0, m);
    ASSERT_TRUE(got);
    ASSERT_EQ(got->target, *want) << "minute " << m;
    ASSERT_EQ(got->forecast_driven, ref->last_forecast_need() > ref->last_reactive_need()) << "minute " << m;
    driven += got->forecast_driven;
    ups += got->target > last;
    downs += got->target < last;
    last = got->target;
  }
  EXPECT_GT(driven, 10);
  EXPECT_GT(ups, 10);
  EXPECT_GT(downs, 10);
  EXPECT_FALSE((*t)->At(1, 0));
  EXPECT_FALSE((*t)->At(0, -1));

  EXPECT_TRUE((*t)->Matches({s}, o));
  InferenceFleetsOptions other = o;
  other.lead_s = 600;
  EXPECT_FALSE((*t)->Matches({s}, other));
  other = o;
  other.error_tod_s = 60;
  EXPECT_FALSE((*t)->Matches({s}, other));
  other = o;
  other.groups = {"inf-x"};  // where replicas run does not change the targets
  EXPECT_TRUE((*t)->Matches({s}, other));
  // Each service field the targets depend on, alone.
  for (int field = 0; field < 6; ++field) {
    inference::Service other_s = s;
    if (field == 0) other_s.name = "other";
    if (field == 1) other_s.goodput_rps = 20;
    if (field == 2) other_s.headroom = 0.2;
    if (field == 3) other_s.min_replicas = 1;
    if (field == 4) other_s.demand.step_s = 120;
    if (field == 5) other_s.demand.rate.pop_back();
    EXPECT_FALSE((*t)->Matches({other_s}, o)) << "field " << field;
  }
  inference::Service busier = s;
  busier.demand.rate[700] += 1;
  EXPECT_FALSE((*t)->Matches({busier}, o));
  EXPECT_FALSE((*t)->Matches({s, s}, o));

  InferenceFleetsOptions peak = o;
  peak.mode = ScalingMode::kPeak;
  EXPECT_FALSE(ScalingTargets::Make({s}, peak));
}

TEST(ScalingTargets, SharedTargetsGiveTheSameReplay) {
  auto own = RunQueueSim(Nodes(), Jobs(), Options(true));
  QueueSimOptions o = Options(true);
  auto t = ScalingTargets::Make(o.inference->services, o.inference->fleets);
  ASSERT_TRUE(t);
  o.inference->fleets.targets = *t;
  auto shared = RunQueueSim(Nodes(), Jobs(), o);
  auto again = RunQueueSim(Nodes(), Jobs(), o);  // the second replay reads what the first extended
  ASSERT_TRUE(own && shared && again);
  for (const auto* r : {&*shared, &*again}) {
    EXPECT_EQ(r->preemptions, own->preemptions);
    EXPECT_EQ(r->inference.at(0).slo_minutes_met, own->inference.at(0).slo_minutes_met);
    EXPECT_EQ(r->inference.at(0).mean_replicas, own->inference.at(0).mean_replicas);
    for (size_t i = 0; i < own->jobs.size(); ++i) EXPECT_EQ(r->jobs[i].finish_s, own->jobs[i].finish_s);
  }
  QueueSimOptions wrong = Options(true);
  wrong.inference->fleets.lead_s = 600;
  wrong.inference->fleets.targets = *t;
  auto refused = RunQueueSim(Nodes(), Jobs(), wrong);
  ASSERT_FALSE(refused);
  EXPECT_THAT(refused.error().message, HasSubstr("shared scaling targets were made for other services or knobs"));
}

// The core project (QueueSimOptions::core_tenant): a hard floor. Tenant A
// asks 160,000 GPU-s and B 40,000, so A's floor is 13 of 16 GPUs and B's 3.
// A's two 8-GPU jobs need 16: as an ordinary tenant A borrows B's idle 3 and
// both start at once; as the core project its jobs are guaranteed tier and
// stay within its floor, so the second waits for the first.
std::vector<Job> CoreJobs() {
  std::vector<Job> jobs = {Train(1, kT0, 10000), Train(2, kT0, 10000), Train(3, kT0 + 20000, 5000)};
  jobs[2].group = "B";
  return jobs;
}

QueueSimOptions CoreOptions(const std::string& core) {
  QueueSimOptions o;
  o.policy = "bestfit";
  o.queue = QueuePolicy::kTidal;
  o.tenants = "proportional";
  o.core_tenant = core;
  return o;
}

TEST(QueueCoreProject, TheLargestTenantsFloorIsHard) {
  auto plain = RunQueueSim(Nodes(), CoreJobs(), CoreOptions(""));
  ASSERT_TRUE(plain) << plain.error().message;
  EXPECT_EQ(plain->core_tenant, "");
  EXPECT_EQ(Tenant(*plain, "A")->floor_gpus, 13);
  EXPECT_EQ(plain->jobs[1].start_s, kT0);  // borrowed

  auto core = RunQueueSim(Nodes(), CoreJobs(), CoreOptions("largest"));
  ASSERT_TRUE(core) << core.error().message;
  EXPECT_EQ(core->core_tenant, "A");
  EXPECT_EQ(core->jobs[0].start_s, kT0);
  EXPECT_EQ(core->jobs[1].start_s, kT0 + 10000);  // within its floor only
  EXPECT_EQ(core->jobs[2].start_s, kT0 + 20000);  // B still borrows A's idle floor

  auto named = RunQueueSim(Nodes(), CoreJobs(), CoreOptions("A"));
  ASSERT_TRUE(named);
  EXPECT_EQ(named->jobs[1].start_s, kT0 + 10000);
}

// An SLA tier per business group (QueueSimOptions::tenant_tiers): A as
// guaranteed keeps within its floor as the core project does; as standard it
// borrows.
TEST(QueueCoreProject, ABusinessGroupsTier) {
  QueueSimOptions o = CoreOptions("");
  o.tenant_tiers = {{"A", tenancy::Tier::kGuaranteed}};
  auto guaranteed = RunQueueSim(Nodes(), CoreJobs(), o);
  ASSERT_TRUE(guaranteed) << guaranteed.error().message;
  EXPECT_EQ(guaranteed->jobs[1].start_s, kT0 + 10000);
  EXPECT_EQ(guaranteed->jobs[2].start_s, kT0 + 20000);
  o.tenant_tiers = {{"A", tenancy::Tier::kStandard}, {"B", tenancy::Tier::kSpot}};
  auto standard = RunQueueSim(Nodes(), CoreJobs(), o);
  ASSERT_TRUE(standard) << standard.error().message;
  EXPECT_EQ(standard->jobs[1].start_s, kT0);

  o.tenant_tiers = {{"nosuch", tenancy::Tier::kSpot}};
  auto unknown = RunQueueSim(Nodes(), CoreJobs(), o);
  ASSERT_FALSE(unknown);
  EXPECT_THAT(unknown.error().message, HasSubstr("business group 'nosuch', which is not a leaf tenant (they are: A, B)"));
  o = CoreOptions("largest");
  o.tenant_tiers = {{"A", tenancy::Tier::kStandard}};
  auto core = RunQueueSim(Nodes(), CoreJobs(), o);
  ASSERT_FALSE(core);
  EXPECT_THAT(core.error().message, HasSubstr("'A' is the core project, whose floor is hard: its tier is guaranteed, not standard"));
  o = CoreOptions("");
  o.queue = QueuePolicy::kFifoBackfill;
  o.tenants = "";
  o.tenant_tiers = {{"A", tenancy::Tier::kSpot}};
  auto untenanted = RunQueueSim(Nodes(), CoreJobs(), o);
  ASSERT_FALSE(untenanted);
  EXPECT_THAT(untenanted.error().message, HasSubstr("SLA tiers per business group need tenants"));
}

TEST(QueueCoreProject, BadInputsSayWhat) {
  auto none = RunQueueSim(Nodes(), CoreJobs(), CoreOptions("nosuch"));
  ASSERT_FALSE(none);
  EXPECT_THAT(none.error().message, HasSubstr("no tenant 'nosuch'"));
  QueueSimOptions fifo = CoreOptions("A");
  fifo.queue = QueuePolicy::kFifoBackfill;
  fifo.tenants = "";
  auto untenanted = RunQueueSim(Nodes(), CoreJobs(), fifo);
  ASSERT_FALSE(untenanted);
  EXPECT_THAT(untenanted.error().message, HasSubstr("a core project needs tenants"));
}

}  // namespace
}  // namespace tidal::sim

#include "mig/repartition.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

namespace tidal::mig {
namespace {

const Geometry& H100() { return *FindGeometry("H100"); }
int P(const char* name) { return H100().FindProfile(name); }
Instance I(const char* name, int start) { return Instance{P(name), start}; }
InstanceState Free(const char* name, int start) { return InstanceState{I(name, start), 0, 0}; }
InstanceState Busy(const char* name, int start, int64_t owner, double cost) { return InstanceState{I(name, start), owner, cost}; }
std::vector<Instance> Sorted(std::vector<Instance> v) {
  std::sort(v.begin(), v.end(), [](const Instance& a, const Instance& b) { return a.start != b.start ? a.start < b.start : a.profile < b.profile; });
  return v;
}
std::string F(const std::vector<Instance>& v) { return FormatLayout(H100(), Layout{v}); }
std::string F(const Layout& l) { return FormatLayout(H100(), l); }
std::vector<int> Counts(const std::map<std::string, int>& by_name) {
  std::vector<int> counts(H100().profiles.size(), 0);
  for (const auto& [name, n] : by_name) counts[static_cast<size_t>(P(name.c_str()))] = n;
  return counts;
}

// The example: the free 2g.20gb@4 is the only instance that changes.
TEST(MigRepartition, KeepsBusyInstancesAndReslicesOnlyTheFreeOne) {
  const std::vector<InstanceState> now = {Busy("3g.40gb", 0, 1, 100), Free("2g.20gb", 4), Busy("1g.10gb", 6, 2, 1)};
  auto plan = PlanRepartition(H100(), now, Counts({{"3g.40gb", 1}, {"1g.10gb", 3}}));
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(F(plan->target), "3g.40gb@0,1g.10gb@4,1g.10gb@5,1g.10gb@6");
  EXPECT_EQ(F(plan->keep), "3g.40gb@0,1g.10gb@6");
  EXPECT_EQ(F(plan->destroy), "2g.20gb@4");
  EXPECT_EQ(F(plan->create), "1g.10gb@4,1g.10gb@5");
  EXPECT_TRUE(plan->disrupted.empty());
  EXPECT_DOUBLE_EQ(plan->cost, 0.01);  // no occupant moves; only the free-instance tie-break
  EXPECT_DOUBLE_EQ(plan->seconds_unavailable, 30);
  EXPECT_EQ(ChangedMemoryMask(H100(), *plan), 0x30u);  // slices 4 and 5 stop; 0-3 and 6 keep serving
  auto no_tiebreak = PlanRepartition(H100(), now, Counts({{"3g.40gb", 1}, {"1g.10gb", 3}}), {.reconfig_s = 12, .free_instance_cost = 0});
  ASSERT_TRUE(no_tiebreak);
  EXPECT_EQ(no_tiebreak->cost, 0);
  EXPECT_EQ(no_tiebreak->seconds_unavailable, 12);
}

// 3g+2g+1g: the 3g goes either over the training 2g@0 (cost 100.01) or over
// the inference 2g@4 and the free 1g@6 (1.02); the replica moves.
TEST(MigRepartition, MovesTheInferenceReplicaRatherThanTraining) {
  const std::vector<InstanceState> now = {Busy("2g.20gb", 0, 10, 100), Free("2g.20gb", 2), Busy("2g.20gb", 4, 20, 1), Free("1g.10gb", 6)};
  const auto want = Counts({{"3g.40gb", 1}, {"2g.20gb", 1}, {"1g.10gb", 1}});
  auto plan = PlanRepartition(H100(), now, want);
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(F(plan->target), "2g.20gb@0,1g.10gb@2,3g.40gb@4");  // 1g@2 and 1g@3 tie: the lower start
  EXPECT_EQ(F(plan->keep), "2g.20gb@0");
  EXPECT_EQ(F(plan->destroy), "2g.20gb@2,2g.20gb@4,1g.10gb@6");
  EXPECT_EQ(F(plan->create), "1g.10gb@2,3g.40gb@4");
  EXPECT_EQ(plan->disrupted, std::vector<int64_t>{20});
  EXPECT_DOUBLE_EQ(plan->cost, 1.02);

  // Swap the occupants' costs: now the 3g goes at 0, over the replica.
  std::vector<InstanceState> swapped = now;
  swapped[0].disruption_cost = 1;
  swapped[2].disruption_cost = 100;
  auto other = PlanRepartition(H100(), swapped, want);
  ASSERT_TRUE(other);
  EXPECT_EQ(F(other->target), "3g.40gb@0,2g.20gb@4,1g.10gb@6");
  EXPECT_EQ(other->disrupted, std::vector<int64_t>{10});
  EXPECT_DOUBLE_EQ(other->cost, 1.01);
}

TEST(MigRepartition, NothingChangesWhenTheCountsAlreadyHold) {
  const std::vector<InstanceState> now = {Busy("3g.40gb", 4, 2, 5), Busy("3g.40gb", 0, 1, 5)};  // any input order
  auto plan = PlanRepartition(H100(), now, Counts({{"3g.40gb", 2}}));
  ASSERT_TRUE(plan);
  EXPECT_EQ(F(plan->target), "3g.40gb@0,3g.40gb@4");
  EXPECT_EQ(F(plan->keep), "3g.40gb@0,3g.40gb@4");
  EXPECT_TRUE(plan->destroy.empty() && plan->create.empty() && plan->disrupted.empty());
  EXPECT_EQ(plan->cost, 0);
  EXPECT_EQ(plan->seconds_unavailable, 0);
  EXPECT_EQ(ChangedMemoryMask(H100(), *plan), 0u);
  // A lone 1g at 1 stays at 1: fewer changes beat lower starts.
  auto lone = PlanRepartition(H100(), std::vector{Free("1g.10gb", 1)}, Counts({{"1g.10gb", 1}}));
  ASSERT_TRUE(lone);
  EXPECT_EQ(F(lone->target), "1g.10gb@1");
  EXPECT_EQ(lone->seconds_unavailable, 0);
}

// With a free tie-break of 0, keeping the free 1g.20gb@0 (one create) and
// re-slicing it (1g@0 + 1g.20gb@2: three changes, lower starts) cost the same.
TEST(MigRepartition, FewerChangesBreakCostTies) {
  auto plan = PlanRepartition(H100(), std::vector{Free("1g.20gb", 0)}, Counts({{"1g.10gb", 1}, {"1g.20gb", 1}}),
                              {.free_instance_cost = 0});
  ASSERT_TRUE(plan);
  EXPECT_EQ(F(plan->target), "1g.20gb@0,1g.10gb@2");
  EXPECT_TRUE(plan->destroy.empty());
  EXPECT_EQ(F(plan->create), "1g.10gb@2");
  // Two free 1g, one wanted: either may go; the lower one stays.
  auto one = PlanRepartition(H100(), std::vector{Free("1g.10gb", 5), Free("1g.10gb", 1)}, Counts({{"1g.10gb", 1}}));
  ASSERT_TRUE(one);
  EXPECT_EQ(F(one->keep), "1g.10gb@1");
  EXPECT_EQ(F(one->destroy), "1g.10gb@5");
}

TEST(MigRepartition, ToAnExactTarget) {
  const std::vector<InstanceState> now = {Busy("3g.40gb", 0, 1, 100), Free("2g.20gb", 4), Busy("1g.10gb", 6, 2, 1)};
  auto plan = PlanRepartitionTo(H100(), now, *ParseLayout(H100(), "3g.40gb@0,1g.20gb@4,1g.20gb@6"));
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(F(plan->keep), "3g.40gb@0");
  EXPECT_EQ(F(plan->destroy), "2g.20gb@4,1g.10gb@6");
  EXPECT_EQ(F(plan->create), "1g.20gb@4,1g.20gb@6");
  EXPECT_EQ(plan->disrupted, std::vector<int64_t>{2});
  EXPECT_DOUBLE_EQ(plan->cost, 1.01);
  // Unsorted target: normalized.
  auto same = PlanRepartitionTo(H100(), now, Layout{{I("1g.10gb", 6), I("3g.40gb", 0)}});
  ASSERT_TRUE(same);
  EXPECT_EQ(F(same->target), "3g.40gb@0,1g.10gb@6");
  EXPECT_EQ(F(same->destroy), "2g.20gb@4");
}

// mig-parted's apply destroys every instance of a GPU whose counts differ.
TEST(MigRepartition, ClearAndApplyDisruptsEveryBusyInstance) {
  const std::vector<InstanceState> now = {Busy("3g.40gb", 0, 1, 100), Free("2g.20gb", 4), Busy("1g.10gb", 6, 2, 1)};
  const Layout target = *ParseLayout(H100(), "3g.40gb@0,1g.10gb@4,1g.10gb@5,1g.10gb@6");
  const RepartitionPlan parted = PlanClearAndApply(H100(), now, target);
  EXPECT_EQ(F(parted.target), F(target));
  EXPECT_TRUE(parted.keep.empty());
  EXPECT_EQ(F(parted.destroy), "3g.40gb@0,2g.20gb@4,1g.10gb@6");
  EXPECT_EQ(F(parted.create), "3g.40gb@0,1g.10gb@4,1g.10gb@5,1g.10gb@6");
  EXPECT_EQ(parted.disrupted, (std::vector<int64_t>{1, 2}));
  EXPECT_DOUBLE_EQ(parted.cost, 101.01);
  EXPECT_DOUBLE_EQ(parted.seconds_unavailable, 30);
  EXPECT_EQ(ChangedMemoryMask(H100(), parted), 0x7Fu);
  auto tidal = PlanRepartitionTo(H100(), now, target);
  ASSERT_TRUE(tidal);
  EXPECT_TRUE(tidal->disrupted.empty());
  EXPECT_DOUBLE_EQ(tidal->cost, 0.01);
  // Equal counts: mig-parted skips the GPU even though the placements differ.
  const RepartitionPlan skip = PlanClearAndApply(H100(), std::vector{Busy("1g.10gb", 1, 7, 1)}, *ParseLayout(H100(), "1g.10gb@0"));
  EXPECT_EQ(F(skip.target), "1g.10gb@1");
  EXPECT_TRUE(skip.destroy.empty() && skip.create.empty());
  EXPECT_EQ(skip.seconds_unavailable, 0);
  // Bad input does not crash it.
  const RepartitionPlan odd = PlanClearAndApply(H100(), std::vector{InstanceState{{42, 3}, 1, 1}}, Layout{});
  EXPECT_EQ(odd.destroy.size(), 1u);
  EXPECT_EQ(ChangedMemoryMask(H100(), odd), 0u);
}

TEST(MigRepartition, MakeRoomPrefersFreeInstances) {
  const std::vector<InstanceState> now = {Busy("3g.40gb", 0, 1, 100), Free("2g.20gb", 4), Busy("1g.10gb", 6, 2, 1)};
  auto plan = PlanMakeRoom(H100(), now, P("1g.10gb"));
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(F(plan->target), "3g.40gb@0,1g.10gb@4,1g.10gb@6");
  EXPECT_EQ(F(plan->destroy), "2g.20gb@4");
  EXPECT_EQ(F(plan->create), "1g.10gb@4");
  EXPECT_TRUE(plan->disrupted.empty());
  // A free 2g.20gb is already room for a 2g.20gb.
  auto none = PlanMakeRoom(H100(), now, P("2g.20gb"));
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->destroy.empty() && none->create.empty());
  EXPECT_EQ(none->seconds_unavailable, 0);
  // Only free instances are destroyed when that suffices, however dear the
  // tie-break: 2g@2 over two free 1g (2 x 50) rather than 2g@0 over the
  // busy 1g@0 (1 + 50).
  std::vector<InstanceState> ones = {Busy("1g.10gb", 0, 9, 1)};
  for (int s = 1; s < 7; ++s) ones.push_back(Free("1g.10gb", s));
  auto dear = PlanMakeRoom(H100(), ones, P("2g.20gb"), {.free_instance_cost = 50});
  ASSERT_TRUE(dear);
  EXPECT_EQ(F(dear->destroy), "1g.10gb@2,1g.10gb@3");
  EXPECT_EQ(F(dear->create), "2g.20gb@2");
  EXPECT_TRUE(dear->disrupted.empty());
}

TEST(MigRepartition, MakeRoomOnAFullGpuDisruptsTheCheapest) {
  std::vector<InstanceState> full;
  for (int s = 0; s < 7; ++s) full.push_back(Busy("1g.10gb", s, 100 + s, s == 3 ? 1 : 5));
  auto plan = PlanMakeRoom(H100(), full, P("2g.20gb"));
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(F(plan->destroy), "1g.10gb@2,1g.10gb@3");  // 5 + 1, against 10 for 0-1 or 4-5
  EXPECT_EQ(F(plan->create), "2g.20gb@2");
  EXPECT_EQ(plan->disrupted, (std::vector<int64_t>{102, 103}));
  EXPECT_DOUBLE_EQ(plan->cost, 6);
  auto whole = PlanMakeRoom(H100(), full, P("7g.80gb"));
  ASSERT_TRUE(whole);
  EXPECT_EQ(whole->disrupted.size(), 7u);
  EXPECT_DOUBLE_EQ(whole->cost, 31);
  // Another 1g: no slice is left, so the cheapest 1g is vacated and made anew.
  auto one = PlanMakeRoom(H100(), full, P("1g.10gb"));
  ASSERT_TRUE(one);
  EXPECT_EQ(F(one->target), "1g.10gb@0,1g.10gb@1,1g.10gb@2,1g.10gb@3,1g.10gb@4,1g.10gb@5,1g.10gb@6");
  EXPECT_EQ(F(one->destroy), "1g.10gb@3");
  EXPECT_EQ(F(one->create), "1g.10gb@3");
  EXPECT_EQ(one->disrupted, std::vector<int64_t>{103});
  EXPECT_DOUBLE_EQ(one->cost, 1);
  // A 4g starts only at 0: a busy 4g@0 is vacated; the free 1g@4 stays.
  auto four = PlanMakeRoom(H100(), std::vector{Busy("4g.40gb", 0, 5, 100), Free("1g.10gb", 4)}, P("4g.40gb"));
  ASSERT_TRUE(four) << four.error().message;
  EXPECT_EQ(F(four->keep), "1g.10gb@4");
  EXPECT_EQ(F(four->destroy), "4g.40gb@0");
  EXPECT_EQ(F(four->create), "4g.40gb@0");
  EXPECT_EQ(four->disrupted, std::vector<int64_t>{5});
}

struct BadCase { std::vector<InstanceState> current; std::vector<int> counts; RepartitionOptions options; const char* error; };

TEST(MigRepartition, ErrorsNameTheRule) {
  const std::vector<InstanceState> none;
  const BadCase cases[] = {
      {none, Counts({{"4g.40gb", 2}}), {}, "two 4g.40gb cannot share a GPU"},
      {none, Counts({{"1g.10gb", 8}}), {}, "at most 7 1g.10gb instances per GPU"},
      {none, Counts({{"1g.10gb+me", 2}}), {}, "at most 1 1g.10gb+me instance per GPU"},
      {none, Counts({{"3g.40gb", 1}, {"4g.40gb", 1}, {"1g.10gb", 1}}), {}, "need 9 memory slices and a GPU has 8"},
      {none, Counts({{"2g.20gb", 3}, {"1g.10gb", 2}}), {}, "need 8 compute slices and a GPU has 7"},
      {none, Counts({{"3g.40gb", 1}, {"4g.40gb", 1}}), {.caps = {.allow_4g_with_3g = false}}, "4g and 3g instances together"},
      {none, std::vector<int>(8, 0), {}, "profile index 7, but H100-80GB has profiles 0-6"},
      {none, {-1}, {}, "cannot be negative"},
      {{Busy("3g.40gb", 0, 1, 1), Free("2g.20gb", 2)}, {}, {}, "current layout '3g.40gb@0,2g.20gb@2' on H100-80GB is not valid"},
      {{InstanceState{{9, 0}, 0, 0}}, {}, {}, "profile #9@0: no such MIG profile"},
      {{Busy("1g.10gb", 0, 1, -1)}, {}, {}, "disruption_cost -1 must be finite and >= 0"},
      {{Busy("1g.10gb", 0, 1, std::nan(""))}, {}, {}, "must be finite"},
      {none, {}, {.reconfig_s = -1}, "reconfig_s -1"},
      {none, {}, {.free_instance_cost = std::numeric_limits<double>::infinity()}, "free_instance_cost inf"},
  };
  for (const BadCase& c : cases) {
    auto plan = PlanRepartition(H100(), c.current, c.counts, c.options);
    ASSERT_FALSE(plan) << c.error;
    EXPECT_THAT(plan.error().message, testing::HasSubstr(c.error));
    EXPECT_EQ(plan.error().code, ErrorCode::kInvalidArgument);
  }
  auto two4 = PlanRepartition(H100(), none, Counts({{"4g.40gb", 2}}));
  EXPECT_EQ(two4.error().message, "wanted {4g.40gb: 2} fits no MIG layout of H100-80GB: at most 1 4g.40gb instance per GPU (two 4g.40gb cannot share a GPU)");
  auto bad_target = PlanRepartitionTo(H100(), none, Layout{{I("2g.20gb", 6)}});
  EXPECT_EQ(bad_target.error().message, "target layout '2g.20gb@6' on H100-80GB is not valid: 2g.20gb@6: 2g.20gb may start only at memory slice 0, 2, 4 on H100-80GB (nvidia-smi mig -lgipp)");
  for (int p : {-1, 7})
    EXPECT_EQ(PlanMakeRoom(H100(), none, p).error().message, fmt::format("profile index {} is out of range: H100-80GB has profiles 0-6", p));
}

// Layout count, by hand. A GPU is either one 7g, or a left half (slices 0-3)
// times a right half (4-7). With m marking the single +me instance (at most
// one per GPU): a one-slice slot is empty, 1g or 1g+me: 2+m. A two-slice
// pair starting at 0, 2 or 4 is a 1g.20gb, a 2g or two slots: 2+(2+m)^2 =
// 6+4m+m^2. Slices 6-7 are a 1g.20gb@6 or the slot at 6 (nothing starts at
// 7): 3+m. Left half: 4g, 3g or two pairs: 2+(6+4m)^2 = 38+48m+... Right
// half: 3g@4 or pair(4)·(6-7): 1+(6+4m)(3+m) = 19+18m+... Product: 722 +
// 1596m + ..., so 722+1596 = 2318 layouts without 7g, 2319 with it (the
// empty one included). Compute never binds before memory on these GPUs.
// Without 4g+3g support, 4g@0,3g@4 goes: 2318.
size_t BruteForceCount(const Geometry& g, DriverCaps caps, std::set<std::string>* seen) {
  std::vector<Instance> pairs;
  for (int p = static_cast<int>(g.profiles.size()) - 1; p >= 0; --p)
    for (int start : g.profile(p).starts) pairs.push_back({p, start});
  // Include/exclude over every pair; validity is closed under subsets, so a
  // subset that fails ValidateLayout cuts only supersets that would fail too.
  size_t count = 0;
  auto walk = [&](auto& self, size_t i, Layout& chosen) -> void {
    if (i == pairs.size()) {
      Layout sorted = chosen;
      Normalize(sorted);
      if (seen) seen->insert(FormatLayout(g, sorted));
      return void(++count);
    }
    self(self, i + 1, chosen);
    chosen.instances.push_back(pairs[i]);
    if (ValidateLayout(g, chosen, caps)) self(self, i + 1, chosen);
    chosen.instances.pop_back();
  };
  Layout empty;
  walk(walk, 0, empty);
  return count;
}

TEST(MigRepartition, H100Has2319Layouts) {
  std::set<std::string> brute;
  EXPECT_EQ(BruteForceCount(H100(), {}, &brute), 2319u);
  const std::vector<Layout>& all = EnumerateLayouts(H100());
  EXPECT_EQ(all.size(), 2319u);
  std::set<std::string> mine;
  for (const Layout& l : all) {
    EXPECT_EQ(Sorted(l.instances), l.instances) << "not normalized: " << F(l);
    EXPECT_TRUE(ValidateLayout(H100(), l)) << F(l);
    mine.insert(F(l));
  }
  EXPECT_EQ(mine, brute);
  EXPECT_EQ(&EnumerateLayouts(H100()), &all);  // cached
  EXPECT_EQ(BruteForceCount(H100(), {.allow_4g_with_3g = false}, nullptr), 2318u);
  EXPECT_EQ(EnumerateLayouts(H100(), {.allow_4g_with_3g = false}).size(), 2318u);
  for (const char* gpu : {"A100", "A100-80GB", "H200"}) EXPECT_EQ(EnumerateLayouts(*FindGeometry(gpu)).size(), 2319u) << gpu;
}

// The test's own cost of going from `now` to `target`.
double CostOf(const std::vector<InstanceState>& now, const Layout& target, double free_cost) {
  double cost = 0;
  for (const InstanceState& s : now)
    if (std::find(target.instances.begin(), target.instances.end(), s.instance) == target.instances.end())
      cost += s.owner != 0 ? s.disruption_cost : free_cost;
  return cost;
}

std::vector<InstanceState> RandomCurrent() {
  const auto& all = EnumerateLayouts(H100());
  const Layout& l = all[*rc::gen::inRange<size_t>(0, all.size())];
  std::vector<InstanceState> now;
  int64_t next = 1;
  for (const Instance& in : l.instances) {
    const bool busy = *rc::gen::inRange(0, 3) > 0;
    now.push_back({in, busy ? next++ : 0, busy ? *rc::gen::element(1.0, 5.0, 100.0) : 0.0});
  }
  std::shuffle(now.begin(), now.end(), std::mt19937(*rc::gen::arbitrary<unsigned>()));
  return now;
}

// keep + destroy is the current layout; keep + create is the target.
bool PartitionsHold(const std::vector<InstanceState>& now, const RepartitionPlan& plan) {
  std::vector<Instance> current, kd = plan.keep, kc = plan.keep;
  for (const InstanceState& s : now) current.push_back(s.instance);
  kd.insert(kd.end(), plan.destroy.begin(), plan.destroy.end());
  kc.insert(kc.end(), plan.create.begin(), plan.create.end());
  return Sorted(kd) == Sorted(current) && Sorted(kc) == plan.target.instances;
}

RC_GTEST_PROP(MigRepartitionProperty, PlansAreExactAndOptimal, ()) {
  const Geometry& g = H100();
  const std::vector<InstanceState> now = RandomCurrent();
  auto counts_of = [&](const Layout& l) {
    std::vector<int> c(g.profiles.size(), 0);
    for (const Instance& in : l.instances) ++c[static_cast<size_t>(in.profile)];
    return c;
  };
  // Half the time the counts of some valid layout, else anything (mostly unfit).
  const auto& all = EnumerateLayouts(g);
  std::vector<int> want = counts_of(all[*rc::gen::inRange<size_t>(0, all.size())]);
  if (*rc::gen::arbitrary<bool>())
    for (int& c : want) c = *rc::gen::weightedOneOf<int>({{6, rc::gen::just(0)}, {3, rc::gen::inRange(1, 3)}, {1, rc::gen::inRange(3, 8)}});
  double best = std::numeric_limits<double>::infinity();
  for (const Layout& l : EnumerateLayouts(g))
    if (counts_of(l) == want) best = std::min(best, CostOf(now, l, 0.01));
  auto plan = PlanRepartition(g, now, want);
  RC_ASSERT(plan.has_value() == std::isfinite(best));
  if (!plan) return;
  RC_ASSERT(ValidateLayout(g, plan->target));
  RC_ASSERT(counts_of(plan->target) == want);
  RC_ASSERT(PartitionsHold(now, *plan));
  RC_ASSERT(std::abs(plan->cost - best) < 1e-9);
  RC_ASSERT(std::abs(plan->cost - CostOf(now, plan->target, 0.01)) < 1e-9);
  RC_ASSERT((plan->seconds_unavailable == 0) == (plan->destroy.empty() && plan->create.empty()));
  auto again = PlanRepartition(g, std::vector<InstanceState>(now.rbegin(), now.rend()), want);
  RC_ASSERT(again && again->target == plan->target && again->disrupted == plan->disrupted);
}

// Brute force: every layout, with room either free (a kept free instance or
// a new one) or made by vacating one busy instance of the profile.
RC_GTEST_PROP(MigRepartitionProperty, MakeRoomLeavesAFreeInstance, ()) {
  const Geometry& g = H100();
  const std::vector<InstanceState> now = RandomCurrent();
  const int profile = *rc::gen::inRange(0, static_cast<int>(g.profiles.size()));
  auto plan = PlanMakeRoom(g, now, profile);
  RC_ASSERT(plan.has_value());
  RC_ASSERT(ValidateLayout(g, plan->target));
  auto busy_cost = [&](const Instance& in) {  // -1: free or not there
    for (const InstanceState& s : now)
      if (s.instance == in && s.owner != 0) return s.disruption_cost;
    return -1.0;
  };
  bool has_room = false;
  for (const Instance& in : plan->target.instances) {
    const bool created = std::find(plan->create.begin(), plan->create.end(), in) != plan->create.end();
    has_room = has_room || (in.profile == profile && (created || busy_cost(in) < 0));
  }
  RC_ASSERT(has_room);
  RC_ASSERT(PartitionsHold(now, *plan));
  for (const Layout& l : EnumerateLayouts(g)) {
    bool disrupts = false, free_room = false;
    std::vector<double> vacate;
    for (const InstanceState& s : now)
      disrupts = disrupts || (s.owner != 0 && std::find(l.instances.begin(), l.instances.end(), s.instance) == l.instances.end());
    for (const Instance& in : l.instances) {
      if (in.profile != profile) continue;
      if (const double c = busy_cost(in); c >= 0) vacate.push_back(c);
      else free_room = true;
    }
    const double base = CostOf(now, l, 0.01);
    for (double c : free_room ? std::vector<double>{0} : vacate) {  // each way to have room in l
      const bool d = disrupts || !free_room;
      if (!d) RC_ASSERT(plan->disrupted.empty());
      if (d == !plan->disrupted.empty()) RC_ASSERT(base + c > plan->cost - 1e-9);
    }
  }
}

}  // namespace
}  // namespace tidal::mig

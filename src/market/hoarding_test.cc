// The zombie detector: a table of sample sequences with the action sequences
// worked out by hand, the defaults end to end, input errors, and properties
// (no reclaim without the full idle run; no fee for an interval with
// activity or missing data; the action grammar).
#include "market/hoarding.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cctype>
#include <cmath>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace tidal::market {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const double kNaN = std::nan("");

std::string Describe(const HoardAction& a) {
  switch (a.kind) {
    case HoardActionKind::kNotify:
      return fmt::format("{} notify", a.at_s);
    case HoardActionKind::kReclaim:
      return fmt::format("{} reclaim", a.at_s);
    case HoardActionKind::kRecovered:
      return fmt::format("{} recovered:{}", a.at_s, a.cause == RecoveryCause::kActivity ? "activity" : "gap");
    case HoardActionKind::kFee:
      return fmt::format("{} fee#{} [{},{}) {}/h {}", a.at_s, a.step, a.from_s, a.to_s, a.rate_per_gpu_hour, a.amount);
  }
  return "?";
}

// Table config: notify after 600 s idle, fees from 900 s in 360 s intervals
// at 1.0, 1.5, 2.0 credits/GPU-h (1 GPU x 360 s: 0.1, 0.15, 0.2 credits),
// reclaim 1080 s after fees start (1980 s into the run); gaps over 120 s.
HoardingConfig TableConfig() {
  HoardingConfig c;
  c.activity_threshold = 0.05;
  c.idle_power_factor = 1.5;
  c.idle_period_s = 600;
  c.grace_s = 300;
  c.fee_interval_s = 360;
  c.fee_start = 1'000'000;
  c.fee_growth = 500'000;
  c.reclaim_after_s = 1080;
  c.max_gap_s = 120;
  return c;
}

// Samples from `from` to `to` (inclusive) every `step` seconds.
struct Seg {
  std::int64_t from, to, step;
  ActivitySample s;
};
Seg Idle(std::int64_t from, std::int64_t to, std::int64_t step = 60) { return {from, to, step, {0.01, kNaN, kNaN, kNaN}}; }
Seg Active(std::int64_t from, std::int64_t to, std::int64_t step = 60) { return {from, to, step, {0.6, kNaN, kNaN, kNaN}}; }
Seg Missing(std::int64_t from, std::int64_t to, std::int64_t step = 60) { return {from, to, step, {kNaN, kNaN, 80, 70}}; }
Seg With(std::int64_t from, std::int64_t to, ActivitySample s) { return {from, to, 60, s}; }

struct Row {
  std::string what;
  std::vector<Seg> segs;
  std::vector<std::string> expected;
};
void PrintTo(const Row& r, std::ostream* os) { *os << r.what; }

const std::vector<std::string> kFullRun = {
    "600 notify",
    "1260 fee#0 [900,1260) 1000000/h 100000",
    "1620 fee#1 [1260,1620) 1500000/h 150000",
    "1980 fee#2 [1620,1980) 2000000/h 200000",
    "1980 reclaim",
};

const std::vector<Row> kRows = {
    {"always active", {Active(0, 3000)}, {}},
    {"idle until reclaimed; later samples ignored", {Idle(0, 2400), Active(2460, 2500)}, kFullRun},
    {"memory-bound: low SM activity but high power is not idle", {With(0, 2400, {0.01, kNaN, 300, 70})}, {}},
    {"low activity and low power is idle", {With(0, 2400, {0.01, kNaN, 90, 70})}, kFullRun},
    {"power exactly idle x factor is not idle", {With(0, 2400, {0.01, kNaN, 105, 70})}, {}},
    {"unknown idle power: power is not used", {With(0, 2400, {0.01, kNaN, 300, kNaN})}, kFullRun},
    {"gpu_util is used when gr_engine_active is absent", {With(0, 2400, {kNaN, 0.02, kNaN, kNaN})}, kFullRun},
    {"gr_engine_active wins over gpu_util", {With(0, 2400, {0.5, 0.0, kNaN, kNaN})}, {}},
    {"the threshold is strict", {With(0, 2400, {0.05, kNaN, kNaN, kNaN})}, {}},
    {"a gap before notify restarts the run",
     {Idle(0, 540), Idle(780, 3000)},  // 540 -> 780 is 240 s > 120: run starts again at 780
     {"1380 notify", "2040 fee#0 [1680,2040) 1000000/h 100000", "2400 fee#1 [2040,2400) 1500000/h 150000",
      "2760 fee#2 [2400,2760) 2000000/h 200000", "2760 reclaim"}},
    {"a gap after notify withdraws it and restarts", {Idle(0, 660), Idle(900, 1600)},
     {"600 notify", "900 recovered:gap", "1500 notify"}},
    {"recovery during the fee stage resets the fee",
     {Idle(0, 1300), Active(1320, 1320), Idle(1380, 2000)},
     {"600 notify", "1260 fee#0 [900,1260) 1000000/h 100000", "1320 recovered:activity", "1980 notify"}},
    {"samples without an activity signal are missing data", {Idle(0, 300), Missing(360, 480), Idle(540, 1200)},
     {"1140 notify"}},
    {"a short blip of missing data within max_gap is bridged", {Idle(0, 300), Missing(360, 360), Idle(420, 2400)},
     kFullRun},
    {"samples exactly max_gap apart; actions at the first sample past each step",
     {Idle(0, 2100, 120)},
     {"600 notify", "1320 fee#0 [900,1260) 1000000/h 100000", "1680 fee#1 [1260,1620) 1500000/h 150000",
      "2040 fee#2 [1620,1980) 2000000/h 200000", "2040 reclaim"}},
    {"suspect, then active before notify: nothing to withdraw", {Idle(0, 540), Active(600, 900)}, {}},
    {"active between idle runs restarts the clock", {Idle(0, 540), Active(600, 600), Idle(660, 1300)},
     {"1260 notify"}},
};

std::vector<std::string> Actions(const HoardingConfig& c, std::int64_t milli, const std::vector<Seg>& segs) {
  auto d = ZombieDetector::Make(c, milli);
  EXPECT_TRUE(d.has_value()) << d.error().message;
  std::vector<std::string> out;
  for (const Seg& g : segs) {
    for (std::int64_t t = g.from; t <= g.to; t += g.step) {
      auto actions = d->Sample(t, g.s);
      EXPECT_TRUE(actions.has_value()) << actions.error().message;
      for (const HoardAction& a : *actions) out.push_back(Describe(a));
    }
  }
  return out;
}

class HoardingTable : public ::testing::TestWithParam<Row> {};
TEST_P(HoardingTable, Sequence) {
  EXPECT_EQ(Actions(TableConfig(), 1000, GetParam().segs), GetParam().expected);
}
std::string RowName(const ::testing::TestParamInfo<Row>& info) {
  std::string s = std::to_string(info.index) + "_";
  for (char c : info.param.what) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return s;
}
INSTANTIATE_TEST_SUITE_P(Rows, HoardingTable, ::testing::ValuesIn(kRows), RowName);

TEST(ZombieDetector, DefaultsEndToEnd) {
  // Defaults, 8 GPUs, samples every 300 s, idle throughout: notify at 30 min,
  // fees from 1 h in 1 h intervals at 0.5, 1.0, 1.5, 2.0 credits/GPU-h
  // (x 8 GPUs: 4, 8, 12, 16 credits), reclaim at 5 h.
  EXPECT_EQ(Actions(HoardingConfig{}, 8000, {Idle(0, 19800, 300)}),
            (std::vector<std::string>{"1800 notify", "7200 fee#0 [3600,7200) 500000/h 4000000",
                                      "10800 fee#1 [7200,10800) 1000000/h 8000000",
                                      "14400 fee#2 [10800,14400) 1500000/h 12000000",
                                      "18000 fee#3 [14400,18000) 2000000/h 16000000", "18000 reclaim"}));
}

TEST(ZombieDetector, SeveralFeesInOneStepAndFractionalGpus) {
  // Fee every 60 s, samples every 120 s: two fees per sample once fees run.
  // 0.5 GPU x 60 s at 1.0/h = 8333.3 -> 8334; at 1.5/h 12500; 2.0/h 16666.6 -> 16667.
  HoardingConfig c = TableConfig();
  c.fee_interval_s = 60;
  c.reclaim_after_s = 180;
  EXPECT_EQ(Actions(c, 500, {Idle(0, 1200, 120)}),
            (std::vector<std::string>{"600 notify", "960 fee#0 [900,960) 1000000/h 8334",
                                      "1080 fee#1 [960,1020) 1500000/h 12500",
                                      "1080 fee#2 [1020,1080) 2000000/h 16667", "1080 reclaim"}));
}

TEST(ZombieDetector, ZeroPeriodsActImmediately) {
  HoardingConfig c = TableConfig();
  c.idle_period_s = 0;
  c.grace_s = 0;
  c.reclaim_after_s = 0;
  EXPECT_EQ(Actions(c, 1000, {Active(0, 60), Idle(120, 120)}), (std::vector<std::string>{"120 notify", "120 reclaim"}));
}

TEST(ZombieDetector, StateAndIdleAccounting) {
  auto d = *ZombieDetector::Make(TableConfig(), 1000);
  EXPECT_EQ(d.state(), ZombieState::kActive);
  ASSERT_TRUE(d.Sample(0, 0.01, kNaN, kNaN, kNaN).has_value());
  EXPECT_EQ(d.state(), ZombieState::kSuspect);
  EXPECT_EQ(d.idle_since(), 0);
  ASSERT_TRUE(d.Sample(600, 0.01, kNaN, kNaN, kNaN).has_value());  // 600 s apart: a gap, new run at 600
  EXPECT_EQ(d.idle_since(), 600);
  EXPECT_EQ(d.observed_idle_s(), 0);
  for (std::int64_t t = 660; t <= 1260; t += 60) ASSERT_TRUE(d.Sample(t, 0.01, kNaN, kNaN, kNaN).has_value());
  EXPECT_EQ(d.state(), ZombieState::kNotified);
  EXPECT_EQ(d.observed_idle_s(), 660);
  ASSERT_TRUE(d.Sample(1320, 0.9, kNaN, kNaN, kNaN).has_value());
  EXPECT_EQ(d.state(), ZombieState::kActive);
  EXPECT_EQ(d.idle_since(), std::nullopt);
  EXPECT_EQ(d.observed_idle_s(), 660);  // the idle->active interval is not idle
  EXPECT_STREQ(ZombieStateName(ZombieState::kFee), "fee");
  EXPECT_STREQ(HoardActionKindName(HoardActionKind::kRecovered), "recovered");
}

TEST(ZombieDetector, BadInputs) {
  auto d = *ZombieDetector::Make(TableConfig(), 1000);
  ASSERT_TRUE(d.Sample(100, 0.5, kNaN, kNaN, kNaN).has_value());
  EXPECT_THAT(d.Sample(99, 0.5, kNaN, kNaN, kNaN).error().message, HasSubstr("before the previous one"));
  EXPECT_THAT(d.Sample(200, kNaN, 57, kNaN, kNaN).error().message, HasSubstr("divide it by 100"));
  EXPECT_THAT(d.Sample(200, -0.1, kNaN, kNaN, kNaN).error().message, HasSubstr("fraction 0..1"));
  EXPECT_FALSE(d.Sample(200, 0.5, kNaN, -3, 70).has_value());
  EXPECT_TRUE(d.Sample(100, 0.5, kNaN, kNaN, kNaN).has_value());  // same time again is fine

  HoardingConfig c = TableConfig();
  c.fee_interval_s = 0;
  EXPECT_THAT(ZombieDetector::Make(c, 1000).error().message, HasSubstr("fee_interval_s"));
  c = TableConfig();
  c.activity_threshold = 0;
  EXPECT_THAT(ZombieDetector::Make(c, 1000).error().message, HasSubstr("activity_threshold"));
  c = TableConfig();
  c.fee_start = -1;
  EXPECT_THAT(ZombieDetector::Make(c, 1000).error().message, HasSubstr("fee_start"));
  EXPECT_FALSE(ZombieDetector::Make(TableConfig(), -1).has_value());
}

// --- properties -----------------------------------------------------------------

enum class Kind { kIdle, kActive, kMissing, kBusyMemory };

struct Step {
  std::int64_t t;
  Kind kind;
};

ActivitySample SampleOf(Kind k) {
  switch (k) {
    case Kind::kIdle:
      return {0.0, kNaN, 60, 70};
    case Kind::kActive:
      return {0.9, kNaN, 400, 70};
    case Kind::kMissing:
      return {kNaN, kNaN, 60, 70};
    case Kind::kBusyMemory:
      return {0.01, 0.01, 350, 70};  // low SM, high power: in use
  }
  return {};
}

bool Valid(Kind k) { return k != Kind::kMissing; }
bool IsIdle(Kind k) { return k == Kind::kIdle; }

// True when the valid samples of steps[0..last] cover [from, to] idly: the
// last valid sample at or before `from` and every valid sample after it up to
// `to` are idle, each within max_gap of the previous valid one, and the
// coverage reaches `to`.
bool IdleCovered(const std::vector<Step>& steps, std::size_t last, std::int64_t from, std::int64_t to,
                 std::int64_t max_gap) {
  std::optional<std::size_t> start;
  for (std::size_t i = 0; i <= last; ++i)
    if (Valid(steps[i].kind) && steps[i].t <= from) start = i;
  if (!start) return false;
  std::int64_t prev = steps[*start].t;
  if (!IsIdle(steps[*start].kind)) return false;
  bool reached = prev >= to;
  for (std::size_t i = *start + 1; i <= last && !reached; ++i) {
    if (!Valid(steps[i].kind)) continue;
    if (!IsIdle(steps[i].kind) || steps[i].t - prev > max_gap) return false;
    prev = steps[i].t;
    reached = prev >= to;
  }
  return reached;
}

RC_GTEST_PROP(ZombieDetector, NoReclaimOrFeeWithoutTheIdleEvidence, ()) {
  HoardingConfig c;
  c.idle_period_s = *rc::gen::inRange<std::int64_t>(0, 400);
  c.grace_s = *rc::gen::inRange<std::int64_t>(0, 300);
  c.fee_interval_s = *rc::gen::inRange<std::int64_t>(1, 300);
  c.reclaim_after_s = *rc::gen::inRange<std::int64_t>(0, 900);
  c.max_gap_s = *rc::gen::inRange<std::int64_t>(1, 200);
  c.fee_start = *rc::gen::inRange<Micros>(0, 5'000'000);
  c.fee_growth = *rc::gen::inRange<Micros>(0, 5'000'000);
  const std::int64_t milli = *rc::gen::inRange<std::int64_t>(0, 16'001);
  auto d = ZombieDetector::Make(c, milli);
  RC_ASSERT(d.has_value());

  std::vector<Step> steps;
  std::int64_t t = *rc::gen::inRange<std::int64_t>(-1000, 1000);
  const int n = *rc::gen::inRange(1, 300);
  // Mostly idle, so that runs get far enough to be interesting; how mostly
  // varies per case, so some cases carry long runs to a reclaim.
  const std::size_t idle_weight = *rc::gen::element<std::size_t>(5, 50, 500);
  const auto kind_gen = rc::gen::weightedElement<Kind>({{idle_weight, Kind::kIdle}, {1, Kind::kActive},
                                                        {1, Kind::kMissing}, {1, Kind::kBusyMemory}});
  bool reclaimed = false;
  bool notified = false;       // a Notify not yet closed by Recovered
  std::int64_t next_step = 0;  // expected next fee step in the current run
  bool saw_fee = false, saw_recovered = false;
  for (int i = 0; i < n; ++i) {
    // Mostly within max_gap; one step in ten a gap.
    t += *rc::gen::oneOf(rc::gen::inRange<std::int64_t>(0, c.max_gap_s + 1), rc::gen::inRange<std::int64_t>(0, c.max_gap_s + 1),
                         rc::gen::inRange<std::int64_t>(0, c.max_gap_s + 1), rc::gen::inRange<std::int64_t>(0, c.max_gap_s + 1),
                         rc::gen::inRange<std::int64_t>(0, c.max_gap_s + 1), rc::gen::inRange<std::int64_t>(0, c.max_gap_s + 1),
                         rc::gen::inRange<std::int64_t>(0, c.max_gap_s + 1), rc::gen::inRange<std::int64_t>(0, c.max_gap_s + 1),
                         rc::gen::inRange<std::int64_t>(0, c.max_gap_s + 1),
                         rc::gen::inRange<std::int64_t>(c.max_gap_s + 1, 4 * c.max_gap_s + 2));
    steps.push_back({t, *kind_gen});
    auto actions = d->Sample(t, SampleOf(steps.back().kind));
    RC_ASSERT(actions.has_value());
    const std::size_t last = steps.size() - 1;
    for (const HoardAction& a : *actions) {
      RC_ASSERT(!reclaimed);
      RC_ASSERT(a.at_s == t);
      switch (a.kind) {
        case HoardActionKind::kNotify:
          RC_ASSERT(!notified);
          RC_ASSERT(IdleCovered(steps, last, t - c.idle_period_s, t, c.max_gap_s));
          notified = true;
          next_step = 0;
          break;
        case HoardActionKind::kFee: {
          RC_ASSERT(notified);
          RC_ASSERT(a.step == next_step);
          ++next_step;
          saw_fee = true;
          RC_ASSERT(a.to_s - a.from_s == c.fee_interval_s);
          RC_ASSERT(a.to_s <= t);
          // Never charged for an interval with activity or missing data.
          RC_ASSERT(IdleCovered(steps, last, a.from_s, a.to_s, c.max_gap_s));
          RC_ASSERT(a.rate_per_gpu_hour == c.fee_start + a.step * c.fee_growth);
          RC_ASSERT(a.amount == *ChargeForInterval(milli, c.fee_interval_s, a.rate_per_gpu_hour));
          break;
        }
        case HoardActionKind::kReclaim:
          RC_ASSERT(notified);
          // The whole escalation was idle, uninterrupted.
          RC_ASSERT(IdleCovered(steps, last, t - c.idle_period_s - c.grace_s - c.reclaim_after_s, t, c.max_gap_s));
          RC_ASSERT(next_step == c.reclaim_after_s / c.fee_interval_s);  // every whole interval charged, once
          reclaimed = true;
          break;
        case HoardActionKind::kRecovered:
          RC_ASSERT(notified);
          RC_ASSERT(a.cause != RecoveryCause::kNone);
          notified = false;
          saw_recovered = true;
          break;
      }
    }
    RC_ASSERT(reclaimed == (d->state() == ZombieState::kReclaimed));
  }
  RC_CLASSIFY(reclaimed, "reclaimed");
  RC_CLASSIFY(saw_fee, "charged a fee");
  RC_CLASSIFY(saw_recovered, "recovered");
}

}  // namespace
}  // namespace tidal::market

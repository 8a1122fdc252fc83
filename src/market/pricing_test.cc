// Prices: the integer money rules (tables worked out by hand), the curve, the
// book, and the dynamic pricer on a scenario whose multipliers are derived by
// hand in the comments; properties for the cap, the bounds, the announcement
// (history only grows) and quote == meter.
#include "market/pricing.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

#include "market/tier.h"

namespace tidal::market {
namespace {

using ::testing::HasSubstr;

constexpr std::int64_t kMax64 = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t H = 3600;

// --- tiers -----------------------------------------------------------------

TEST(Tier, NamesRoundTrip) {
  EXPECT_STREQ(TierName(Tier::kGuaranteed), "guaranteed");
  EXPECT_STREQ(TierName(Tier::kStandard), "standard");
  EXPECT_STREQ(TierName(Tier::kSpot), "spot");
  EXPECT_STREQ(TierName(Tier::kInference), "inference");
  for (Tier t : kAllTiers) EXPECT_EQ(*ParseTier(TierName(t)), t);
}

TEST(Tier, UnknownNameListsTheValidOnes) {
  for (const char* bad : {"gold", "Spot", "", " spot"}) {
    auto t = ParseTier(bad);
    ASSERT_FALSE(t.has_value()) << bad;
    EXPECT_THAT(t.error().message, HasSubstr(fmt::format("unknown tier '{}'", bad)));
    EXPECT_THAT(t.error().message, HasSubstr("guaranteed, standard, spot, inference"));
  }
}

// --- integer money rules -----------------------------------------------------

struct ChargeRow {
  std::int64_t milli, seconds;
  Micros price;
  Micros expected;  // -1: an error
};
void PrintTo(const ChargeRow& r, std::ostream* os) {
  *os << r.milli << " mGPU x " << r.seconds << " s @ " << r.price;
}

class ChargeTable : public ::testing::TestWithParam<ChargeRow> {};
TEST_P(ChargeTable, CeilOfExactProduct) {
  const ChargeRow& r = GetParam();
  auto c = ChargeForInterval(r.milli, r.seconds, r.price);
  if (r.expected < 0) {
    EXPECT_FALSE(c.has_value()) << *c;
  } else {
    ASSERT_TRUE(c.has_value()) << c.error().message;
    EXPECT_EQ(*c, r.expected);
  }
}
INSTANTIATE_TEST_SUITE_P(
    Rows, ChargeTable,
    ::testing::Values(
        ChargeRow{1000, 3600, 2'000'000, 2'000'000},      // one GPU-hour at 2 credits
        ChargeRow{8000, 3600, 2'500'000, 20'000'000},     // 8 GPU-hours at 2.5
        ChargeRow{500, 60, 3'000'000, 25'000},            // 0.5 GPU x 1 min: 3e6/120 exactly
        ChargeRow{1000, 1, 1'000'000, 278},               // 277.7... rounds up
        ChargeRow{1000, 1800, 1'000'001, 500'001},        // 500000.5 rounds up
        ChargeRow{1, 1, 1, 1},                            // 1/3.6e6 of a micro-credit still costs one
        ChargeRow{0, 3600, 2'000'000, 0},
        ChargeRow{1000, 0, 2'000'000, 0},
        ChargeRow{1000, 3600, 0, 0},
        // 1e9 mGPU x 1e9 s x 1e12 = 1e30 fits in 128 bits, 2.8e23 does not fit in 64.
        ChargeRow{1'000'000'000, 1'000'000'000, 1'000'000'000'000, -1},
        // int64 max on all three overflows even 128 bits.
        ChargeRow{kMax64, kMax64, kMax64, -1},
        // One GPU-hour at a price near int64 max: the charge is the price itself.
        ChargeRow{1000, 3600, 9'223'372'036'854'000'000, 9'223'372'036'854'000'000},
        ChargeRow{-1, 3600, 1, -1}, ChargeRow{1000, -1, 1, -1}, ChargeRow{1000, 1, -1, -1}));

TEST(ApplyMultiplier, RoundsHalfUpOnce) {
  // base x factor x multiplier / 1e12
  EXPECT_EQ(*ApplyMultiplier(2'000'000, 300'000, 1'000'000), 600'000);     // 2.0 x 0.3
  EXPECT_EQ(*ApplyMultiplier(4'000'000, 1'500'000, 1'200'000), 7'200'000); // 4.0 x 1.5 x 1.2
  EXPECT_EQ(*ApplyMultiplier(2'000'000, 300'000, 500'000), 300'000);       // 2.0 x 0.3 x 0.5
  EXPECT_EQ(*ApplyMultiplier(1, 500'000, 1'000'000), 1);                   // 0.5 -> 1
  EXPECT_EQ(*ApplyMultiplier(3, 500'000, 1'000'000), 2);                   // 1.5 -> 2
  EXPECT_EQ(*ApplyMultiplier(1'000'001, 300'000, 1'000'000), 300'000);     // 300000.3 -> 300000
  EXPECT_EQ(*ApplyMultiplier(1'000'001, 500'000, 1'000'000), 500'001);     // 500000.5 -> 500001
  // One rounding, not two: 1 x 0.5 x 0.5 = 0.25 -> 0 (rounding after the
  // factor would give 1 x 0.5 = 1 first, then 0.5 -> 1).
  EXPECT_EQ(*ApplyMultiplier(1, 500'000, 500'000), 0);
  EXPECT_FALSE(ApplyMultiplier(-1, 1, 1).has_value());
  EXPECT_FALSE(ApplyMultiplier(kMax64, kMax64, kMax64).has_value());
}

struct SplitRow {
  Micros charge;
  std::int64_t ppm;
  LendingSplit expected;
};
TEST(SplitBorrowedCharge, FloorToLenderRestToRevenue) {
  const std::vector<SplitRow> rows = {
      {1'000'000, 500'000, {500'000, 500'000}},
      {1'000'001, 500'000, {500'000, 500'001}},  // the odd micro-credit stays with revenue
      {100, 333'333, {33, 67}},
      {7, 1'000'000, {7, 0}},
      {7, 0, {0, 7}},
      {0, 500'000, {0, 0}},
      // 9223372036854775807 x 0.999999 = 9223362813482738952.224193 (floor to the lender).
      {kMax64, 999'999, {9'223'362'813'482'738'952, 9'223'372'036'854'775'807 - 9'223'362'813'482'738'952}},
  };
  for (const SplitRow& r : rows) {
    auto s = SplitBorrowedCharge(r.charge, r.ppm);
    ASSERT_TRUE(s.has_value()) << s.error().message;
    EXPECT_EQ(*s, r.expected) << r.charge << " @ " << r.ppm;
    EXPECT_EQ(s->to_lender + s->to_revenue, r.charge);
  }
  EXPECT_THAT(SplitBorrowedCharge(10, 1'000'001).error().message, HasSubstr("[0, 1000000]"));
  EXPECT_FALSE(SplitBorrowedCharge(10, -1).has_value());
  EXPECT_FALSE(SplitBorrowedCharge(-10, 500'000).has_value());
}

RC_GTEST_PROP(SplitBorrowedCharge, SumsExactly, ()) {
  const Micros charge = *rc::gen::inRange<Micros>(0, kMax64);
  const std::int64_t ppm = *rc::gen::inRange<std::int64_t>(0, 1'000'001);
  const LendingSplit s = *SplitBorrowedCharge(charge, ppm);
  RC_ASSERT(s.to_lender + s.to_revenue == charge);
  RC_ASSERT(s.to_lender >= 0);
  RC_ASSERT(s.to_revenue >= 0);
}

TEST(RecallCompensation, LostWorkAtThePricePaidTimesFactor) {
  // 8 GPUs lost 30 min at 4.0/GPU-h, factor 1: 8 x 0.5 x 4 = 16 credits.
  EXPECT_EQ(*RecallCompensation(8000, 1800, 4'000'000, 1'000'000), 16'000'000);
  // factor 1.5: 24 credits.
  EXPECT_EQ(*RecallCompensation(8000, 1800, 4'000'000, 1'500'000), 24'000'000);
  // 1 GPU, 1 s at 1.0, factor 0.5: 138.88... -> 139 (ceil, in the borrower's favour).
  EXPECT_EQ(*RecallCompensation(1000, 1, 1'000'000, 500'000), 139);
  EXPECT_EQ(*RecallCompensation(1000, 0, 1'000'000, 1'000'000), 0);
  EXPECT_EQ(*RecallCompensation(1000, 3600, 1'000'000, 0), 0);
  EXPECT_FALSE(RecallCompensation(1000, 3600, 1'000'000, -1).has_value());
  EXPECT_FALSE(RecallCompensation(kMax64, kMax64, 1, 1).has_value());
}

TEST(TierUnderBudget, OverBudgetDropsToSpot) {
  EXPECT_EQ(TierUnderBudget(Tier::kStandard, 5, std::nullopt), Tier::kStandard);
  EXPECT_EQ(TierUnderBudget(Tier::kStandard, 99, 100), Tier::kStandard);
  EXPECT_EQ(TierUnderBudget(Tier::kStandard, 100, 100), Tier::kSpot);  // nothing left is over
  EXPECT_EQ(TierUnderBudget(Tier::kInference, 101, 100), Tier::kSpot);
  EXPECT_EQ(TierUnderBudget(Tier::kSpot, 101, 100), Tier::kSpot);
  EXPECT_EQ(TierUnderBudget(Tier::kGuaranteed, 101, 100), Tier::kGuaranteed);
  EXPECT_EQ(TierUnderBudget(Tier::kStandard, 0, 0), Tier::kSpot);  // a zero budget: spot only
}

// --- curve -------------------------------------------------------------------

TEST(PriceCurve, DefaultInterpolates) {
  const PriceCurve c = PriceCurve::Default();
  struct Row {
    double u, m;
  };
  for (const Row& r : std::vector<Row>{{0.0, 0.5},
                                       {0.25, 0.75},   // halfway 0.5..1.0
                                       {0.5, 1.0},
                                       {0.65, 1.1},    // 1.0 + 0.15 x (0.2 / 0.3)
                                       {0.8, 1.2},
                                       {0.9, 1.6},     // 1.2 + 0.1 x (0.8 / 0.2)
                                       {1.0, 2.0},
                                       {-0.5, 0.5},    // clamped into [0, 1]
                                       {1.5, 2.0},
                                       {std::nan(""), 0.5}}) {
    EXPECT_NEAR(c.Multiplier(r.u), r.m, 1e-12) << "u=" << r.u;
  }
}

TEST(PriceCurve, FlatOutsideItsPointsAndClampedToBounds) {
  auto c = PriceCurve::Make({{0.2, 0.8}, {0.6, 1.4}}, 0.8, 1.4);
  ASSERT_TRUE(c.has_value()) << c.error().message;
  EXPECT_NEAR(c->Multiplier(0.0), 0.8, 1e-12);
  EXPECT_NEAR(c->Multiplier(0.4), 1.1, 1e-12);
  EXPECT_NEAR(c->Multiplier(1.0), 1.4, 1e-12);
}

TEST(PriceCurve, ValidationNamesTheOffendingPoint) {
  struct Row {
    std::vector<CurvePoint> points;
    double lo, hi;
    std::vector<std::string> must;
  };
  const std::vector<Row> rows = {
      {{{0.0, 0.5}, {0.8, 1.2}, {0.5, 1.0}}, 0.5, 2.0, {"point 3", "utilisation 0.5", "increasing utilisation"}},
      {{{0.0, 0.5}, {0.5, 1.0}, {0.5, 1.1}}, 0.5, 2.0, {"point 3", "each utilisation once"}},
      {{{0.0, 0.5}, {1.2, 1.0}}, 0.5, 2.0, {"point 2", "utilisation 1.2", "[0, 1]"}},
      {{{-0.1, 0.5}}, 0.5, 2.0, {"point 1", "[0, 1]"}},
      {{{0.0, 0.0}}, 0.5, 2.0, {"point 1", "multiplier 0", "> 0"}},
      {{{0.0, 0.5}, {1.0, 2.5}}, 0.5, 2.0, {"point 2", "multiplier 2.5", "outside the bounds [0.5, 2]"}},
      {{}, 0.5, 2.0, {"no points"}},
      {{{0.0, 1.0}}, 2.0, 1.0, {"min_multiplier <= max_multiplier"}},
      {{{0.0, 1.0}}, 0.0, 1.0, {"0 < min_multiplier"}},
  };
  for (const Row& r : rows) {
    auto c = PriceCurve::Make(r.points, r.lo, r.hi);
    ASSERT_FALSE(c.has_value());
    for (const std::string& m : r.must) EXPECT_THAT(c.error().message, HasSubstr(m));
  }
}

// --- book --------------------------------------------------------------------

TEST(PriceBook, LookupOrderAndFallback) {
  PriceBook b = PriceBook::Default();
  b.overrides["H100"][Tier::kSpot] = 1'500'000;
  ASSERT_TRUE(b.Validate().has_value()) << b.Validate().error().message;
  EXPECT_EQ(*b.Floating("H100", Tier::kStandard), (TierBase{4'000'000, 1'000'000}));
  EXPECT_EQ(*b.Floating("H100", Tier::kSpot), (TierBase{1'500'000, 1'000'000}));  // override, no factor
  EXPECT_EQ(*b.Floating("A100", Tier::kSpot), (TierBase{2'000'000, 300'000}));
  EXPECT_EQ(*b.Floating("MI300X", Tier::kInference), (TierBase{1'000'000, 1'500'000}));  // "*"
  EXPECT_EQ(*b.Floating("h100", Tier::kStandard), (TierBase{1'000'000, 1'000'000}));  // exact names only
  EXPECT_EQ(*b.ListPrice("H100", Tier::kSpot), 1'500'000);
  EXPECT_EQ(*b.ListPrice("A100", Tier::kSpot), 600'000);
  EXPECT_EQ(*b.ListPrice("A100", Tier::kInference), 3'000'000);
  EXPECT_EQ(*b.ListPrice("T4", Tier::kGuaranteed), 320'000);
  EXPECT_EQ(*b.ListPrice("MI300X", Tier::kGuaranteed), 800'000);
  EXPECT_FALSE(b.Floating("H100", Tier::kGuaranteed).has_value());
}

TEST(PriceBook, ValidationErrors) {
  auto err = [](PriceBook b) {
    auto s = b.Validate();
    return s ? std::string() : s.error().message;
  };
  PriceBook b = PriceBook::Default();
  b.base.erase("*");
  b.in_floor.erase("*");
  b.in_floor.erase("T4");
  EXPECT_THAT(err(b), HasSubstr("no in-floor rate for GPU model 'T4'"));
  b = PriceBook::Default();
  b.base["H100"] = -1;
  EXPECT_THAT(err(b), HasSubstr("base price of 'H100'"));
  b = PriceBook::Default();
  b.tier_factor_ppm.erase(Tier::kSpot);
  EXPECT_THAT(err(b), HasSubstr("no tier factor for spot"));
  b = PriceBook::Default();
  b.tier_factor_ppm[Tier::kGuaranteed] = 1'000'000;
  EXPECT_THAT(err(b), HasSubstr("set in_floor instead"));
  b = PriceBook::Default();
  b.overrides["H100"][Tier::kGuaranteed] = 1;
  EXPECT_THAT(err(b), HasSubstr("in-floor rate"));
  b = PriceBook::Default();
  b.base["B200"] = kMaxPricePerGpuHour + 1;
  EXPECT_THAT(err(b), HasSubstr("outside [0, 1000000]"));
  EXPECT_EQ(err(PriceBook::Default()), "");
}

// --- the dynamic pricer: a scenario worked out by hand -------------------------
//
// Pool H100 (standard 4.0, spot 0.3x, inference 1.5x, in-floor 3.2), default
// curve, period 1 h, window 2, max_step 0.1, lead 2, origin 0, initial 1.0.
// Utilisation 1.0 over [0, 2h), 0.0 from 2h on.
//   periods 0, 1: 1.0 (initial, announced at 0)
//   end of 0 (t=1h): window [1.0] avg 1.0 -> curve 2.0 -> capped 1.0+0.1 = 1.1 -> period 2
//   end of 1 (t=2h): window [1.0, 1.0] -> 2.0 -> 1.1+0.1 = 1.2 -> period 3
//   end of 2 (t=3h): window [1.0, 0.0] avg 0.5 -> 1.0 -> 1.2-0.1 = 1.1 -> period 4
//   end of 3 (t=4h): window [0.0, 0.0] -> 0.5 -> 1.1-0.1 = 1.0 -> period 5
//   end of 4 (t=5h): 0.5 -> 0.9 -> period 6;   end of 5: 0.8 -> period 7
// Standard prices: 4.0 x m; spot 1.2 x m; inference 6.0 x m.

PricerConfig ScenarioConfig(std::int64_t protection_s = 0) {
  PricerConfig c;
  c.period_s = H;
  c.window_periods = 2;
  c.max_step = 0.1;
  c.lead_periods = 2;
  c.protection_s = protection_s;
  c.initial_multiplier = 1.0;
  return c;
}

DynamicPricer Scenario(std::int64_t until_s, std::int64_t protection_s = 0) {
  auto p = DynamicPricer::Make("H100", PriceBook::Default(), PriceCurve::Default(), ScenarioConfig(protection_s), 0);
  EXPECT_TRUE(p.has_value()) << p.error().message;
  EXPECT_TRUE(p->Observe(0, 1.0).has_value());
  if (until_s >= 2 * H) {
    EXPECT_TRUE(p->Observe(2 * H, 0.0).has_value());
  }
  EXPECT_TRUE(p->AdvanceTo(until_s).has_value());
  return std::move(*p);
}

TEST(DynamicPricer, HandDerivedMultipliers) {
  const DynamicPricer p = Scenario(6 * H);
  const std::vector<std::int64_t> expected = {1'000'000, 1'000'000, 1'100'000, 1'200'000,
                                              1'100'000, 1'000'000, 900'000,   800'000};
  const auto& e = p.history().entries;
  ASSERT_EQ(e.size(), expected.size());
  for (std::size_t k = 0; k < e.size(); ++k) {
    EXPECT_EQ(e[k].period, static_cast<std::int64_t>(k));
    EXPECT_EQ(e[k].multiplier_ppm, expected[k]) << "period " << k;
    EXPECT_EQ(e[k].effective_from_s, static_cast<std::int64_t>(k) * H);
    // Fixed at the end of period k - lead: (k - 2 + 1) h, the origin for 0 and 1.
    EXPECT_EQ(e[k].announced_at_s, k < 2 ? 0 : static_cast<std::int64_t>(k - 1) * H) << "period " << k;
  }
  EXPECT_TRUE(std::isnan(e[0].utilisation_avg));
  EXPECT_DOUBLE_EQ(e[4].utilisation_avg, 0.5);
  // Period 3 at 1.2: standard 4.8, spot 1.44, inference 7.2, in-floor fixed 3.2.
  EXPECT_EQ(e[3].Price(Tier::kStandard), 4'800'000);
  EXPECT_EQ(e[3].Price(Tier::kSpot), 1'440'000);
  EXPECT_EQ(e[3].Price(Tier::kInference), 7'200'000);
  EXPECT_EQ(e[3].Price(Tier::kGuaranteed), 3'200'000);
  EXPECT_EQ(e[7].Price(Tier::kGuaranteed), 3'200'000);
  EXPECT_EQ(e[7].Price(Tier::kStandard), 3'200'000);  // 4.0 x 0.8
}

TEST(DynamicPricer, AnnouncesAtThePeriodEndNotBefore) {
  auto p = DynamicPricer::Make("H100", PriceBook::Default(), PriceCurve::Default(), ScenarioConfig(), 0);
  ASSERT_TRUE(p.has_value());
  ASSERT_TRUE(p->Observe(0, 1.0).has_value());
  ASSERT_TRUE(p->AdvanceTo(H - 1).has_value());
  EXPECT_EQ(p->history().entries.size(), 2u);
  EXPECT_EQ(p->history().horizon_s(), 2 * H);
  // The current and next period are known; the one after is not.
  EXPECT_EQ(*p->PriceAt(Tier::kStandard, 2 * H - 1), 4'000'000);
  auto unknown = p->PriceAt(Tier::kStandard, 2 * H);
  ASSERT_FALSE(unknown.has_value());
  EXPECT_THAT(unknown.error().message, HasSubstr("AdvanceTo"));
  ASSERT_TRUE(p->AdvanceTo(H).has_value());
  EXPECT_EQ(p->history().entries.size(), 3u);
  EXPECT_EQ(*p->PriceAt(Tier::kStandard, 2 * H), 4'400'000);
  EXPECT_FALSE(p->PriceAt(Tier::kStandard, -1).has_value());
}

TEST(DynamicPricer, TimeWeightedPeriodMean) {
  // Window 1, curve identity-like on [0.5, 1.5] via points (0, 0.5), (1, 1.5);
  // max_step 1 so the cap does not bind. u = 0.8 for 900 s then 0: mean 0.2
  // -> multiplier 0.7.
  PricerConfig c = ScenarioConfig();
  c.window_periods = 1;
  c.max_step = 1.0;
  auto curve = *PriceCurve::Make({{0.0, 0.5}, {1.0, 1.5}}, 0.5, 1.5);
  auto p = DynamicPricer::Make("A100", PriceBook::Default(), curve, c, 0);
  ASSERT_TRUE(p.has_value());
  ASSERT_TRUE(p->Observe(0, 0.8).has_value());
  ASSERT_TRUE(p->Observe(900, 0.0).has_value());
  ASSERT_TRUE(p->Observe(900, 0.0).has_value());  // same time again is fine
  ASSERT_TRUE(p->AdvanceTo(H).has_value());
  EXPECT_EQ(p->history().entries.back().multiplier_ppm, 700'000);
  // The last value (0) holds through period 1: mean 0 -> 0.5.
  ASSERT_TRUE(p->AdvanceTo(2 * H).has_value());
  EXPECT_EQ(p->history().entries.back().multiplier_ppm, 500'000);
  EXPECT_FALSE(p->Observe(100, 0.5).has_value());  // back in time
  EXPECT_THAT(p->Observe(3 * H, 57.0).error().message, HasSubstr("[0, 1]"));
}

TEST(DynamicPricer, TimeBeforeTheFirstObservationDoesNotCount) {
  // First observation at 2700 s (u = 1.0): period 0 mean is 1.0, not 0.25.
  PricerConfig c = ScenarioConfig();
  c.window_periods = 1;
  c.max_step = 2.0;
  auto p = DynamicPricer::Make("A100", PriceBook::Default(), PriceCurve::Default(), c, 0);
  ASSERT_TRUE(p.has_value());
  ASSERT_TRUE(p->AdvanceTo(H).has_value());  // no data at all: the multiplier holds
  EXPECT_EQ(p->history().entries.back().multiplier_ppm, 1'000'000);
  ASSERT_TRUE(p->Observe(H + 2700, 1.0).has_value());
  ASSERT_TRUE(p->AdvanceTo(2 * H).has_value());
  EXPECT_EQ(p->history().entries.back().multiplier_ppm, 2'000'000);
}

TEST(DynamicPricer, InvalidSetups) {
  PricerConfig c = ScenarioConfig();
  c.initial_multiplier = 3.0;
  EXPECT_THAT(DynamicPricer::Make("H100", PriceBook::Default(), PriceCurve::Default(), c, 0).error().message,
              HasSubstr("outside the curve's bounds"));
  c = ScenarioConfig();
  c.lead_periods = 0;
  EXPECT_THAT(DynamicPricer::Make("H100", PriceBook::Default(), PriceCurve::Default(), c, 0).error().message,
              HasSubstr("lead_periods"));
  PriceBook b = PriceBook::Default();
  b.base.erase("*");
  EXPECT_THAT(DynamicPricer::Make("MI300X", b, PriceCurve::Default(), ScenarioConfig(), 0).error().message,
              HasSubstr("'MI300X'"));
}

// --- protection window ----------------------------------------------------------

TEST(PriceLock, NeverAboveTheStartPriceWhileProtected) {
  const DynamicPricer p = Scenario(6 * H);
  const PriceHistory& h = p.history();
  // Start at 0 (4.0), protected 6 h.
  auto lock = Lock(h, Tier::kStandard, 0, 6 * H);
  ASSERT_TRUE(lock.has_value());
  EXPECT_EQ(*lock, (PriceLock{Tier::kStandard, 0, 6 * H, 4'000'000}));
  EXPECT_EQ(*LockedPrice(h, *lock, 3 * H + 10), 4'000'000);   // period 3 is 4.8
  EXPECT_EQ(*LockedPrice(h, *lock, 5 * H), 4'000'000);        // period 5 is 4.0
  EXPECT_EQ(*LockedPrice(h, *lock, 6 * H - 1), 4'000'000);    // last second of the lock, period 5
  EXPECT_EQ(*LockedPrice(h, *lock, 6 * H), 3'600'000);        // period 6 (0.9): after the lock, its own price
  EXPECT_FALSE(LockedPrice(h, *lock, -1).has_value());
  // Start in period 3 (4.8): the price may fall under the lock.
  EXPECT_EQ(*LockedPrice(h, Tier::kStandard, 3 * H, 6 * H, 5 * H), 4'000'000);
  EXPECT_EQ(*LockedPrice(h, Tier::kSpot, 3 * H, 6 * H, 4 * H), 1'320'000);  // 1.2 x 1.1
  // Protection 0: the price in force.
  EXPECT_EQ(*LockedPrice(h, Tier::kStandard, 0, 0, 3 * H), 4'800'000);
}

// --- metering --------------------------------------------------------------------

TEST(MeterInterval, SplitsAtPeriodsAndAtTheLockEnd) {
  const DynamicPricer p = Scenario(6 * H);
  // 2 GPUs, standard, job started at 2h with a 1.5 h lock (ceiling 4.4), metered [2.5h, 4.5h).
  const PriceLock lock = *Lock(p.history(), Tier::kStandard, 2 * H, 5400);
  auto m = MeterInterval(p.history(), Tier::kStandard, &lock, 2000, 2 * H + 1800, 4 * H + 1800);
  ASSERT_TRUE(m.has_value()) << m.error().message;
  // [2.5h,3h) period 2 at 4.4: 2 x 0.5 x 4.4 = 4.4
  // [3h,3.5h) period 3 locked min(4.8, 4.4) = 4.4: 4.4
  // [3.5h,4h) period 3 after the lock: 4.8: 4.8
  // [4h,4.5h) period 4 at 4.4: 4.4
  const std::vector<ChargeLine> want = {
      {2 * H + 1800, 3 * H, 2, true, 4'400'000, 4'400'000, 4'400'000},
      {3 * H, 3 * H + 1800, 3, true, 4'400'000, 4'400'000, 4'400'000},
      {3 * H + 1800, 4 * H, 3, true, 4'800'000, 4'800'000, 4'800'000},
      {4 * H, 4 * H + 1800, 4, true, 4'400'000, 4'400'000, 4'400'000},
  };
  EXPECT_EQ(m->lines, want);
  EXPECT_EQ(m->total, 18'000'000);
  // In-floor GPUs are metered as guaranteed: 1 GPU x 2 h x 3.2.
  EXPECT_EQ(MeterInterval(p.history(), Tier::kGuaranteed, nullptr, 1000, 2 * H + 1800, 4 * H + 1800)->total, 6'400'000);
  // Past the horizon: an error, not a guess.
  EXPECT_FALSE(MeterInterval(p.history(), Tier::kStandard, nullptr, 1000, 7 * H, 8 * H + 1).has_value());
  EXPECT_FALSE(MeterInterval(p.history(), Tier::kSpot, &lock, 1000, 3 * H, 4 * H).has_value());  // lock of another tier
  EXPECT_EQ(MeterInterval(p.history(), Tier::kStandard, nullptr, 1000, H, H)->total, 0);
}

// --- quotes ------------------------------------------------------------------

TEST(Quote, ExactOverAnnouncedPeriodsAndSaysWhereItGuesses) {
  // At t=2h periods 0..3 are announced (1.0, 1.0, 1.1, 1.2), no protection.
  const DynamicPricer p = Scenario(2 * H);
  ASSERT_EQ(p.history().horizon_s(), 4 * H);
  // 2 GPUs, 1 in floor, [1h, 5h).
  auto q = p.QuoteJob(Tier::kStandard, H, 4 * H, 2000, 1000);
  ASSERT_TRUE(q.has_value()) << q.error().message;
  // Floating GPU: 4.0 + 4.4 + 4.8 + 4.8 (period 4 assumed = last announced) = 18.0
  // In floor: 4 x 3.2 = 12.8. Total 30.8.
  // Upper bound: period 4 at 1.2 + 0.1 = 1.3 -> 5.2: 18.4 + 12.8 = 31.2.
  EXPECT_EQ(q->total, 30'800'000);
  EXPECT_EQ(q->in_floor_total, 12'800'000);
  EXPECT_EQ(q->upper_bound_total, 31'200'000);
  EXPECT_EQ(q->beyond_horizon_s, H);
  EXPECT_EQ(q->horizon_s, 4 * H);
  ASSERT_EQ(q->lines.size(), 4u);
  EXPECT_EQ(q->lines[3], (ChargeLine{4 * H, 5 * H, 4, false, 4'800'000, 4'800'000, 5'200'000}));
  EXPECT_EQ(q->in_floor_lines.size(), 4u);
  // Two periods past the horizon: upper bounds 1.3 and 1.4.
  auto q2 = p.QuoteJob(Tier::kSpot, 4 * H, 2 * H, 1000, 0);
  ASSERT_TRUE(q2.has_value());
  EXPECT_EQ(q2->total, 2'880'000);             // 2 x 1.44
  EXPECT_EQ(q2->upper_bound_total, 3'240'000); // 1.2 x (1.3 + 1.4)
  EXPECT_EQ(q2->beyond_horizon_s, 2 * H);
}

TEST(Quote, PartialPeriodsAndTheLock) {
  // Protection 1.5 h; start 1.5 h (period 1, 4.0) for 2.5 h, 1 GPU, none in floor.
  const DynamicPricer p = Scenario(2 * H, 5400);
  auto q = p.QuoteJob(Tier::kStandard, H + 1800, 2 * H + 1800, 1000, 0);
  ASSERT_TRUE(q.has_value()) << q.error().message;
  // [1.5h,2h) 4.0 -> 2.0;  [2h,3h) period 2 locked min(4.4, 4.0) -> 4.0;
  // [3h, 4h) period 3: lock ends at 3h exactly -> 4.8. Total 10.8.
  EXPECT_EQ(q->lock, (PriceLock{Tier::kStandard, H + 1800, 3 * H, 4'000'000}));
  ASSERT_EQ(q->lines.size(), 3u);
  EXPECT_EQ(q->lines[1].price, 4'000'000);
  EXPECT_EQ(q->lines[2].price, 4'800'000);
  EXPECT_EQ(q->total, 10'800'000);
  EXPECT_EQ(q->beyond_horizon_s, 0);
  EXPECT_EQ(q->upper_bound_total, q->total);
}

TEST(Quote, GuaranteedIsAllInFloorAtTheFixedRate) {
  const DynamicPricer p = Scenario(2 * H);
  auto q = p.QuoteJob(Tier::kGuaranteed, 0, 10 * H, 4000, 4000);
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->total, 128'000'000);  // 4 x 10 x 3.2, however far past the horizon
  EXPECT_EQ(q->upper_bound_total, 128'000'000);
  EXPECT_EQ(q->beyond_horizon_s, 0);
  EXPECT_THAT(p.QuoteJob(Tier::kGuaranteed, 0, H, 4000, 1000).error().message, HasSubstr("inside its tenant's floor"));
  EXPECT_FALSE(p.QuoteJob(Tier::kStandard, 0, H, 1000, 2000).has_value());
  EXPECT_FALSE(p.QuoteJob(Tier::kStandard, -1, H, 1000, 0).has_value());
  EXPECT_FALSE(p.QuoteJob(Tier::kStandard, 0, -1, 1000, 0).has_value());
}

TEST(MarketPrices, RoutesByModel) {
  MarketPrices m(PriceBook::Default(), PriceCurve::Default(), ScenarioConfig());
  ASSERT_TRUE(m.AddPool("H100", 0).has_value());
  ASSERT_TRUE(m.AddPool("T4", 0).has_value());
  EXPECT_FALSE(m.AddPool("T4", 0).has_value());
  ASSERT_TRUE(m.Observe("H100", 0, 1.0).has_value());
  ASSERT_TRUE(m.Observe("T4", 0, 0.0).has_value());
  EXPECT_FALSE(m.Observe("V100", 0, 0.0).has_value());
  ASSERT_TRUE(m.AdvanceTo(H).has_value());
  EXPECT_EQ(*m.PriceAt("H100", Tier::kStandard, 2 * H), 4'400'000);  // 1.1
  EXPECT_EQ(*m.PriceAt("T4", Tier::kStandard, 2 * H), 360'000);      // 0.4 x 0.9
  EXPECT_EQ(m.QuoteJob("T4", Tier::kStandard, 0, H, 1000, 0)->total, 400'000);
  EXPECT_EQ(m.pool("V100"), nullptr);
}

// --- properties ---------------------------------------------------------------

struct Obs {
  std::int64_t dt;
  double u;
};

DynamicPricer RandomPricer(std::int64_t& clock) {
  PricerConfig c;
  c.period_s = *rc::gen::inRange<std::int64_t>(60, 7200);
  c.window_periods = *rc::gen::inRange<std::int64_t>(1, 6);
  c.max_step = *rc::gen::element(0.01, 0.05, 0.1, 0.5);
  c.lead_periods = *rc::gen::inRange<std::int64_t>(1, 5);
  c.protection_s = *rc::gen::inRange<std::int64_t>(0, 20'000);
  const std::int64_t origin = *rc::gen::inRange<std::int64_t>(-100'000, 100'000);
  auto p = DynamicPricer::Make("H100", PriceBook::Default(), PriceCurve::Default(), c, origin);
  RC_ASSERT(p.has_value());
  clock = origin;
  return std::move(*p);
}

RC_GTEST_PROP(DynamicPricer, CappedBoundedAndNeverRewritten, ()) {
  std::int64_t t = 0;
  DynamicPricer p = RandomPricer(t);
  const auto n = *rc::gen::inRange(1, 60);
  std::vector<Announcement> seen;
  for (int i = 0; i < n; ++i) {
    t += *rc::gen::inRange<std::int64_t>(0, 3 * p.config().period_s);
    const double u = *rc::gen::element(0.0, 0.1, 0.5, 0.77, 0.95, 1.0);
    RC_ASSERT(p.Observe(t, u).has_value());
    const auto& e = p.history().entries;
    // Announced prices never change once given.
    RC_ASSERT(e.size() >= seen.size());
    for (std::size_t k = 0; k < seen.size(); ++k) {
      RC_ASSERT(e[k].multiplier_ppm == seen[k].multiplier_ppm);
      RC_ASSERT(e[k].price == seen[k].price);
    }
    seen = e;
    // lead periods known ahead: the current one and lead-1 after it.
    const std::int64_t current = p.history().PeriodOf(t);
    RC_ASSERT(static_cast<std::int64_t>(e.size()) == current + p.config().lead_periods);
  }
  const auto& e = p.history().entries;
  for (std::size_t k = 0; k < e.size(); ++k) {
    RC_ASSERT(e[k].multiplier_ppm >= 500'000);
    RC_ASSERT(e[k].multiplier_ppm <= 2'000'000);
    if (k > 0) RC_ASSERT(std::llabs(e[k].multiplier_ppm - e[k - 1].multiplier_ppm) <= std::llround(p.config().max_step * 1e6));
    RC_ASSERT(e[k].announced_at_s <= e[k].effective_from_s);
    RC_ASSERT(e[k].Price(Tier::kGuaranteed) == 3'200'000);
  }
}

RC_GTEST_PROP(Quote, EqualsTheMeterWhereAnnounced, ()) {
  std::int64_t t = 0;
  DynamicPricer p = RandomPricer(t);
  const std::int64_t origin = t;
  for (int i = 0, n = *rc::gen::inRange(1, 30); i < n; ++i) {
    t += *rc::gen::inRange<std::int64_t>(0, 2 * p.config().period_s);
    RC_ASSERT(p.Observe(t, *rc::gen::inRange(0, 101) / 100.0).has_value());
  }
  const PriceHistory& h = p.history();
  const std::int64_t start = *rc::gen::inRange<std::int64_t>(origin, h.horizon_s());
  const std::int64_t duration = *rc::gen::inRange<std::int64_t>(0, h.horizon_s() - start + 1);
  const Tier tier = *rc::gen::element(Tier::kStandard, Tier::kSpot, Tier::kInference);
  const std::int64_t milli = *rc::gen::inRange<std::int64_t>(0, 64'001);
  const std::int64_t in_floor = *rc::gen::inRange<std::int64_t>(0, milli + 1);
  auto q = p.QuoteJob(tier, start, duration, milli, in_floor);
  RC_ASSERT(q.has_value());
  RC_ASSERT(q->beyond_horizon_s == 0);
  RC_ASSERT(q->upper_bound_total == q->total);
  const PriceLock lock = *Lock(h, tier, start, p.config().protection_s);
  RC_ASSERT(lock == q->lock);
  auto floating = MeterInterval(h, tier, &lock, milli - in_floor, start, start + duration);
  auto fixed = MeterInterval(h, Tier::kGuaranteed, nullptr, in_floor, start, start + duration);
  RC_ASSERT(floating.has_value());
  RC_ASSERT(fixed.has_value());
  RC_ASSERT(q->total == floating->total + fixed->total);
  // Under the lock no line is above the start price.
  for (const ChargeLine& l : floating->lines) {
    if (l.from_s < lock.until_s) RC_ASSERT(l.price <= lock.ceiling);
  }
}

}  // namespace
}  // namespace tidal::market

// The forecaster (no look-ahead, exact on periodic demand, trend scaling and
// its clamp, week blending, fallback), the autoscaler (lead time before a
// ramp, hysteresis, step size, bounds), forecast error on hand-made and real
// traces (printed for docs/inference.md).
#include "inference/forecast.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace tidal::inference {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kStep = 60;
constexpr int64_t kD = 1440;  // steps per day at one minute

DemandSeries Series(std::vector<double> rate, int64_t step = kStep) {
  return DemandSeries{.name = "t", .step_s = step, .rate = std::move(rate)};
}

// A day of integer-valued minutes with a morning ramp, repeated `days` times.
std::vector<double> Periodic(int days) {
  std::vector<double> r;
  for (int d = 0; d < days; ++d)
    for (int64_t i = 0; i < kD; ++i) r.push_back(static_cast<double>(20 + (i * 7) % 13 + (i >= 480 && i < 1200 ? 80 : 0)));
  return r;
}

SeasonalForecaster Fed(const std::vector<double>& r, size_t upto, ForecastConfig cfg = {}) {
  SeasonalForecaster f(kStep, cfg);
  for (size_t i = 0; i <= upto; ++i) EXPECT_TRUE(f.Observe(static_cast<int64_t>(i) * kStep, r[i]).has_value());
  return f;
}

TEST(Forecaster, NeverLooksAhead) {
  const DemandSeries real = Series(Periodic(3));
  for (size_t now : {size_t{100}, size_t{kD - 1}, size_t{kD + 300}, size_t{2 * kD + 10}}) {
    DemandSeries corrupt = real;
    for (size_t i = now + 1; i < corrupt.rate.size(); ++i) corrupt.rate[i] = i % 2 ? 1e9 : 0;
    for (int64_t h : {int64_t{60}, int64_t{1800}, int64_t{7200}, int64_t{86400}}) {
      EXPECT_EQ(*ForecastAt(real, now, h), *ForecastAt(corrupt, now, h)) << now << " +" << h;
    }
  }
}

TEST(Forecaster, PeriodicDemandIsExactAfterOneDay) {
  const std::vector<double> r = Periodic(3);
  for (size_t now : {size_t{kD - 1}, size_t{kD}, size_t{kD + 500}, size_t{2 * kD + 77}}) {
    const SeasonalForecaster f = Fed(r, now);
    for (size_t i = now + 1; i < r.size() && i <= now + kD; i += 7) {
      EXPECT_EQ(*f.Forecast(static_cast<int64_t>(i) * kStep), r[i]) << now << " -> " << i;
    }
  }
  // With a week behind it the blend of equal values is still exact.
  const std::vector<double> w = Periodic(9);
  const SeasonalForecaster g = Fed(w, 8 * kD + 3);
  for (size_t i = 8 * kD + 4; i < w.size(); i += 11) EXPECT_EQ(*g.Forecast(static_cast<int64_t>(i) * kStep), w[i]);
}

TEST(Forecaster, LastValueUntilADayOfHistory) {
  std::vector<double> r = {5, 7, 9};
  const SeasonalForecaster f = Fed(r, 2);
  EXPECT_EQ(*f.Forecast(3 * kStep), 9);
  EXPECT_EQ(*f.Forecast(kD * kStep - kStep), 9);  // index 1439: a day back is -1
  EXPECT_EQ(*f.Forecast(kD * kStep), 5);           // index 1440: a day back is 0, known
}

TEST(Forecaster, RecentTrendScalesTheBase) {
  // Day 1 at 10, day 2 at 15: two hours into day 2 the last hour runs 15/10 = 1.5x its base.
  std::vector<double> r(kD, 10);
  r.resize(2 * kD, 15);
  const SeasonalForecaster f = Fed(r, kD + 120);
  EXPECT_DOUBLE_EQ(*f.Forecast((kD + 150) * kStep), 15);  // base 10 x 1.5
  // Day 2 at 50: 5x, clamped to trend_max 2 -> 20.
  std::vector<double> jump(kD, 10);
  jump.resize(2 * kD, 50);
  EXPECT_DOUBLE_EQ(*Fed(jump, kD + 120).Forecast((kD + 150) * kStep), 20);
  // Day 2 at 1: 0.1x, clamped to trend_min 0.5 -> 5.
  std::vector<double> drop(kD, 10);
  drop.resize(2 * kD, 1);
  EXPECT_DOUBLE_EQ(*Fed(drop, kD + 120).Forecast((kD + 150) * kStep), 5);
}

TEST(Forecaster, WeekBlendByHand) {
  // Day 0 at 100, days 1-7 at 50. On day 7: a day back 50, a week back 100,
  // base = 50 + 0.5 x (100 - 50) = 75 (trend pinned to 1 to see the base).
  std::vector<double> r(kD, 100);
  r.resize(8 * kD, 50);
  ForecastConfig cfg;
  cfg.trend_min = cfg.trend_max = 1;
  const SeasonalForecaster f = Fed(r, 7 * kD + 60, cfg);
  EXPECT_EQ(*f.Forecast((7 * kD + 90) * kStep), 75);
  cfg.week_weight = 0.25;  // 50 + 0.25 x 50
  EXPECT_EQ(*Fed(r, 7 * kD + 60, cfg).Forecast((7 * kD + 90) * kStep), 62.5);
}

TEST(Forecaster, SmoothedBaseByHand) {
  // Day 0 at 10 but one minute of 40; a one-step half-width averages 3 minutes.
  std::vector<double> r(2 * kD, 10);
  r[100] = 40;
  ForecastConfig cfg;
  cfg.base_smooth_s = 60;
  cfg.trend_min = cfg.trend_max = 1;
  const SeasonalForecaster f = Fed(r, kD + 50, cfg);
  EXPECT_EQ(*f.Forecast((kD + 99) * kStep), 20);   // (10 + 10 + 40) / 3
  EXPECT_EQ(*f.Forecast((kD + 101) * kStep), 20);  // (40 + 10 + 10) / 3
  EXPECT_EQ(*f.Forecast((kD + 102) * kStep), 10);
  // The window never reaches past the last observation: at n = 100 the
  // one-day-ahead point 100 averages x[99], x[100] only.
  EXPECT_EQ(*Fed(r, 100, cfg).Forecast((kD + 100) * kStep), 25);
}

TEST(Forecaster, BadObservationsAreErrors) {
  SeasonalForecaster f(kStep);
  EXPECT_FALSE(f.Forecast(0).has_value());
  ASSERT_TRUE(f.Observe(600, 1).has_value());
  auto gap = f.Observe(720, 1);
  ASSERT_FALSE(gap.has_value());
  EXPECT_THAT(gap.error().message, HasSubstr("next step starts at t=660 s"));
  EXPECT_FALSE(f.Observe(600, 1).has_value());
  EXPECT_FALSE(f.Observe(660, -1).has_value());
  EXPECT_FALSE(f.Observe(660, std::nan("")).has_value());
  EXPECT_FALSE(f.Forecast(0).has_value());  // before the first observation
}

TEST(EvaluateForecast, OneStepChangeByHand) {
  // Day 1 at 10, day 2 at 20, lead one step. The forecast for the first minute
  // of day 2 is 10 (no trend yet): error 0.5, under-forecast. From then on the
  // last hour's 20/10 = 2 (the clamp) gives 20 exactly.
  std::vector<double> r(kD, 10);
  r.resize(2 * kD, 20);
  auto rep = EvaluateForecast(Series(r), kStep, 0.1);
  ASSERT_TRUE(rep.has_value()) << rep.error().message;
  EXPECT_EQ(rep->points, static_cast<size_t>(kD));
  EXPECT_DOUBLE_EQ(rep->mape, 0.5 / kD);
  EXPECT_DOUBLE_EQ(rep->bias, -0.5 / kD);
  EXPECT_DOUBLE_EQ(rep->under_share, 1.0 / kD);
  EXPECT_EQ(rep->p50, 0);
  EXPECT_EQ(rep->p99, 0);
  auto periodic = EvaluateForecast(Series(Periodic(3)), 1800, 0);
  ASSERT_TRUE(periodic.has_value());
  EXPECT_EQ(periodic->points, static_cast<size_t>(2 * kD));
  EXPECT_EQ(periodic->mape, 0);
  EXPECT_FALSE(EvaluateForecast(Series(r), 90, 0).has_value());  // not a multiple of the step
}

// Night 10 rps, 08:00-20:00 100 rps, two days; goodput 10, no headroom: 1 or 10 replicas.
std::vector<double> Ramp() {
  std::vector<double> r;
  for (int d = 0; d < 2; ++d)
    for (int64_t i = 0; i < kD; ++i) r.push_back(i >= 480 && i < 1200 ? 100 : 10);
  return r;
}

std::vector<int> Decisions(const std::vector<double>& r, AutoscalerConfig cfg) {
  auto a = Autoscaler::Create(cfg, kStep);
  EXPECT_TRUE(a.has_value());
  std::vector<int> out;
  for (size_t n = 0; n < r.size(); ++n) out.push_back(*a->Step(static_cast<int64_t>(n) * kStep, r[n]));
  return out;
}

AutoscalerConfig Cfg(int64_t lead_s) {
  return AutoscalerConfig{.goodput_rps = 10, .headroom = 0, .min_replicas = 1, .lead_s = lead_s, .cooldown_s = 1800};
}

TEST(Autoscaler, LeadTimeScalesOutBeforeTheRamp) {
  const std::vector<double> r = Ramp();
  const size_t ramp = kD + 480;  // day 2, 08:00
  const std::vector<int> ahead = Decisions(r, Cfg(1800));
  EXPECT_EQ(ahead[ramp - 31], 1);
  EXPECT_EQ(ahead[ramp - 30], 10);  // 07:30: capacity for 08:00 is there 30 minutes early
  const std::vector<int> reactive = Decisions(r, Cfg(0));
  EXPECT_EQ(reactive[ramp - 1], 1);  // the 08:00 minute runs on 1 replica
  EXPECT_EQ(reactive[ramp], 10);
  // Day 1 has no history: the forecaster's last value cannot see the ramp either.
  EXPECT_EQ(ahead[479], 1);
  EXPECT_EQ(ahead[480], 10);
}

TEST(Autoscaler, ScalesInOnlyAfterACoolDown) {
  const std::vector<int> d = Decisions(Ramp(), Cfg(1800));
  // 20:00 on day 1 (index 1200) demand drops; every step of 20:00-20:29 must be low first.
  EXPECT_EQ(d[1200], 10);
  EXPECT_EQ(d[1228], 10);
  EXPECT_EQ(d[1229], 1);
  // Demand that flaps every 10 minutes never lets it scale in.
  std::vector<double> flap;
  for (int i = 0; i < 240; ++i) flap.push_back((i / 10) % 2 ? 10 : 100);
  const std::vector<int> f = Decisions(flap, Cfg(0));
  for (size_t i = 0; i < f.size(); ++i) EXPECT_EQ(f[i], 10) << i;
}

TEST(Autoscaler, StepsOfStepReplicas) {
  AutoscalerConfig cfg = Cfg(0);
  cfg.step_replicas = 4;
  cfg.cooldown_s = 120;
  std::vector<double> r(5, 95);  // need 10: 1 + ceil(9/4) x 4 = 13
  r.resize(10, 55);              // need 6: 13 - floor(7/4) x 4 = 9
  r.resize(15, 0);               // need 1: 9 - floor(8/4) x 4 = 1
  const std::vector<int> d = Decisions(r, cfg);
  EXPECT_EQ(d[0], 13);
  EXPECT_EQ(d[5], 13);  // cool-down: two low steps needed
  EXPECT_EQ(d[6], 9);
  EXPECT_EQ(d[11], 1);
  cfg.max_replicas = 11;
  EXPECT_EQ(Decisions({1000}, cfg)[0], 11);
}

// goodput 1, no cool-down, no minimum: the margin tests' autoscaler.
AutoscalerConfig MarginConfig(int64_t lead_s, double headroom, double q) {
  AutoscalerConfig cfg;
  cfg.goodput_rps = 1;
  cfg.headroom = headroom;
  cfg.min_replicas = 0;
  cfg.lead_s = lead_s;
  cfg.cooldown_s = 0;
  cfg.error_quantile = q;
  return cfg;
}

// error_quantile: lead one step, no day of history (forecast = last value),
// goodput 1, headroom 0.1, no cool-down.
//  t=0   obs 10: no ratio yet, margin 1; forecast for 60 = 10 -> ceil(11) = 11.
//  t=60  obs 12: 12 / 10 (made at 0) = 1.2, margin 1.2; forecast 12 x 1.2 =
//        14.4 -> ceil(15.84) = 16 (reactive ceil(13.2) = 14).
//  t=120 obs 12: 12 / 12 = 1.0; ratios {1.2, 1.0}: q 0.9 -> rank ceil(1.8) = 2
//        -> 1.2 -> 16; q 0.5 -> rank 1 -> 1.0 -> 14.
TEST(Autoscaler, ErrorQuantileMarginByHand) {
  for (const auto& [q, last] : std::vector<std::pair<double, int>>{{0.9, 16}, {0.5, 14}}) {
    auto a = Autoscaler::Create(MarginConfig(60, 0.1, q), 60);
    ASSERT_TRUE(a);
    EXPECT_EQ(*a->Step(0, 10), 11);
    EXPECT_DOUBLE_EQ(a->last_margin(), 1.0);
    EXPECT_EQ(*a->Step(60, 12), 16);
    EXPECT_DOUBLE_EQ(a->last_margin(), 1.2);
    EXPECT_EQ(a->last_reactive_need(), 14);
    EXPECT_EQ(*a->Step(120, 12), last) << q;
  }
  // Capped: the same run with error_margin_max 1.1 -> 12 x 1.1 = 13.2 ->
  // ceil(14.52) = 15 at t=60.
  AutoscalerConfig capped = MarginConfig(60, 0.1, 0.9);
  capped.error_margin_max = 1.1;
  auto c = Autoscaler::Create(capped, 60);
  ASSERT_TRUE(c);
  EXPECT_EQ(*c->Step(0, 10), 11);
  EXPECT_EQ(*c->Step(60, 12), 15);
  EXPECT_DOUBLE_EQ(c->last_margin(), 1.1);
  AutoscalerConfig bad;
  bad.error_quantile = 1.5;
  EXPECT_FALSE(Autoscaler::Create(bad, 60));
}

// error_of_window_max, lead two steps, no day of history (forecast = last
// value), goodput 1, headroom 0, no cool-down, quantile 1 (the largest).
//  t=0   obs 10: window forecast max over (0, 120] = 10 -> need 10; made for 120.
//  t=60  obs 20: forecast 20 -> 20; made for 180: 20.
//  t=120 obs 10: the window (0, 120] held 20 and 10 -> max 20 vs 10 made at 0:
//        ratio 2 (the point error would be 10 / 10 = 1); margin 2; forecast
//        10 x 2 = 20 -> 20.
TEST(Autoscaler, ErrorOfTheWindowMaxByHand) {
  AutoscalerConfig cfg = MarginConfig(120, 0, 1);
  cfg.error_of_window_max = true;
  auto a = Autoscaler::Create(cfg, 60);
  ASSERT_TRUE(a);
  EXPECT_EQ(*a->Step(0, 10), 10);
  EXPECT_EQ(*a->Step(60, 20), 20);
  EXPECT_EQ(*a->Step(120, 10), 20);
  EXPECT_DOUBLE_EQ(a->last_margin(), 2.0);
  cfg.error_of_window_max = false;
  auto p = Autoscaler::Create(cfg, 60);
  ASSERT_TRUE(p);
  EXPECT_EQ(*p->Step(0, 10), 10);
  EXPECT_EQ(*p->Step(60, 20), 20);
  EXPECT_EQ(*p->Step(120, 10), 10);
  EXPECT_DOUBLE_EQ(p->last_margin(), 1.0);
}

TEST(Autoscaler, RejectsBadConfig) {
  AutoscalerConfig bad = Cfg(0);
  bad.goodput_rps = 0;
  EXPECT_FALSE(Autoscaler::Create(bad, kStep).has_value());
  bad = Cfg(0);
  bad.step_replicas = 0;
  EXPECT_FALSE(Autoscaler::Create(bad, kStep).has_value());
  bad = Cfg(0);
  bad.max_replicas = 0;
  EXPECT_FALSE(Autoscaler::Create(bad, kStep).has_value());
}

TEST(Autoscaler, LeadTimeMeetsMoreMinutesOnTheRamp) {
  const DemandSeries s = Series(Ramp());
  auto ahead = ReplayAutoscaler(s, Cfg(1800));
  auto reactive = ReplayAutoscaler(s, Cfg(0));
  ASSERT_TRUE(ahead && reactive);
  // Reactive misses the first minute of each ramp (2 of 2879); ahead misses only day 1's.
  EXPECT_EQ(reactive->slo_met_share, 1 - 2.0 / 2879);
  EXPECT_EQ(ahead->slo_met_share, 1 - 1.0 / 2879);
  EXPECT_GT(ahead->mean_replicas, reactive->mean_replicas);
}

// The figures quoted in docs/inference.md.
TEST(RealTraces, ForecastErrorAtThirtyMinutes) {
  const std::string dir = std::string(TIDAL_SHARED_DIR) + "/traces/inference/";
  struct Case {
    const char* name;
    const char* path;
    const char* format;
  };
  for (const Case& c : {Case{"azure code", "azure-llm-2024-week/azure2024_code_1week_per_minute.csv", "azure2024"},
                        Case{"azure conv", "azure-llm-2024-week/azure2024_conv_1week_per_minute.csv", "azure2024"},
                        Case{"servegen m-large", "alibaba-servegen/servegen_m-large_10min.csv", "servegen"}}) {
    auto s = ReadDemandTrace(dir + c.path, c.format);
    ASSERT_TRUE(s.has_value()) << s.error().message;
    auto r = EvaluateForecast(*s, 1800, 0.1);
    ASSERT_TRUE(r.has_value()) << r.error().message;
    const DemandSeries peak = ScaleToPeak(*s, 200);
    auto ahead = ReplayAutoscaler(peak, AutoscalerConfig{.goodput_rps = 10, .lead_s = 1800});
    auto reactive = ReplayAutoscaler(peak, AutoscalerConfig{.goodput_rps = 10, .lead_s = 0});
    ASSERT_TRUE(ahead && reactive);
    std::printf("%-17s lead 30 min: points %zu MAPE %.3f p50 %.3f p90 %.3f p99 %.3f bias %+.3f under>10%% %.4f | "
                "peak 200 rps, goodput 10: SLO met %.4f (reactive %.4f), mean replicas %.2f (reactive %.2f)\n",
                c.name, r->points, r->mape, r->p50, r->p90, r->p99, r->bias, r->under_share, ahead->slo_met_share,
                reactive->slo_met_share, ahead->mean_replicas, reactive->mean_replicas);
    EXPECT_LT(r->mape, 0.5) << c.name;
    ForecastConfig smooth;
    smooth.base_smooth_s = 600;
    auto sm = EvaluateForecast(*s, 1800, 0.1, smooth);
    ASSERT_TRUE(sm.has_value());
    std::printf("%-17s   with base_smooth_s 600: MAPE %.3f p50 %.3f p90 %.3f p99 %.3f bias %+.3f under>10%% %.4f\n",
                "", sm->mape, sm->p50, sm->p90, sm->p99, sm->bias, sm->under_share);
    EXPECT_LT(sm->mape, r->mape) << c.name;
    EXPECT_GE(ahead->slo_met_share, reactive->slo_met_share) << c.name;
  }
}

}  // namespace
}  // namespace tidal::inference

// The autoscaler's forecast-error margin against a reference written from
// its documentation (forecast.h), step by step on a noisy periodic series
// with a short "day" (10 steps), so both forecaster regimes, the error
// window's edge, the time-of-day window and the nearest rank are all
// reached. The reference uses the forecaster itself only for the forecasts
// (tested on its own in forecast_test.cc).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "inference/forecast.h"

namespace tidal::inference {
namespace {

constexpr int64_t kStep = 60;

std::vector<double> Series(int n, double scale) {
  std::vector<double> x;
  uint32_t s = 12345;
  for (int i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    const double noise = 0.7 + 0.6 * static_cast<double>(s >> 8) / static_cast<double>(1u << 24);
    // Zero now and then: a forecast of 0 gives no ratio.
    x.push_back(i % 13 == 5 ? 0.0 : scale * (20 + 10 * std::sin(i * 0.63)) * noise);
  }
  return x;
}

struct Ref {
  int64_t t;
  double f;       // the point forecast made for t (lead before), or the window max
  bool seasonal;
};

void Check(const AutoscalerConfig& cfg, const char* label, double scale = 1) {
  auto a = Autoscaler::Create(cfg, kStep);
  ASSERT_TRUE(a) << a.error().message;
  SeasonalForecaster fc(kStep, cfg.forecast);
  const std::vector<double> x = Series(80, scale);
  const int64_t day = cfg.forecast.day_s;
  std::vector<Ref> made;                                  // forecasts made, by target time
  std::vector<std::pair<int64_t, std::pair<double, bool>>> ratios;  // (t, (ratio, seasonal))
  int above_one = 0, seasonal_above_one = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const int64_t t = static_cast<int64_t>(i) * kStep;
    ASSERT_TRUE(fc.Observe(t, x[i]));
    // The ratio for this step, if a forecast was made for it.
    for (const Ref& m : made) {
      if (m.t != t || !(m.f > 0)) continue;
      double actual = x[i];
      if (cfg.error_of_window_max)
        for (int64_t u = t - cfg.lead_s + kStep; u <= t; u += kStep) actual = std::max(actual, x[static_cast<size_t>(u / kStep)]);
      ratios.push_back({t, {actual / m.f, m.seasonal}});
    }
    const bool seasonal_now = t + cfg.lead_s - day >= 0;
    const int64_t at = t + cfg.lead_s - day;
    std::vector<double> r;
    for (const auto& [u, v] : ratios) {
      if (u <= t - cfg.error_window_s || v.second != seasonal_now) continue;
      if (cfg.error_tod_s > 0 && !((u >= at - cfg.error_tod_s && u <= at + cfg.error_tod_s) || u > t - cfg.error_tod_s)) continue;
      r.push_back(v.first);
    }
    bool any_ratio = false;
    for (const auto& [u, v] : ratios) any_ratio = any_ratio || u > t - cfg.error_window_s;
    double margin = 1;
    if (any_ratio) {
      if (r.empty()) r.push_back(1.0);
      std::sort(r.begin(), r.end());
      const size_t k = std::min(r.size() - 1, static_cast<size_t>(std::max(0.0, std::ceil(cfg.error_quantile * r.size()) - 1)));
      margin = std::clamp(r[k], 1.0, cfg.error_margin_max);
    }
    ASSERT_TRUE(a->Step(t, x[i]));
    EXPECT_NEAR(a->last_margin(), margin, 1e-12) << label << " at step " << i;
    above_one += margin > 1;
    seasonal_above_one += margin > 1 && seasonal_now;
    // What the autoscaler records for t + lead.
    double f = *fc.Forecast(t + cfg.lead_s);
    if (cfg.error_of_window_max) f = *fc.MaxForecast(t + kStep, t + cfg.lead_s);
    made.push_back({t + cfg.lead_s, f, seasonal_now});
  }
  // Not vacuous: the margin is above 1 often, in both regimes.
  EXPECT_GE(above_one, 10) << label;
  EXPECT_GE(seasonal_above_one, 5) << label;
}

AutoscalerConfig Base() {
  AutoscalerConfig c;
  c.goodput_rps = 1;
  c.headroom = 0.1;
  c.min_replicas = 0;
  c.lead_s = 2 * kStep;
  c.cooldown_s = 0;
  c.error_quantile = 0.8;
  c.error_window_s = 15 * kStep;
  c.forecast.day_s = 10 * kStep;
  c.forecast.week_s = 70 * kStep;
  c.forecast.trend_window_s = 3 * kStep;
  return c;
}

TEST(AutoscalerMargin, PointErrorsMatchTheReference) {
  Check(Base(), "point");
  Check(Base(), "rates below 1 rps", 0.04);  // forecasts in (0, 1) count too
}

TEST(AutoscalerMargin, TimeOfDayWindowMatchesTheReference) {
  AutoscalerConfig c = Base();
  c.error_tod_s = 2 * kStep;
  Check(c, "tod");
}

// The same-time-of-day window and the recent one overlap (a wide window),
// or the recent one starts first (a lead longer than the day).
TEST(AutoscalerMargin, OverlappingTimeOfDayWindowsMatchTheReference) {
  AutoscalerConfig c = Base();
  c.error_tod_s = 5 * kStep;
  Check(c, "overlapping");
  c.error_tod_s = 2 * kStep;
  c.lead_s = 12 * kStep;
  c.error_window_s = 30 * kStep;
  Check(c, "lead over a day");
}

TEST(AutoscalerMargin, WindowMaxErrorsMatchTheReference) {
  AutoscalerConfig c = Base();
  c.error_of_window_max = true;
  c.error_tod_s = kStep;
  Check(c, "window-max");
}

TEST(AutoscalerMargin, CappedAndHighQuantileMatchTheReference) {
  AutoscalerConfig c = Base();
  c.error_quantile = 1.0;
  c.error_margin_max = 1.3;
  Check(c, "capped");
  c.error_quantile = 0.5;
  c.error_margin_max = std::numeric_limits<double>::infinity();
  c.error_window_s = 4 * kStep;
  Check(c, "median, short window");
}

}  // namespace
}  // namespace tidal::inference

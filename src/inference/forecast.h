// Forecast-driven autoscaling of an inference service.
//
// SeasonalForecaster knows only what it has been fed (Observe), in time order:
// it keeps no reference to a series, so it cannot look ahead. Its forecast for
// a step at index i, with n the last observed index:
//   base(i)  = x[i - kD] for the smallest k >= 1 with i - kD <= n   (same time a day back;
//              with base_smooth_s, the mean of x within that many seconds of it, up to n)
//              blended with x[i - kW] (same time a week back) when that exists:
//              base = day + week_weight x (week - day)
//   trend    = sum of x over the last trend_window / sum of base() over the same
//              steps, clamped to [trend_min, trend_max] (1 when no base exists there)
//   forecast = base(i) x trend,   or x[n] ("last value") while i - D < 0.
//
// Autoscaler: each step observes the demand and returns the replica target
//   desired = max(ReplicasNeeded(max forecast over (t, t + lead]), ReplicasNeeded(observed))
// (forecasts scaled by the error margin when error_quantile > 0), scaling
// out at once and in only to the largest desired of the last cooldown_s
// (so only after demand has been lower for a whole cool-down), and changing the
// replica count only in multiples of step_replicas.
#pragma once

#include <climits>
#include <cstdint>
#include <deque>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "common/result.h"
#include "inference/demand.h"

namespace tidal::inference {

struct ForecastConfig {
  int64_t day_s = 86400;
  int64_t week_s = 7 * 86400;
  double week_weight = 0.5;
  int64_t trend_window_s = 3600;
  double trend_min = 0.5;
  double trend_max = 2.0;
  // Half-width of a mean taken around the day- and week-back points (0: the
  // points themselves). Smoothing trades exactness on periodic demand for less
  // per-minute noise copied from yesterday.
  int64_t base_smooth_s = 0;
};

class SeasonalForecaster {
 public:
  explicit SeasonalForecaster(int64_t step_s, ForecastConfig cfg = {});

  // The rate of the step that starts at t_s. The first call fixes the start;
  // each later one must be exactly one step after the one before.
  Status Observe(int64_t t_s, double rate);
  // The forecast for the step starting at t_s (at or after the start).
  Result<double> Forecast(int64_t t_s) const;
  // The largest forecast over the steps starting in [t0_s, t1_s].
  Result<double> MaxForecast(int64_t t0_s, int64_t t1_s) const;

  size_t observed() const { return x_.size(); }

 private:
  Result<int64_t> Index(int64_t t_s) const;
  double Base(int64_t i, bool& have) const;
  double Trend() const;
  double At(int64_t i, double trend) const;

  int64_t step_s_;
  ForecastConfig cfg_;
  int64_t start_s_ = 0;
  std::vector<double> x_;
};

// The forecast for s's step now_index + horizon_s/step_s made from
// s.rate[0..now_index] only.
Result<double> ForecastAt(const DemandSeries& s, size_t now_index, int64_t horizon_s, const ForecastConfig& cfg = {});

// Forecast error over a whole trace at one lead: the forecast made after
// observing step n, for step n + lead/step, against what happened there.
// Targets before warmup_s (default: the first day, where the forecaster has
// only "last value") and targets with a zero actual rate are not scored.
struct ForecastReport {
  int64_t lead_s = 0;
  size_t points = 0;        // scored targets
  size_t zero_actual = 0;   // targets skipped because the actual rate was 0
  double mape = 0;          // mean |f - a| / a
  double p50 = 0, p90 = 0, p99 = 0;  // of |f - a| / a, nearest rank
  double bias = 0;          // mean (f - a) / a
  double under_share = 0;   // share of targets with f x (1 + headroom) < a
};
Result<ForecastReport> EvaluateForecast(const DemandSeries& s, int64_t lead_s, double headroom,
                                        const ForecastConfig& cfg = {}, int64_t warmup_s = 86400);

struct AutoscalerConfig {
  double goodput_rps = 1;
  double headroom = 0.1;
  int min_replicas = 1;
  int max_replicas = INT_MAX;
  int64_t lead_s = 1800;      // 0: reactive only
  int64_t cooldown_s = 1800;
  int step_replicas = 1;
  // Forecast-error margin: > 0 scales every forecast by this quantile of
  // actual / forecast over the last error_window_s (each step's actual
  // against the forecast made lead_s before it), when that exceeds 1. The
  // forecaster's own errors so set the safety margin (Autopilot-style
  // percentile sizing); 0: off.
  double error_quantile = 0;
  int64_t error_window_s = 86400;
  // > 0: the quantile is taken only over the errors at the same time of day
  // a day before (+- this many seconds around t + lead) and over the last
  // this many seconds, so the margin is large where the forecast erred
  // yesterday (ramps) and small elsewhere.
  int64_t error_tod_s = 0;
  // The error measured on what capacity is sized by: the largest actual over
  // (t, t + lead] against the largest forecast made at t for it, rather than
  // the actual at t + lead against the point forecast for it. Window maxima
  // carry the ramps but not the minute-to-minute noise (which the headroom
  // is for).
  bool error_of_window_max = false;
  // The margin is at most this (a forecast near zero makes the error ratio
  // huge); unbounded by default.
  double error_margin_max = std::numeric_limits<double>::infinity();
  ForecastConfig forecast;
};

class Autoscaler {
 public:
  static Result<Autoscaler> Create(const AutoscalerConfig& cfg, int64_t step_s);

  // Observes the demand of the step starting at t_s and returns the replica
  // count to run from the next step on.
  Result<int> Step(int64_t t_s, double observed_rps);

  int replicas() const { return replicas_; }
  int last_forecast_need() const { return forecast_need_; }
  int last_reactive_need() const { return reactive_need_; }
  double last_margin() const { return margin_; }

 private:
  Autoscaler(const AutoscalerConfig& cfg, int64_t step_s);
  bool Seasonal(int64_t t_s) const;

  AutoscalerConfig cfg_;
  int64_t step_s_;
  SeasonalForecaster forecaster_;
  std::deque<std::pair<int64_t, int>> window_;  // (t, desired) over the last cooldown_s
  int replicas_;
  int forecast_need_ = 0;
  int reactive_need_ = 0;
  // error_quantile: forecasts made for later steps, and actual / forecast
  // ratios of the last error_window_s.
  // The forecaster has two regimes: "last value" until it has a day of
  // history, seasonal after; errors of one do not size the margin of the
  // other (the cold start's large errors would inflate the seasonal margin
  // for a whole error window).
  struct Made {
    int64_t t = 0;
    double value = 0;
    bool seasonal = false;
  };
  std::deque<Made> made_, ratios_;  // ratios_: value = actual / forecast
  std::optional<int64_t> start_s_;
  std::deque<std::pair<int64_t, double>> observed_;  // the last lead_s
  double margin_ = 1;
};

// Replays a series through an Autoscaler (the count decided at step n serves
// step n+1) and scores it as DESIGN.md defines SLO minutes met: the share of
// steps in which replicas x goodput >= demand.
struct AutoscaleReport {
  size_t steps = 0;
  double slo_met_share = 0;
  double mean_replicas = 0;
  int max_replicas = 0;
  double replica_hours = 0;
};
Result<AutoscaleReport> ReplayAutoscaler(const DemandSeries& s, const AutoscalerConfig& cfg);

}  // namespace tidal::inference

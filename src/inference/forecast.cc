#include "inference/forecast.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "inference/service.h"

namespace tidal::inference {

SeasonalForecaster::SeasonalForecaster(int64_t step_s, ForecastConfig cfg) : step_s_(step_s), cfg_(cfg) {}

Status SeasonalForecaster::Observe(int64_t t_s, double rate) {
  if (step_s_ <= 0) return MakeError(ErrorCode::kInvalidArgument, "forecaster: step {} s must be positive", step_s_);
  if (!std::isfinite(rate) || rate < 0) {
    return MakeError(ErrorCode::kInvalidArgument, "forecaster: observed rate {} at t={} s must be finite and >= 0", rate,
                     t_s);
  }
  if (x_.empty()) {
    start_s_ = t_s;
  } else if (t_s != start_s_ + static_cast<int64_t>(x_.size()) * step_s_) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "forecaster: observation at t={} s, but the next step starts at t={} s; observe every step once, "
                     "in order", t_s, start_s_ + static_cast<int64_t>(x_.size()) * step_s_);
  }
  x_.push_back(rate);
  return Ok();
}

Result<int64_t> SeasonalForecaster::Index(int64_t t_s) const {
  if (x_.empty()) return MakeError(ErrorCode::kFailedPrecondition, "forecaster: nothing observed yet");
  if (t_s < start_s_) {
    return MakeError(ErrorCode::kInvalidArgument, "forecaster: t={} s is before the first observation (t={} s)", t_s,
                     start_s_);
  }
  return (t_s - start_s_) / step_s_;
}

// Same time a day back (and a week back), stepping back whole periods until
// the history has it; `have` is false when not even a day back exists.
double SeasonalForecaster::Base(int64_t i, bool& have) const {
  const int64_t n = static_cast<int64_t>(x_.size()) - 1;
  auto back = [&](int64_t period) -> int64_t {
    if (period <= 0) return -1;
    const int64_t k = std::max<int64_t>(1, (i - n + period - 1) / period);
    return i - k * period;
  };
  const int64_t half = cfg_.base_smooth_s / step_s_;
  auto value = [&](int64_t j) {
    if (half == 0) return x_[static_cast<size_t>(j)];
    const int64_t lo = std::max<int64_t>(0, j - half), hi = std::min(n, j + half);
    double sum = 0;
    for (int64_t k = lo; k <= hi; ++k) sum += x_[static_cast<size_t>(k)];
    return sum / static_cast<double>(hi - lo + 1);
  };
  const int64_t d = back(cfg_.day_s / step_s_);
  have = d >= 0;
  if (!have) return 0;
  const double day = value(d);
  const int64_t w = back(cfg_.week_s / step_s_);
  if (w < 0 || cfg_.week_weight == 0) return day;
  return day + cfg_.week_weight * (value(w) - day);
}

double SeasonalForecaster::Trend() const {
  const int64_t n = static_cast<int64_t>(x_.size()) - 1;
  const int64_t window = std::max<int64_t>(1, cfg_.trend_window_s / step_s_);
  double obs = 0, base = 0;
  bool any = false;
  for (int64_t j = std::max<int64_t>(0, n - window + 1); j <= n; ++j) {
    bool have = false;
    const double b = Base(j, have);
    if (!have) continue;
    any = true;
    obs += x_[static_cast<size_t>(j)];
    base += b;
  }
  if (!any) return 1;
  if (!(base > 0)) return obs > 0 ? cfg_.trend_max : 1;
  return std::clamp(obs / base, cfg_.trend_min, cfg_.trend_max);
}

double SeasonalForecaster::At(int64_t i, double trend) const {
  bool have = false;
  const double b = Base(i, have);
  return have ? b * trend : x_.back();
}

Result<double> SeasonalForecaster::Forecast(int64_t t_s) const {
  TIDAL_ASSIGN_OR_RETURN(int64_t i, Index(t_s));
  return At(i, Trend());
}

Result<double> SeasonalForecaster::MaxForecast(int64_t t0_s, int64_t t1_s) const {
  TIDAL_ASSIGN_OR_RETURN(int64_t i0, Index(t0_s));
  TIDAL_ASSIGN_OR_RETURN(int64_t i1, Index(std::max(t0_s, t1_s)));
  const double trend = Trend();
  double best = 0;
  for (int64_t i = i0; i <= i1; ++i) best = std::max(best, At(i, trend));
  return best;
}

Result<double> ForecastAt(const DemandSeries& s, size_t now_index, int64_t horizon_s, const ForecastConfig& cfg) {
  if (now_index >= s.rate.size()) {
    return MakeError(ErrorCode::kInvalidArgument, "{}: now index {} is past the series' {} steps", s.name, now_index,
                     s.rate.size());
  }
  SeasonalForecaster f(s.step_s, cfg);
  for (size_t i = 0; i <= now_index; ++i) TIDAL_RETURN_IF_ERROR(f.Observe(static_cast<int64_t>(i) * s.step_s, s.rate[i]));
  return f.Forecast(static_cast<int64_t>(now_index) * s.step_s + horizon_s);
}

Result<ForecastReport> EvaluateForecast(const DemandSeries& s, int64_t lead_s, double headroom,
                                        const ForecastConfig& cfg, int64_t warmup_s) {
  if (s.step_s <= 0 || lead_s <= 0 || lead_s % s.step_s != 0) {
    return MakeError(ErrorCode::kInvalidArgument, "{}: lead {} s must be a positive multiple of the step ({} s)", s.name,
                     lead_s, s.step_s);
  }
  const size_t lead = static_cast<size_t>(lead_s / s.step_s);
  const size_t first = static_cast<size_t>(std::max<int64_t>(0, warmup_s) / s.step_s);
  SeasonalForecaster f(s.step_s, cfg);
  ForecastReport r{.lead_s = lead_s};
  std::vector<double> errs;
  double signed_sum = 0;
  size_t under = 0;
  for (size_t n = 0; n + lead < s.rate.size(); ++n) {
    TIDAL_RETURN_IF_ERROR(f.Observe(static_cast<int64_t>(n) * s.step_s, s.rate[n]));
    const size_t i = n + lead;
    if (i < first) continue;
    const double a = s.rate[i];
    if (!(a > 0)) {
      ++r.zero_actual;
      continue;
    }
    TIDAL_ASSIGN_OR_RETURN(double fc, f.Forecast(static_cast<int64_t>(i) * s.step_s));
    errs.push_back(std::abs(fc - a) / a);
    signed_sum += (fc - a) / a;
    if (fc * (1 + headroom) < a) ++under;
  }
  if (errs.empty()) {
    return MakeError(ErrorCode::kInvalidArgument, "{}: no step to score after the {} s warm-up at lead {} s", s.name,
                     warmup_s, lead_s);
  }
  r.points = errs.size();
  double sum = 0;
  for (double e : errs) sum += e;
  r.mape = sum / static_cast<double>(r.points);
  r.bias = signed_sum / static_cast<double>(r.points);
  r.under_share = static_cast<double>(under) / static_cast<double>(r.points);
  std::sort(errs.begin(), errs.end());
  auto rank = [&](double p) {
    const size_t k = static_cast<size_t>(std::ceil(p * static_cast<double>(errs.size())));
    return errs[std::max<size_t>(k, 1) - 1];
  };
  r.p50 = rank(0.50);
  r.p90 = rank(0.90);
  r.p99 = rank(0.99);
  return r;
}

Autoscaler::Autoscaler(const AutoscalerConfig& cfg, int64_t step_s)
    : cfg_(cfg), step_s_(step_s), forecaster_(step_s, cfg.forecast), replicas_(cfg.min_replicas) {}

Result<Autoscaler> Autoscaler::Create(const AutoscalerConfig& cfg, int64_t step_s) {
  if (step_s <= 0) return MakeError(ErrorCode::kInvalidArgument, "autoscaler: step {} s must be positive", step_s);
  if (!(cfg.goodput_rps > 0)) {
    return MakeError(ErrorCode::kInvalidArgument, "autoscaler: goodput {} rps must be positive", cfg.goodput_rps);
  }
  if (!(cfg.error_quantile >= 0 && cfg.error_quantile <= 1) || cfg.error_window_s < 0) {
    return MakeError(ErrorCode::kInvalidArgument, "autoscaler: error_quantile {} must be in [0, 1] and error_window_s {} >= 0",
                     cfg.error_quantile, cfg.error_window_s);
  }
  if (cfg.min_replicas < 0 || cfg.max_replicas < cfg.min_replicas || cfg.step_replicas < 1 || cfg.lead_s < 0 ||
      cfg.cooldown_s < 0 || !(cfg.headroom >= 0)) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "autoscaler: need 0 <= min_replicas ({}) <= max_replicas ({}), step_replicas ({}) >= 1, lead ({} s) "
                     ">= 0, cooldown ({} s) >= 0, headroom ({}) >= 0",
                     cfg.min_replicas, cfg.max_replicas, cfg.step_replicas, cfg.lead_s, cfg.cooldown_s, cfg.headroom);
  }
  return Autoscaler(cfg, step_s);
}

bool Autoscaler::Seasonal(int64_t t_s) const {
  // The forecast for t + lead has a base a day earlier within the history.
  return start_s_ && t_s + cfg_.lead_s - cfg_.forecast.day_s >= *start_s_;
}

Result<int> Autoscaler::Step(int64_t t_s, double observed_rps) {
  TIDAL_RETURN_IF_ERROR(forecaster_.Observe(t_s, observed_rps));
  if (!start_s_) start_s_ = t_s;
  reactive_need_ = ReplicasNeeded(observed_rps, cfg_.goodput_rps, cfg_.headroom, cfg_.min_replicas);
  forecast_need_ = 0;
  if (cfg_.error_quantile > 0) {
    // This step's actual against the forecast made lead_s ago for it; with
    // error_of_window_max, the largest actual of the window the forecast
    // covered against its largest forecast (what the capacity was sized by).
    observed_.emplace_back(t_s, observed_rps);
    while (!observed_.empty() && observed_.front().first <= t_s - cfg_.lead_s) observed_.pop_front();
    while (!made_.empty() && made_.front().t < t_s) made_.pop_front();
    if (!made_.empty() && made_.front().t == t_s) {
      double actual = observed_rps;
      if (cfg_.error_of_window_max)
        for (const auto& [t, x] : observed_) actual = std::max(actual, x);
      if (made_.front().value > 0) ratios_.push_back({t_s, actual / made_.front().value, made_.front().seasonal});
      made_.pop_front();
    }
    while (!ratios_.empty() && ratios_.front().t <= t_s - cfg_.error_window_s) ratios_.pop_front();
    margin_ = 1;
    if (!ratios_.empty()) {
      std::vector<double> r;
      r.reserve(ratios_.size());
      // With error_tod_s: only the errors at this time of day (the target
      // t + lead, a day earlier, +- error_tod_s) and of the last error_tod_s;
      // always only those of the regime the new forecast is made in.
      const int64_t day = cfg_.forecast.day_s;
      const int64_t at = t_s + cfg_.lead_s - day;
      const bool seasonal = Seasonal(t_s);
      // ratios_ is in time order: the two windows are index ranges (the
      // scan of a day's window per step was most of a step).
      const auto first_after = [&](int64_t t) {
        return static_cast<size_t>(std::partition_point(ratios_.begin(), ratios_.end(), [t](const Made& m) { return m.t <= t; }) -
                                   ratios_.begin());
      };
      const auto take = [&](size_t from, size_t to) {
        for (size_t i = from; i < to; ++i)
          if (ratios_[i].seasonal == seasonal) r.push_back(ratios_[i].value);
      };
      if (cfg_.error_tod_s <= 0) {
        take(0, ratios_.size());
      } else {
        const size_t lo = first_after(at - cfg_.error_tod_s - 1), hi = first_after(at + cfg_.error_tod_s);
        const size_t recent = first_after(t_s - cfg_.error_tod_s);
        if (recent <= lo) {
          take(recent, ratios_.size());
        } else {
          take(lo, hi);
          take(std::max(recent, hi), ratios_.size());
        }
      }
      if (r.empty()) r.push_back(1.0);
      // Nearest rank: the smallest ratio with at least q of them at or below it.
      const double rank = std::ceil(cfg_.error_quantile * static_cast<double>(r.size())) - 1;
      const size_t k = std::min(r.size() - 1, static_cast<size_t>(std::max(0.0, rank)));
      std::nth_element(r.begin(), r.begin() + static_cast<std::ptrdiff_t>(k), r.end());
      margin_ = std::clamp(r[k], 1.0, std::max(1.0, cfg_.error_margin_max));
    }
  }
  if (cfg_.lead_s >= step_s_) {
    TIDAL_ASSIGN_OR_RETURN(double peak, forecaster_.MaxForecast(t_s + step_s_, t_s + cfg_.lead_s));
    forecast_need_ = ReplicasNeeded(peak * margin_, cfg_.goodput_rps, cfg_.headroom, cfg_.min_replicas);
    if (cfg_.error_quantile > 0) {
      double f = peak;
      if (!cfg_.error_of_window_max) {
        TIDAL_ASSIGN_OR_RETURN(f, forecaster_.Forecast(t_s + cfg_.lead_s));
      }
      made_.push_back({t_s + cfg_.lead_s, f, Seasonal(t_s)});
    }
  }
  const int desired = std::clamp(std::max(reactive_need_, forecast_need_), cfg_.min_replicas, cfg_.max_replicas);
  window_.emplace_back(t_s, desired);
  while (!window_.empty() && window_.front().first <= t_s - cfg_.cooldown_s) window_.pop_front();
  const int64_t k = cfg_.step_replicas;
  if (desired > replicas_) {
    const int64_t up = (desired - replicas_ + k - 1) / k * k;
    replicas_ = static_cast<int>(std::min<int64_t>(cfg_.max_replicas, replicas_ + up));
    return replicas_;
  }
  // Scale in only to what every step of the last cool-down allows.
  int stable = desired;
  for (const auto& [t, d] : window_) stable = std::max(stable, d);
  if (stable < replicas_) replicas_ -= static_cast<int>((replicas_ - stable) / k * k);
  return replicas_;
}

Result<AutoscaleReport> ReplayAutoscaler(const DemandSeries& s, const AutoscalerConfig& cfg) {
  TIDAL_ASSIGN_OR_RETURN(Autoscaler a, Autoscaler::Create(cfg, s.step_s));
  if (s.rate.size() < 2) return MakeError(ErrorCode::kInvalidArgument, "{}: replay needs at least two steps", s.name);
  AutoscaleReport r;
  size_t met = 0;
  double sum = 0;
  int running = 0;
  for (size_t n = 0; n < s.rate.size(); ++n) {
    if (n > 0) {
      ++r.steps;
      if (static_cast<double>(running) * cfg.goodput_rps >= s.rate[n]) ++met;
      sum += running;
      r.max_replicas = std::max(r.max_replicas, running);
    }
    TIDAL_ASSIGN_OR_RETURN(running, a.Step(static_cast<int64_t>(n) * s.step_s, s.rate[n]));
  }
  r.slo_met_share = static_cast<double>(met) / static_cast<double>(r.steps);
  r.mean_replicas = sum / static_cast<double>(r.steps);
  r.replica_hours = sum * static_cast<double>(s.step_s) / 3600.0;
  return r;
}

}  // namespace tidal::inference

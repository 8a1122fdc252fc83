#include "market/hoarding.h"

#include <cmath>

namespace tidal::market {
namespace {

constexpr std::int64_t kMaxDurationS = 1'000'000'000;  // ~31 years: keeps every sum of times in range

Status CheckDuration(std::int64_t v, const char* field, std::int64_t min) {
  if (v < min || v > kMaxDurationS) {
    return MakeError(ErrorCode::kInvalidArgument, "hoarding {} is {} s; it must be in [{}, {}]", field, v, min,
                     kMaxDurationS);
  }
  return Ok();
}

Status CheckFraction(double v, const char* signal) {
  if (std::isnan(v)) return Ok();
  if (v < 0 || v > 1) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "{} is {}; it is a fraction 0..1 (DCGM_FI_DEV_GPU_UTIL is a percentage: divide it by 100)", signal,
                     v);
  }
  return Ok();
}

}  // namespace

Status HoardingConfig::Validate() const {
  if (!(activity_threshold > 0 && activity_threshold <= 1)) {
    return MakeError(ErrorCode::kInvalidArgument, "hoarding activity_threshold is {}; it must be in (0, 1]",
                     activity_threshold);
  }
  if (!(idle_power_factor > 0) || !std::isfinite(idle_power_factor)) {
    return MakeError(ErrorCode::kInvalidArgument, "hoarding idle_power_factor is {}; it must be a finite number > 0",
                     idle_power_factor);
  }
  TIDAL_RETURN_IF_ERROR(CheckDuration(idle_period_s, "idle_period_s", 0));
  TIDAL_RETURN_IF_ERROR(CheckDuration(grace_s, "grace_s", 0));
  TIDAL_RETURN_IF_ERROR(CheckDuration(fee_interval_s, "fee_interval_s", 1));
  TIDAL_RETURN_IF_ERROR(CheckDuration(reclaim_after_s, "reclaim_after_s", 0));
  TIDAL_RETURN_IF_ERROR(CheckDuration(max_gap_s, "max_gap_s", 1));
  for (auto [v, field] : {std::pair{fee_start, "fee_start"}, std::pair{fee_growth, "fee_growth"}}) {
    if (v < 0 || v > kMaxPricePerGpuHour) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "hoarding {} is {} micro-credits/GPU-h; it must be in [0, 1000000] credits/GPU-h", field, v);
    }
  }
  return Ok();
}

const char* ZombieStateName(ZombieState s) {
  switch (s) {
    case ZombieState::kActive:
      return "active";
    case ZombieState::kSuspect:
      return "suspect";
    case ZombieState::kNotified:
      return "notified";
    case ZombieState::kFee:
      return "fee";
    case ZombieState::kReclaimed:
      return "reclaimed";
  }
  return "?";
}

const char* HoardActionKindName(HoardActionKind k) {
  switch (k) {
    case HoardActionKind::kNotify:
      return "notify";
    case HoardActionKind::kFee:
      return "fee";
    case HoardActionKind::kReclaim:
      return "reclaim";
    case HoardActionKind::kRecovered:
      return "recovered";
  }
  return "?";
}

Result<std::optional<bool>> ClassifySample(const HoardingConfig& config, const ActivitySample& s) {
  TIDAL_RETURN_IF_ERROR(CheckFraction(s.gr_engine_active, "gr_engine_active"));
  TIDAL_RETURN_IF_ERROR(CheckFraction(s.gpu_util, "gpu_util"));
  if (s.power_w < 0 || s.power_idle_w < 0 || std::isinf(s.power_w) || std::isinf(s.power_idle_w)) {
    return MakeError(ErrorCode::kInvalidArgument, "power {} W (idle {} W) must be a finite number >= 0 or absent (NaN)",
                     s.power_w, s.power_idle_w);
  }
  const double activity = std::isnan(s.gr_engine_active) ? s.gpu_util : s.gr_engine_active;
  if (std::isnan(activity)) return std::optional<bool>();  // no signal: missing data
  bool idle = activity < config.activity_threshold;
  if (idle && !std::isnan(s.power_w) && !std::isnan(s.power_idle_w) && s.power_idle_w > 0) {
    idle = s.power_w < s.power_idle_w * config.idle_power_factor;
  }
  return std::optional<bool>(idle);
}

Result<ZombieDetector> ZombieDetector::Make(const HoardingConfig& config, std::int64_t milli_gpus) {
  TIDAL_RETURN_IF_ERROR(config.Validate());
  if (milli_gpus < 0) return MakeError(ErrorCode::kInvalidArgument, "an allocation of {} milli-GPU", milli_gpus);
  return ZombieDetector(config, milli_gpus);
}

void ZombieDetector::EndRun(std::int64_t now_s, RecoveryCause cause, std::vector<HoardAction>& out) {
  if (state_ == ZombieState::kNotified || state_ == ZombieState::kFee) {
    out.push_back(HoardAction{.kind = HoardActionKind::kRecovered, .at_s = now_s, .cause = cause});
  }
  state_ = ZombieState::kActive;
  idle_since_.reset();
  fees_charged_ = 0;
}

Result<std::vector<HoardAction>> ZombieDetector::Sample(std::int64_t now_s, double gr_engine_active, double gpu_util,
                                                        double power_w, double power_idle_w) {
  return Sample(now_s, ActivitySample{.gr_engine_active = gr_engine_active, .gpu_util = gpu_util, .power_w = power_w,
                                      .power_idle_w = power_idle_w});
}

Result<std::vector<HoardAction>> ZombieDetector::Sample(std::int64_t now_s, const ActivitySample& s) {
  std::vector<HoardAction> out;
  if (state_ == ZombieState::kReclaimed) return out;
  if (last_any_s_ && now_s < *last_any_s_) {
    return MakeError(ErrorCode::kInvalidArgument, "activity sample at t={} is before the previous one (t={})", now_s,
                     *last_any_s_);
  }
  TIDAL_ASSIGN_OR_RETURN(std::optional<bool> idle, ClassifySample(config_, s));
  last_any_s_ = now_s;
  if (!idle) return out;  // no activity signal: missing data, the gap grows

  const bool gap = last_valid_s_ && now_s - *last_valid_s_ > config_.max_gap_s;
  if (gap && state_ != ZombieState::kActive) EndRun(now_s, RecoveryCause::kTelemetryGap, out);
  if (!*idle) {
    if (state_ != ZombieState::kActive) EndRun(now_s, RecoveryCause::kActivity, out);
    last_valid_s_ = now_s;
    return out;
  }
  if (state_ == ZombieState::kActive) {
    state_ = ZombieState::kSuspect;
    idle_since_ = now_s;
  } else {
    observed_idle_s_ += now_s - *last_valid_s_;  // two consecutive idle samples, no gap between them
  }
  last_valid_s_ = now_s;

  const std::int64_t since = *idle_since_;
  const std::int64_t fees_from = since + config_.idle_period_s + config_.grace_s;
  const std::int64_t reclaim_at = fees_from + config_.reclaim_after_s;
  if (state_ == ZombieState::kSuspect && now_s - since >= config_.idle_period_s) {
    out.push_back(HoardAction{.kind = HoardActionKind::kNotify, .at_s = now_s});
    state_ = ZombieState::kNotified;
  }
  if (state_ == ZombieState::kNotified && now_s >= fees_from) {
    state_ = ZombieState::kFee;
    fees_charged_ = 0;
  }
  if (state_ == ZombieState::kFee) {
    for (;;) {
      const std::int64_t from = fees_from + fees_charged_ * config_.fee_interval_s;
      const std::int64_t to = from + config_.fee_interval_s;
      if (to > now_s || to > reclaim_at) break;  // in arrears; no fee past the reclaim
      Micros growth = 0, rate = 0;
      if (__builtin_mul_overflow(fees_charged_, config_.fee_growth, &growth) ||
          __builtin_add_overflow(config_.fee_start, growth, &rate)) {
        return MakeError(ErrorCode::kInvalidArgument, "keep fee of step {} overflows; lower fee_growth", fees_charged_);
      }
      TIDAL_ASSIGN_OR_RETURN(Micros amount, ChargeForInterval(milli_gpus_, to - from, rate));
      out.push_back(HoardAction{.kind = HoardActionKind::kFee, .at_s = now_s, .from_s = from, .to_s = to,
                                .step = fees_charged_, .rate_per_gpu_hour = rate, .amount = amount});
      ++fees_charged_;
    }
    if (now_s >= reclaim_at) {
      out.push_back(HoardAction{.kind = HoardActionKind::kReclaim, .at_s = now_s});
      state_ = ZombieState::kReclaimed;
    }
  }
  return out;
}

}  // namespace tidal::market

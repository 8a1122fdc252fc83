// Hoarding ("zombie") detection for one allocation (docs/market.md,
// "Hoarding"): a pure state machine fed GPU-activity samples, emitting the
// actions the caller turns into ledger entries and scheduler calls.
//
//   active ──idle sample──> suspect ──idle for idle_period_s──> notified (Notify)
//     ^                                                            │ grace_s more
//     │ active sample (Recovered, if the tenant was notified)      v
//     └──────────────────────────────────────────────────────── fee (Fee per fee_interval_s,
//                                                                    rising by fee_growth)
//                                                    reclaim_after_s more idle │
//                                                                              v
//                                                                      reclaimed (Reclaim; terminal)
//
// Invariants:
//  * Time only counts as idle between two consecutive valid samples that are
//    both idle and at most max_gap_s apart. A longer gap — or a sample with no
//    activity signal at all — is missing data, not evidence of idleness: the
//    idle run ends there and starts over at the next idle sample.
//  * Fees are charged in arrears, for a whole fee interval every sample of
//    which was idle: never for an interval in which the allocation was active.
//  * Reclaim comes only after idle_period_s + grace_s + reclaim_after_s of
//    uninterrupted idleness.
//  * Deterministic: the same samples give the same actions.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "common/result.h"
#include "market/pricing.h"

namespace tidal::market {

struct HoardingConfig {
  double activity_threshold = 0.05;   // idle when activity < this (fraction 0..1)
  double idle_power_factor = 1.5;     // ...and, when power is known, power < idle power × this
  std::int64_t idle_period_s = 1800;  // idle this long → Notify
  std::int64_t grace_s = 1800;        // then this long → fees start
  std::int64_t fee_interval_s = 3600; // one fee per interval of continued idleness
  Micros fee_start = 500'000;         // µcr per GPU-hour for the first interval
  Micros fee_growth = 500'000;        // µcr per GPU-hour added for each further interval
  std::int64_t reclaim_after_s = 14400;  // idle this long after fees started → Reclaim
  std::int64_t max_gap_s = 300;       // longer between samples = missing data

  // threshold in (0, 1], factor > 0, durations in [0, 10^9] s, fee_interval
  // and max_gap >= 1, fees in [0, kMaxPricePerGpuHour].
  Status Validate() const;
  bool operator==(const HoardingConfig&) const = default;
};

enum class ZombieState { kActive, kSuspect, kNotified, kFee, kReclaimed };
const char* ZombieStateName(ZombieState s);

enum class HoardActionKind { kNotify, kFee, kReclaim, kRecovered };
const char* HoardActionKindName(HoardActionKind k);

enum class RecoveryCause { kNone, kActivity, kTelemetryGap };

struct HoardAction {
  HoardActionKind kind = HoardActionKind::kNotify;
  std::int64_t at_s = 0;  // the time of the sample that produced it
  // kFee: the idle interval [from_s, to_s) charged, its 0-based step, the rate
  // (fee_start + step × fee_growth, µcr/GPU-h) and the amount
  // ChargeForInterval(milli_gpus, to − from, rate).
  std::int64_t from_s = 0;
  std::int64_t to_s = 0;
  std::int64_t step = 0;
  Micros rate_per_gpu_hour = 0;
  Micros amount = 0;
  // kRecovered: an active sample, or a telemetry gap, ended a notified run.
  RecoveryCause cause = RecoveryCause::kNone;
  bool operator==(const HoardAction&) const = default;
};

// One activity sample; NaN = the signal is absent.
struct ActivitySample {
  double gr_engine_active = std::numeric_limits<double>::quiet_NaN();  // DCGM_FI_PROF_GR_ENGINE_ACTIVE, 0..1
  double gpu_util = std::numeric_limits<double>::quiet_NaN();          // DCGM_FI_DEV_GPU_UTIL / 100, 0..1
  double power_w = std::numeric_limits<double>::quiet_NaN();           // DCGM_FI_DEV_POWER_USAGE
  double power_idle_w = std::numeric_limits<double>::quiet_NaN();      // the model's idle draw
};

// The classification of one sample: nullopt when it carries no activity
// signal (missing data); otherwise whether it is idle. activity =
// gr_engine_active if present, else gpu_util; idle iff activity < threshold
// and, when power_w and power_idle_w > 0 are both known, power_w <
// power_idle_w × idle_power_factor (so a memory-bound job with low SM
// activity but high power is not idle). An error for a value out of range.
Result<std::optional<bool>> ClassifySample(const HoardingConfig& config, const ActivitySample& s);

// For a multi-GPU allocation, feed the busiest device: the maximum activity
// and the maximum power over its devices (one busy GPU means the allocation
// is in use).
class ZombieDetector {
 public:
  static Result<ZombieDetector> Make(const HoardingConfig& config, std::int64_t milli_gpus);

  // Times must not go backwards (equal is fine). After kReclaimed every
  // sample is ignored (the caller ends the allocation).
  Result<std::vector<HoardAction>> Sample(std::int64_t now_s, double gr_engine_active, double gpu_util, double power_w,
                                          double power_idle_w);
  Result<std::vector<HoardAction>> Sample(std::int64_t now_s, const ActivitySample& s);

  ZombieState state() const { return state_; }
  // Start of the current idle run (the first idle sample of it), if any.
  std::optional<std::int64_t> idle_since() const { return idle_since_; }
  // Idle seconds seen over the allocation's life (for hoarded GPU-hours).
  std::int64_t observed_idle_s() const { return observed_idle_s_; }
  std::int64_t milli_gpus() const { return milli_gpus_; }

 private:
  ZombieDetector(const HoardingConfig& c, std::int64_t milli_gpus) : config_(c), milli_gpus_(milli_gpus) {}
  void EndRun(std::int64_t now_s, RecoveryCause cause, std::vector<HoardAction>& out);

  HoardingConfig config_;
  std::int64_t milli_gpus_ = 0;
  ZombieState state_ = ZombieState::kActive;
  std::optional<std::int64_t> last_valid_s_;  // time of the last sample with an activity signal
  std::optional<std::int64_t> last_any_s_;    // time of the last sample of any kind
  std::optional<std::int64_t> idle_since_;
  std::int64_t fees_charged_ = 0;             // steps charged in the current fee state
  std::int64_t observed_idle_s_ = 0;
};

}  // namespace tidal::market

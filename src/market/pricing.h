// Prices of the compute market: the policy half, pure and store-free
// (docs/market.md, "Prices" and "Metering rules"). The ledger, the simulator
// and the CLI call these; nothing here reads a clock, a file or a store.
//
// Invariants:
//  * Money is integer micro-credits (Micros; 1 credit = 1,000,000). Nothing
//    that becomes a charge is ever a floating-point number.
//  * Ratios that multiply money (tier factors, the announced multiplier, the
//    lender share, the recall factor) are integer parts per million (ppm;
//    1,000,000 = 1.0).
//  * The dynamic multiplier is computed in double (moving average, curve) and
//    quantised once to ppm when it is announced; from then on everything is
//    integer. A price per GPU-hour is base × tier factor × multiplier,
//    computed in 128-bit integers and rounded once, half up.
//  * GPU quantities are milli-GPU (1000 = one GPU), as in ClusterState.
//  * Time is int64 seconds of the caller's clock (simulated or wall).
//  * An announced price is never changed afterwards: the history only grows.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "market/tier.h"

namespace tidal::market {

using Micros = std::int64_t;
inline constexpr Micros kMicrosPerCredit = 1'000'000;
inline constexpr std::int64_t kPpmOne = 1'000'000;  // 1.0 in parts per million
inline constexpr std::int64_t kMilliGpuPerGpu = 1000;
inline constexpr std::int64_t kSecondsPerHour = 3600;
// Largest price per GPU-hour a book may hold (1,000,000 credits): keeps every
// product below in 128 bits with room to spare.
inline constexpr Micros kMaxPricePerGpuHour = 1'000'000 * kMicrosPerCredit;

// ---------------------------------------------------------------------------
// Integer money rules (pure functions). Every one rejects negative inputs and
// reports overflow of int64 as an error instead of wrapping.

// round_half_up(base × factor_ppm × multiplier_ppm / 10^12): the price per
// GPU-hour of one tier at one multiplier. The only rounding of a price.
Result<Micros> ApplyMultiplier(Micros base, std::int64_t factor_ppm, std::int64_t multiplier_ppm);

// ceil(milli_gpus × seconds × price_per_gpu_hour / (1000 × 3600)), in
// __int128. Ceil: a charge never rounds to less than the use; the excess is
// under one micro-credit per call, so the caller should meter in intervals
// (not per second) to keep it negligible.
Result<Micros> ChargeForInterval(std::int64_t milli_gpus, std::int64_t seconds, Micros price_per_gpu_hour);

// A borrower's charge split between the lender whose idle floor it ran on and
// the market's revenue: to_lender = floor(charge × share_ppm / 10^6),
// to_revenue = charge − to_lender (so the two always sum to the charge).
// share_ppm in [0, 1,000,000].
struct LendingSplit {
  Micros to_lender = 0;
  Micros to_revenue = 0;
  bool operator==(const LendingSplit&) const = default;
};
Result<LendingSplit> SplitBorrowedCharge(Micros charge, std::int64_t lender_share_ppm);

// What a borrower is paid when the lender recalls its capacity before the
// borrower's job ends: the lost work (GPU-time since its last checkpoint plus
// restart) at the price it was paying, times a factor:
// ceil(milli_gpus × lost_seconds × price × factor_ppm / (1000 × 3600 × 10^6)).
// Ceil: in the borrower's favour, as compensation should be.
Result<Micros> RecallCompensation(std::int64_t milli_gpus, std::int64_t lost_seconds, Micros price_per_gpu_hour,
                                  std::int64_t factor_ppm);

// The tier a tenant's allocation runs at given its budget: with a budget and
// spent >= budget, standard and inference drop to spot. Guaranteed stays
// guaranteed (the floor is the tenant's by right and costs the fixed in-floor
// rate the budget was planned around) and spot stays spot. No budget: the
// requested tier.
Tier TierUnderBudget(Tier requested, Micros spent, std::optional<Micros> budget);

// ---------------------------------------------------------------------------
// The utilisation → multiplier curve.

struct CurvePoint {
  double utilisation = 0;  // [0, 1]
  double multiplier = 1;   // > 0, inside [min, max] of the curve
  bool operator==(const CurvePoint&) const = default;
};

// Piecewise linear through the points, flat before the first and after the
// last, clamped to [min_multiplier, max_multiplier].
class PriceCurve {
 public:
  // Points sorted by strictly increasing utilisation in [0, 1], multipliers
  // finite, > 0 and inside the bounds; 0 < min <= max <= 1000. An error names
  // the offending point by its 1-based position and values.
  static Result<PriceCurve> Make(std::vector<CurvePoint> points, double min_multiplier, double max_multiplier);
  // 0 → 0.5 (idle discount), 0.5 → 1.0, 0.8 → 1.2, 1.0 → 2.0 (peak premium);
  // bounds [0.5, 2.0].
  static PriceCurve Default();

  // u outside [0, 1] is clamped into it; NaN is treated as 0.
  double Multiplier(double utilisation) const;

  const std::vector<CurvePoint>& points() const { return points_; }
  double min_multiplier() const { return min_; }
  double max_multiplier() const { return max_; }
  bool operator==(const PriceCurve&) const = default;

 private:
  PriceCurve() = default;
  std::vector<CurvePoint> points_;
  double min_ = 0;
  double max_ = 0;
};

// ---------------------------------------------------------------------------
// List prices.

// What a floating price is made of: price = round(base × factor × multiplier).
struct TierBase {
  Micros base = 0;             // micro-credits per GPU-hour
  std::int64_t factor_ppm = kPpmOne;
  bool operator==(const TierBase&) const = default;
};

// Base prices per GPU model, tier factors and the in-floor rate. "*" is the
// model fallback. Lookup of a floating tier (standard, spot, inference) for
// model M: overrides[M][tier] (factor 1) → base[M] × factor[tier] →
// overrides["*"][tier] → base["*"] × factor[tier]. Model names match exactly
// (case-sensitive), as GpuModelRegistry does. Guaranteed capacity is never
// floating: it is charged in_floor[M] (or in_floor["*"]).
struct PriceBook {
  using ModelMap = std::map<std::string, Micros, std::less<>>;
  ModelMap base;                                          // model → µcr/GPU-h at factor 1, multiplier 1
  std::map<Tier, std::int64_t> tier_factor_ppm;           // standard, spot, inference
  std::map<std::string, std::map<Tier, Micros>, std::less<>> overrides;  // exact tier base, no factor
  ModelMap in_floor;                                      // model → fixed µcr/GPU-h inside the floor

  // Prices in [0, kMaxPricePerGpuHour], factors in (0, 100×], a factor for
  // every floating tier, no guaranteed factor or override (that is the
  // in-floor rate), and every model named anywhere resolvable for every tier.
  Status Validate() const;

  // For a floating tier; an error for kGuaranteed or an unknown model.
  Result<TierBase> Floating(std::string_view model, Tier tier) const;
  Result<Micros> InFloorRate(std::string_view model) const;
  // The price at multiplier 1 (guaranteed: the in-floor rate).
  Result<Micros> ListPrice(std::string_view model, Tier tier) const;

  // H100 4.0, A100 2.0, V100 1.0, T4 0.4, "*" 1.0 credits/GPU-h; factors
  // standard 1.0, spot 0.3, inference 1.5; in-floor 0.8 × those bases.
  static PriceBook Default();
  bool operator==(const PriceBook&) const = default;
};

// ---------------------------------------------------------------------------
// Announced prices of one pool (one GPU model).

// The multiplier and prices of one period, fixed when announced.
struct Announcement {
  std::int64_t period = 0;            // k: in force over [origin + k·P, origin + (k+1)·P)
  std::int64_t effective_from_s = 0;  // origin + k·P
  std::int64_t announced_at_s = 0;    // end of period k − lead (the origin for the first lead periods)
  std::int64_t multiplier_ppm = kPpmOne;
  double utilisation_avg = 0;         // the moving average it came from; NaN when none (initial, no data)
  std::array<Micros, kTierCount> price{};  // µcr/GPU-h by TierIndex; guaranteed = the in-floor rate

  Micros Price(Tier t) const { return price[TierIndex(t)]; }
};

// Every announcement of one pool, in period order (entry i is period i).
struct PriceHistory {
  std::string model;
  std::int64_t origin_s = 0;
  std::int64_t period_s = 3600;
  std::vector<Announcement> entries;

  // The period containing t: floor((t − origin) / P).
  std::int64_t PeriodOf(std::int64_t t) const;
  // End of the last announced period: prices are known for [origin, horizon).
  std::int64_t horizon_s() const { return origin_s + static_cast<std::int64_t>(entries.size()) * period_s; }
  // The announcement in force at t; an error before the origin or at/after the
  // horizon (the caller has not advanced the pricer far enough).
  Result<const Announcement*> At(std::int64_t t) const;
  Result<Micros> PriceAt(Tier tier, std::int64_t t) const;
};

// The protection window: a job that starts at start_s pays, until
// start_s + protection_s, no more than the price in force at start_s. The
// price may fall under the lock, never rise.
struct PriceLock {
  Tier tier = Tier::kStandard;
  std::int64_t start_s = 0;
  std::int64_t until_s = 0;  // start_s + protection_s: the lock covers [start_s, until_s)
  Micros ceiling = 0;        // the price in force at start_s
  bool operator==(const PriceLock&) const = default;
};
Result<PriceLock> Lock(const PriceHistory& history, Tier tier, std::int64_t start_s, std::int64_t protection_s);
// min(ceiling, price at t) for t in [start, until); the price at t after it.
// t before the lock's start is an error.
Result<Micros> LockedPrice(const PriceHistory& history, const PriceLock& lock, std::int64_t t);
// Both in one: what a job of this tier started at start_s pays at t.
Result<Micros> LockedPrice(const PriceHistory& history, Tier tier, std::int64_t start_s, std::int64_t protection_s,
                           std::int64_t t);

// One piece of a metered or quoted interval: inside one period and entirely
// inside or outside the lock, so one price applies.
struct ChargeLine {
  std::int64_t from_s = 0;
  std::int64_t to_s = 0;
  std::int64_t period = 0;
  bool announced = true;    // false: beyond the horizon, priced at the last announced price
  Micros price = 0;         // µcr/GPU-h that applied (after the lock)
  Micros charge = 0;        // ChargeForInterval of this line
  Micros upper_bound = 0;   // quotes only: the charge if the unannounced multiplier rose as fast as allowed
  bool operator==(const ChargeLine&) const = default;
};

// Meters a running allocation over [from_s, to_s): split at period boundaries
// and at the end of the lock, each piece charged at the price in force
// (LockedPrice when lock is given), rounded per piece as ChargeForInterval.
// Every piece must be announced. In-floor milli-GPU are metered as
// Tier::kGuaranteed (the fixed rate); the lock's tier must equal `tier`.
struct Metered {
  Micros total = 0;
  std::vector<ChargeLine> lines;
};
Result<Metered> MeterInterval(const PriceHistory& history, Tier tier, const PriceLock* lock, std::int64_t milli_gpus,
                              std::int64_t from_s, std::int64_t to_s);

// ---------------------------------------------------------------------------
// The dynamic pricer of one pool.

struct PricerConfig {
  std::int64_t period_s = 3600;       // one multiplier per period
  std::int64_t window_periods = 3;    // moving average over this many periods' utilisation
  double max_step = 0.1;              // |multiplier(k+1) − multiplier(k)| <= max_step
  std::int64_t lead_periods = 2;      // price of period k fixed at the end of period k − lead
  std::int64_t protection_s = 21600;  // PriceLock length for a job that starts
  double initial_multiplier = 1.0;    // periods 0 .. lead−1, before any utilisation is known

  Status Validate() const;  // period >= 1, window >= 1, 0 < max_step <= 1000, lead >= 1, protection >= 0
  bool operator==(const PricerConfig&) const = default;
};

// A quote for a job: its expected cost, exact where the prices are announced.
// `lines` are the floating part, split as MeterInterval(tier, &lock) splits
// it; `in_floor_lines` the in-floor part, split as
// MeterInterval(kGuaranteed, nullptr) splits it (per period). So, where every
// period is announced, total equals what those two meters charge.
struct Quote {
  std::string model;
  Tier tier = Tier::kStandard;
  std::int64_t start_s = 0;
  std::int64_t duration_s = 0;
  std::int64_t milli_gpus = 0;
  std::int64_t in_floor_milli_gpus = 0;
  Micros total = 0;               // what the meter will charge if it meters per line (see MeterInterval)
  Micros upper_bound_total = 0;   // the same with every unannounced period at its highest reachable price
  Micros in_floor_total = 0;      // the in-floor part of total (fixed rate)
  std::int64_t horizon_s = 0;     // prices are announced up to here
  std::int64_t beyond_horizon_s = 0;  // seconds of the floating part priced at the last announced price
  PriceLock lock;                 // the protection the job would get
  std::vector<ChargeLine> lines;           // floating part, per period (split at the lock's end)
  std::vector<ChargeLine> in_floor_lines;  // in-floor part, per period
};

// Multiplier pipeline, at the end of each period c:
//   u_c     = time-weighted mean utilisation of period c (each observation
//             holds until the next; time before the first one is not counted)
//   avg     = mean of u over the last `window` periods that had data
//   target  = round(curve(avg) × 10^6) ppm        (no data yet: the previous multiplier)
//   m       = clamp(target, prev − step, prev + step), then clamp(min, max)
//   announce m for period c + lead (prev = the multiplier of period c + lead − 1)
class DynamicPricer {
 public:
  // The pool's prices come from the book (an error if it cannot price the
  // model); periods start at origin_s; initial_multiplier must be inside the
  // curve's bounds.
  static Result<DynamicPricer> Make(std::string model, const PriceBook& book, PriceCurve curve, PricerConfig config,
                                    std::int64_t origin_s);

  // The pool's utilisation from now_s on (allocated / capacity, in [0, 1]).
  // Times must not go backwards (equal is fine: the later value wins); the
  // periods that ended by now_s are closed and announced first.
  Status Observe(std::int64_t now_s, double utilisation);
  // Closes (and announces) every period that ended by now_s. A time at or
  // before the pricer's clock is a no-op. Call before PriceAt / Lock /
  // MeterInterval for a time past the last observation.
  Status AdvanceTo(std::int64_t now_s);

  const PriceHistory& history() const { return history_; }
  Result<Micros> PriceAt(Tier tier, std::int64_t t) const { return history_.PriceAt(tier, t); }
  std::int64_t clock_s() const { return clock_; }

  // The expected cost of milli_gpus (in_floor_milli_gpus of them in the
  // tenant's floor, at the in-floor rate) over [start_s, start_s + duration),
  // with the protection window applied as the meter will. Beyond the horizon
  // the last announced price is assumed (beyond_horizon_s says for how long)
  // and upper_bound_total assumes the multiplier rises by max_step every
  // unannounced period (to the curve's max). Guaranteed: every GPU in floor.
  Result<Quote> QuoteJob(Tier tier, std::int64_t start_s, std::int64_t duration_s, std::int64_t milli_gpus,
                         std::int64_t in_floor_milli_gpus) const;

  const PricerConfig& config() const { return config_; }
  const PriceCurve& curve() const { return curve_; }

 private:
  DynamicPricer(PriceCurve curve) : curve_(std::move(curve)) {}
  Status ClosePeriod();
  Result<Announcement> MakeAnnouncement(std::int64_t period, std::int64_t announced_at, std::int64_t multiplier_ppm,
                                        double avg) const;
  Result<std::array<Micros, kTierCount>> PricesAt(std::int64_t multiplier_ppm) const;

  PriceCurve curve_;
  PricerConfig config_;
  std::array<TierBase, kTierCount> bases_{};  // guaranteed: {in-floor rate, 1.0}
  std::int64_t step_ppm_ = 0, min_ppm_ = 0, max_ppm_ = 0;
  PriceHistory history_;

  std::int64_t clock_ = 0;         // latest time seen
  std::int64_t open_period_ = 0;   // the period accumulating utilisation
  bool has_value_ = false;         // an observation is being held
  double held_ = 0;
  std::int64_t held_since_ = 0;    // integrated up to here
  double area_ = 0;                // ∫ u dt over the open period so far
  std::int64_t covered_s_ = 0;     // seconds of the open period with a value
  std::deque<double> window_;      // per-period means, newest last
};

// Every pool's pricer, by GPU model: the shape the simulator and the daemon
// hold. Pools are added explicitly (a pool has an origin).
class MarketPrices {
 public:
  MarketPrices(PriceBook book, PriceCurve curve, PricerConfig config)
      : book_(std::move(book)), curve_(std::move(curve)), config_(config) {}

  Status AddPool(const std::string& model, std::int64_t origin_s);
  Status Observe(std::string_view model, std::int64_t now_s, double utilisation);
  Status AdvanceTo(std::int64_t now_s);  // every pool
  Result<Micros> PriceAt(std::string_view model, Tier tier, std::int64_t t) const;
  Result<Quote> QuoteJob(std::string_view model, Tier tier, std::int64_t start_s, std::int64_t duration_s,
                         std::int64_t milli_gpus, std::int64_t in_floor_milli_gpus) const;
  // nullptr when the model has no pool.
  const DynamicPricer* pool(std::string_view model) const;
  const PriceBook& book() const { return book_; }

 private:
  Result<DynamicPricer*> Find(std::string_view model);
  PriceBook book_;
  PriceCurve curve_;
  PricerConfig config_;
  std::map<std::string, DynamicPricer, std::less<>> pools_;
};

}  // namespace tidal::market

#include "market/pricing.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace tidal::market {
namespace {

__extension__ typedef __int128 i128;

constexpr std::int64_t kMaxFactorPpm = 100 * kPpmOne;    // tier factor <= 100x
constexpr double kMaxMultiplier = 1000;                  // curve bound
constexpr std::int64_t kMaxPeriodsPerAdvance = 10'000'000;

// a × b × c in 128 bits, or nullopt when it does not fit.
std::optional<i128> Mul3(i128 a, i128 b, i128 c) {
  i128 ab = 0, abc = 0;
  if (__builtin_mul_overflow(a, b, &ab) || __builtin_mul_overflow(ab, c, &abc)) return std::nullopt;
  return abc;
}

i128 CeilDiv(i128 n, i128 d) { return (n + d - 1) / d; }       // n >= 0, d > 0
i128 HalfUpDiv(i128 n, i128 d) { return (n + d / 2) / d; }      // n >= 0, d > 0 even

Result<Micros> Fits(i128 v, const char* what) {
  if (v > std::numeric_limits<Micros>::max()) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "{} does not fit in 64-bit micro-credits (over 9.2e12 credits); split it or check the inputs", what);
  }
  return static_cast<Micros>(v);
}

std::int64_t FloorDiv(std::int64_t a, std::int64_t b) {
  std::int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

std::int64_t ToPpm(double x) { return std::llround(x * static_cast<double>(kPpmOne)); }

std::string Credits(Micros m) {
  // Local formatting for messages (market_config.h has the public one).
  const bool neg = m < 0;
  const unsigned long long u = neg ? 0ULL - static_cast<unsigned long long>(m) : static_cast<unsigned long long>(m);
  return fmt::format("{}{}.{:06}", neg ? "-" : "", u / 1'000'000ULL, u % 1'000'000ULL);
}

}  // namespace

// ---------------------------------------------------------------------------

Result<Micros> ApplyMultiplier(Micros base, std::int64_t factor_ppm, std::int64_t multiplier_ppm) {
  if (base < 0 || factor_ppm < 0 || multiplier_ppm < 0) {
    return MakeError(ErrorCode::kInvalidArgument, "price {} micro-credits × factor {} ppm × multiplier {} ppm: none may be negative",
                     base, factor_ppm, multiplier_ppm);
  }
  const auto n = Mul3(base, factor_ppm, multiplier_ppm);
  if (!n) return MakeError(ErrorCode::kInvalidArgument, "price {} micro-credits × {} ppm × {} ppm overflows", base, factor_ppm, multiplier_ppm);
  return Fits(HalfUpDiv(*n, static_cast<i128>(kPpmOne) * kPpmOne), "the price");
}

Result<Micros> ChargeForInterval(std::int64_t milli_gpus, std::int64_t seconds, Micros price_per_gpu_hour) {
  if (milli_gpus < 0 || seconds < 0 || price_per_gpu_hour < 0) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "charge for {} milli-GPU over {} s at {} micro-credits/GPU-h: none may be negative", milli_gpus, seconds,
                     price_per_gpu_hour);
  }
  const auto n = Mul3(milli_gpus, seconds, price_per_gpu_hour);
  if (!n) {
    return MakeError(ErrorCode::kInvalidArgument, "charge for {} milli-GPU over {} s at {} micro-credits/GPU-h overflows",
                     milli_gpus, seconds, price_per_gpu_hour);
  }
  return Fits(CeilDiv(*n, static_cast<i128>(kMilliGpuPerGpu) * kSecondsPerHour), "the charge");
}

Result<LendingSplit> SplitBorrowedCharge(Micros charge, std::int64_t lender_share_ppm) {
  if (charge < 0) return MakeError(ErrorCode::kInvalidArgument, "a borrowed charge of {} micro-credits is negative", charge);
  if (lender_share_ppm < 0 || lender_share_ppm > kPpmOne) {
    return MakeError(ErrorCode::kInvalidArgument, "lender share {} ppm is outside [0, 1000000] (1000000 = all of it)",
                     lender_share_ppm);
  }
  const auto to_lender = static_cast<Micros>(static_cast<i128>(charge) * lender_share_ppm / kPpmOne);
  return LendingSplit{.to_lender = to_lender, .to_revenue = charge - to_lender};
}

Result<Micros> RecallCompensation(std::int64_t milli_gpus, std::int64_t lost_seconds, Micros price_per_gpu_hour,
                                  std::int64_t factor_ppm) {
  if (milli_gpus < 0 || lost_seconds < 0 || price_per_gpu_hour < 0 || factor_ppm < 0) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "recall compensation for {} milli-GPU, {} s lost, at {} micro-credits/GPU-h × {} ppm: none may be negative",
                     milli_gpus, lost_seconds, price_per_gpu_hour, factor_ppm);
  }
  const auto n = Mul3(milli_gpus, lost_seconds, price_per_gpu_hour);
  i128 nf = 0;
  if (!n || __builtin_mul_overflow(*n, static_cast<i128>(factor_ppm), &nf)) {
    return MakeError(ErrorCode::kInvalidArgument, "recall compensation for {} milli-GPU × {} s at {} micro-credits/GPU-h overflows",
                     milli_gpus, lost_seconds, price_per_gpu_hour);
  }
  return Fits(CeilDiv(nf, static_cast<i128>(kMilliGpuPerGpu) * kSecondsPerHour * kPpmOne), "the recall compensation");
}

Tier TierUnderBudget(Tier requested, Micros spent, std::optional<Micros> budget) {
  if (!budget || spent < *budget) return requested;
  if (requested == Tier::kStandard || requested == Tier::kInference) return Tier::kSpot;
  return requested;
}

// ---------------------------------------------------------------------------

Result<PriceCurve> PriceCurve::Make(std::vector<CurvePoint> points, double min_multiplier, double max_multiplier) {
  if (!(min_multiplier > 0) || !(max_multiplier >= min_multiplier) || !(max_multiplier <= kMaxMultiplier)) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "price curve bounds [{}, {}]: need 0 < min_multiplier <= max_multiplier <= {}", min_multiplier,
                     max_multiplier, kMaxMultiplier);
  }
  if (points.empty()) {
    return MakeError(ErrorCode::kInvalidArgument, "the price curve has no points; give at least one {{utilisation, multiplier}}");
  }
  for (std::size_t i = 0; i < points.size(); ++i) {
    const CurvePoint& p = points[i];
    const auto where = fmt::format("price curve point {} (utilisation {}, multiplier {})", i + 1, p.utilisation, p.multiplier);
    if (!(p.utilisation >= 0 && p.utilisation <= 1)) {
      return MakeError(ErrorCode::kInvalidArgument, "{}: utilisation must be in [0, 1]", where);
    }
    if (!(p.multiplier > 0) || !std::isfinite(p.multiplier)) {
      return MakeError(ErrorCode::kInvalidArgument, "{}: the multiplier must be a finite number > 0", where);
    }
    if (p.multiplier < min_multiplier || p.multiplier > max_multiplier) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "{}: the multiplier is outside the bounds [{}, {}]; move the point or widen min/max_multiplier",
                       where, min_multiplier, max_multiplier);
    }
    if (i > 0 && !(p.utilisation > points[i - 1].utilisation)) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "{}: utilisation must be greater than point {}'s ({}); list the points in increasing utilisation, "
                       "each utilisation once",
                       where, i, points[i - 1].utilisation);
    }
  }
  PriceCurve c;
  c.points_ = std::move(points);
  c.min_ = min_multiplier;
  c.max_ = max_multiplier;
  return c;
}

PriceCurve PriceCurve::Default() {
  return *Make({{0.0, 0.5}, {0.5, 1.0}, {0.8, 1.2}, {1.0, 2.0}}, 0.5, 2.0);
}

double PriceCurve::Multiplier(double u) const {
  if (std::isnan(u)) u = 0;
  u = std::clamp(u, 0.0, 1.0);
  double m = points_.back().multiplier;
  if (u <= points_.front().utilisation) {
    m = points_.front().multiplier;
  } else {
    for (std::size_t i = 0; i + 1 < points_.size(); ++i) {
      const CurvePoint& a = points_[i];
      const CurvePoint& b = points_[i + 1];
      if (u <= b.utilisation) {
        m = a.multiplier + (u - a.utilisation) * (b.multiplier - a.multiplier) / (b.utilisation - a.utilisation);
        break;
      }
    }
  }
  return std::clamp(m, min_, max_);
}

// ---------------------------------------------------------------------------

namespace {

Status CheckPrice(Micros p, const std::string& what) {
  if (p < 0 || p > kMaxPricePerGpuHour) {
    return MakeError(ErrorCode::kInvalidArgument, "{}: price {} credits/GPU-h is outside [0, 1000000]", what, Credits(p));
  }
  return Ok();
}

}  // namespace

Status PriceBook::Validate() const {
  if (base.empty() && overrides.empty()) {
    return MakeError(ErrorCode::kInvalidArgument, "the price book has no base prices; add at least \"*\" under base");
  }
  for (const auto& [model, p] : base) {
    if (model.empty()) return MakeError(ErrorCode::kInvalidArgument, "a base price has an empty GPU model name");
    TIDAL_RETURN_IF_ERROR(CheckPrice(p, fmt::format("base price of '{}'", model)));
  }
  for (const auto& [model, p] : in_floor) {
    if (model.empty()) return MakeError(ErrorCode::kInvalidArgument, "an in-floor rate has an empty GPU model name");
    TIDAL_RETURN_IF_ERROR(CheckPrice(p, fmt::format("in-floor rate of '{}'", model)));
  }
  for (const auto& [model, tiers] : overrides) {
    for (const auto& [tier, p] : tiers) {
      if (tier == Tier::kGuaranteed) {
        return MakeError(ErrorCode::kInvalidArgument,
                         "override of '{}' for tier guaranteed: guaranteed capacity costs the in-floor rate; set it under "
                         "in_floor",
                         model);
      }
      TIDAL_RETURN_IF_ERROR(CheckPrice(p, fmt::format("override of '{}' for tier {}", model, TierName(tier))));
    }
  }
  for (const auto& [tier, f] : tier_factor_ppm) {
    if (tier == Tier::kGuaranteed) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "a tier factor for guaranteed: guaranteed capacity costs the in-floor rate, which does not float; "
                       "set in_floor instead");
    }
    if (f <= 0 || f > kMaxFactorPpm) {
      return MakeError(ErrorCode::kInvalidArgument, "tier factor of {} is {} ppm; it must be in (0, 100]×",
                       TierName(tier), f);
    }
  }
  for (Tier t : {Tier::kStandard, Tier::kSpot, Tier::kInference}) {
    if (!tier_factor_ppm.contains(t)) {
      return MakeError(ErrorCode::kInvalidArgument, "no tier factor for {}; give one (1.0 = the base price)", TierName(t));
    }
  }
  auto resolvable = [&](std::string_view model) -> Status {
    for (Tier t : {Tier::kStandard, Tier::kSpot, Tier::kInference}) TIDAL_RETURN_IF_ERROR(Floating(model, t));
    TIDAL_RETURN_IF_ERROR(InFloorRate(model));
    return Ok();
  };
  for (const auto& [model, _] : base) TIDAL_RETURN_IF_ERROR(resolvable(model));
  for (const auto& [model, _] : in_floor) TIDAL_RETURN_IF_ERROR(resolvable(model));
  for (const auto& [model, _] : overrides) TIDAL_RETURN_IF_ERROR(resolvable(model));
  return Ok();
}

Result<TierBase> PriceBook::Floating(std::string_view model, Tier tier) const {
  if (tier == Tier::kGuaranteed) {
    return MakeError(ErrorCode::kInvalidArgument, "guaranteed capacity has no floating price; use the in-floor rate");
  }
  for (std::string_view m : {model, std::string_view("*")}) {
    if (auto o = overrides.find(m); o != overrides.end()) {
      if (auto p = o->second.find(tier); p != o->second.end()) return TierBase{.base = p->second, .factor_ppm = kPpmOne};
    }
    if (auto b = base.find(m); b != base.end()) {
      auto f = tier_factor_ppm.find(tier);
      if (f == tier_factor_ppm.end()) {
        return MakeError(ErrorCode::kNotFound, "no tier factor for {}; add it under tier_factors", TierName(tier));
      }
      return TierBase{.base = b->second, .factor_ppm = f->second};
    }
  }
  return MakeError(ErrorCode::kNotFound, "no {} price for GPU model '{}': add '{}' (or \"*\") under base", TierName(tier),
                   model, model);
}

Result<Micros> PriceBook::InFloorRate(std::string_view model) const {
  for (std::string_view m : {model, std::string_view("*")})
    if (auto r = in_floor.find(m); r != in_floor.end()) return r->second;
  return MakeError(ErrorCode::kNotFound, "no in-floor rate for GPU model '{}': add '{}' (or \"*\") under in_floor", model,
                   model);
}

Result<Micros> PriceBook::ListPrice(std::string_view model, Tier tier) const {
  if (tier == Tier::kGuaranteed) return InFloorRate(model);
  TIDAL_ASSIGN_OR_RETURN(TierBase b, Floating(model, tier));
  return ApplyMultiplier(b.base, b.factor_ppm, kPpmOne);
}

PriceBook PriceBook::Default() {
  PriceBook b;
  b.base = {{"H100", 4'000'000}, {"A100", 2'000'000}, {"V100", 1'000'000}, {"T4", 400'000}, {"*", 1'000'000}};
  b.tier_factor_ppm = {{Tier::kStandard, 1'000'000}, {Tier::kSpot, 300'000}, {Tier::kInference, 1'500'000}};
  b.in_floor = {{"H100", 3'200'000}, {"A100", 1'600'000}, {"V100", 800'000}, {"T4", 320'000}, {"*", 800'000}};
  return b;
}

// ---------------------------------------------------------------------------

std::int64_t PriceHistory::PeriodOf(std::int64_t t) const { return FloorDiv(t - origin_s, period_s); }

Result<const Announcement*> PriceHistory::At(std::int64_t t) const {
  if (t < origin_s) {
    return MakeError(ErrorCode::kInvalidArgument, "pool '{}': t={} is before the market opened (t={})", model, t,
                     origin_s);
  }
  const std::int64_t k = PeriodOf(t);
  if (k >= static_cast<std::int64_t>(entries.size())) {
    return MakeError(ErrorCode::kFailedPrecondition,
                     "pool '{}': no price announced for t={} yet (announced up to t={}); advance the pricer to the "
                     "current time first (AdvanceTo)",
                     model, t, horizon_s());
  }
  return &entries[static_cast<std::size_t>(k)];
}

Result<Micros> PriceHistory::PriceAt(Tier tier, std::int64_t t) const {
  TIDAL_ASSIGN_OR_RETURN(const Announcement* a, At(t));
  return a->Price(tier);
}

Result<PriceLock> Lock(const PriceHistory& history, Tier tier, std::int64_t start_s, std::int64_t protection_s) {
  std::int64_t until = 0;
  if (protection_s < 0 || __builtin_add_overflow(start_s, protection_s, &until)) {
    return MakeError(ErrorCode::kInvalidArgument, "protection window of {} s is negative or too long", protection_s);
  }
  TIDAL_ASSIGN_OR_RETURN(Micros ceiling, history.PriceAt(tier, start_s));
  return PriceLock{.tier = tier, .start_s = start_s, .until_s = until, .ceiling = ceiling};
}

Result<Micros> LockedPrice(const PriceHistory& history, const PriceLock& lock, std::int64_t t) {
  if (t < lock.start_s) {
    return MakeError(ErrorCode::kInvalidArgument, "t={} is before the job started (t={}); nothing to price", t,
                     lock.start_s);
  }
  TIDAL_ASSIGN_OR_RETURN(Micros p, history.PriceAt(lock.tier, t));
  return t < lock.until_s ? std::min(p, lock.ceiling) : p;
}

Result<Micros> LockedPrice(const PriceHistory& history, Tier tier, std::int64_t start_s, std::int64_t protection_s,
                           std::int64_t t) {
  TIDAL_ASSIGN_OR_RETURN(PriceLock lock, Lock(history, tier, start_s, protection_s));
  return LockedPrice(history, lock, t);
}

namespace {

// Splits [from, to) at period ends and at `cut` (the lock's end, when inside).
template <typename Fn>
Status ForEachPiece(const PriceHistory& h, std::int64_t from, std::int64_t to, std::optional<std::int64_t> cut, Fn fn) {
  std::int64_t t = from;
  while (t < to) {
    const std::int64_t k = h.PeriodOf(t);
    std::int64_t end = std::min(to, h.origin_s + (k + 1) * h.period_s);
    if (cut && t < *cut && *cut < end) end = *cut;
    TIDAL_RETURN_IF_ERROR(fn(k, t, end));
    t = end;
  }
  return Ok();
}

}  // namespace

Result<Metered> MeterInterval(const PriceHistory& history, Tier tier, const PriceLock* lock, std::int64_t milli_gpus,
                              std::int64_t from_s, std::int64_t to_s) {
  if (from_s > to_s) {
    return MakeError(ErrorCode::kInvalidArgument, "metering interval [{}, {}) ends before it starts", from_s, to_s);
  }
  if (milli_gpus < 0) return MakeError(ErrorCode::kInvalidArgument, "metering {} milli-GPU: negative", milli_gpus);
  if (lock && lock->tier != tier) {
    return MakeError(ErrorCode::kInvalidArgument, "a {} lock applied to {} metering", TierName(lock->tier), TierName(tier));
  }
  Metered m;
  std::optional<std::int64_t> cut;
  if (lock) cut = lock->until_s;
  TIDAL_RETURN_IF_ERROR(ForEachPiece(history, from_s, to_s, cut, [&](std::int64_t k, std::int64_t a, std::int64_t b) -> Status {
    Micros price = 0;
    if (lock) {
      TIDAL_ASSIGN_OR_RETURN(price, LockedPrice(history, *lock, a));
    } else {
      TIDAL_ASSIGN_OR_RETURN(price, history.PriceAt(tier, a));
    }
    TIDAL_ASSIGN_OR_RETURN(Micros charge, ChargeForInterval(milli_gpus, b - a, price));
    if (__builtin_add_overflow(m.total, charge, &m.total)) {
      return MakeError(ErrorCode::kInvalidArgument, "metered total overflows 64-bit micro-credits");
    }
    m.lines.push_back(ChargeLine{.from_s = a, .to_s = b, .period = k, .announced = true, .price = price,
                                 .charge = charge, .upper_bound = charge});
    return Ok();
  }));
  return m;
}

// ---------------------------------------------------------------------------

Status PricerConfig::Validate() const {
  if (period_s < 1) return MakeError(ErrorCode::kInvalidArgument, "period_s is {}; a price period lasts at least 1 s", period_s);
  if (window_periods < 1 || window_periods > 10'000) {
    return MakeError(ErrorCode::kInvalidArgument, "window_periods is {}; average over 1 to 10000 periods", window_periods);
  }
  if (!(max_step >= 1e-6 && max_step <= kMaxMultiplier)) {
    return MakeError(ErrorCode::kInvalidArgument, "max_step is {}; it must be in [0.000001, 1000]", max_step);
  }
  if (lead_periods < 1 || lead_periods > 10'000) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "lead_periods is {}; it must be 1 to 10000 (1: the current period's price is known)", lead_periods);
  }
  if (protection_s < 0) return MakeError(ErrorCode::kInvalidArgument, "protection_s is {}; it must be >= 0", protection_s);
  if (!std::isfinite(initial_multiplier)) {
    return MakeError(ErrorCode::kInvalidArgument, "initial_multiplier is not a finite number");
  }
  return Ok();
}

Result<DynamicPricer> DynamicPricer::Make(std::string model, const PriceBook& book, PriceCurve curve, PricerConfig config,
                                          std::int64_t origin_s) {
  TIDAL_RETURN_IF_ERROR(config.Validate());
  if (config.initial_multiplier < curve.min_multiplier() || config.initial_multiplier > curve.max_multiplier()) {
    return MakeError(ErrorCode::kInvalidArgument, "initial_multiplier {} is outside the curve's bounds [{}, {}]",
                     config.initial_multiplier, curve.min_multiplier(), curve.max_multiplier());
  }
  DynamicPricer p(std::move(curve));
  p.config_ = config;
  TIDAL_ASSIGN_OR_RETURN(Micros in_floor, book.InFloorRate(model));
  p.bases_[TierIndex(Tier::kGuaranteed)] = TierBase{.base = in_floor, .factor_ppm = kPpmOne};
  for (Tier t : {Tier::kStandard, Tier::kSpot, Tier::kInference}) {
    TIDAL_ASSIGN_OR_RETURN(p.bases_[TierIndex(t)], book.Floating(model, t));
  }
  p.step_ppm_ = ToPpm(config.max_step);
  p.min_ppm_ = ToPpm(p.curve_.min_multiplier());
  p.max_ppm_ = ToPpm(p.curve_.max_multiplier());
  p.history_.model = std::move(model);
  p.history_.origin_s = origin_s;
  p.history_.period_s = config.period_s;
  const std::int64_t initial = std::clamp(ToPpm(config.initial_multiplier), p.min_ppm_, p.max_ppm_);
  for (std::int64_t k = 0; k < config.lead_periods; ++k) {
    TIDAL_ASSIGN_OR_RETURN(Announcement a, p.MakeAnnouncement(k, origin_s, initial, std::nan("")));
    p.history_.entries.push_back(a);
  }
  p.clock_ = origin_s;
  p.held_since_ = origin_s;
  return p;
}

Result<std::array<Micros, kTierCount>> DynamicPricer::PricesAt(std::int64_t multiplier_ppm) const {
  std::array<Micros, kTierCount> out{};
  out[TierIndex(Tier::kGuaranteed)] = bases_[TierIndex(Tier::kGuaranteed)].base;  // never floats
  for (Tier t : {Tier::kStandard, Tier::kSpot, Tier::kInference}) {
    const TierBase& b = bases_[TierIndex(t)];
    TIDAL_ASSIGN_OR_RETURN(out[TierIndex(t)], ApplyMultiplier(b.base, b.factor_ppm, multiplier_ppm));
  }
  return out;
}

Result<Announcement> DynamicPricer::MakeAnnouncement(std::int64_t period, std::int64_t announced_at,
                                                     std::int64_t multiplier_ppm, double avg) const {
  Announcement a;
  a.period = period;
  a.effective_from_s = history_.origin_s + period * config_.period_s;
  a.announced_at_s = announced_at;
  a.multiplier_ppm = multiplier_ppm;
  a.utilisation_avg = avg;
  TIDAL_ASSIGN_OR_RETURN(a.price, PricesAt(multiplier_ppm));
  return a;
}

Status DynamicPricer::ClosePeriod() {
  const std::int64_t end = history_.origin_s + (open_period_ + 1) * config_.period_s;
  if (has_value_) {
    area_ += held_ * static_cast<double>(end - held_since_);
    covered_s_ += end - held_since_;
    held_since_ = end;
  }
  if (covered_s_ > 0) {
    window_.push_back(area_ / static_cast<double>(covered_s_));
    while (static_cast<std::int64_t>(window_.size()) > config_.window_periods) window_.pop_front();
  }
  const std::int64_t prev = history_.entries.back().multiplier_ppm;
  std::int64_t target = prev;
  double avg = std::nan("");
  if (!window_.empty()) {
    double sum = 0;
    for (double u : window_) sum += u;  // oldest first: one fixed order
    avg = sum / static_cast<double>(window_.size());
    target = ToPpm(curve_.Multiplier(avg));
  }
  std::int64_t m = std::clamp(target, prev - step_ppm_, prev + step_ppm_);
  m = std::clamp(m, min_ppm_, max_ppm_);
  TIDAL_ASSIGN_OR_RETURN(Announcement a, MakeAnnouncement(open_period_ + config_.lead_periods, end, m, avg));
  history_.entries.push_back(a);
  area_ = 0;
  covered_s_ = 0;
  ++open_period_;
  return Ok();
}

Status DynamicPricer::AdvanceTo(std::int64_t now_s) {
  if (now_s <= clock_) return Ok();
  const std::int64_t target_period = history_.PeriodOf(now_s);  // the period now_s is in
  if (target_period - open_period_ > kMaxPeriodsPerAdvance) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "pool '{}': the clock jumped from t={} to t={}, {} periods at once; check the time unit (seconds)",
                     history_.model, clock_, now_s, target_period - open_period_);
  }
  while (open_period_ < target_period) TIDAL_RETURN_IF_ERROR(ClosePeriod());
  clock_ = now_s;
  return Ok();
}

Status DynamicPricer::Observe(std::int64_t now_s, double utilisation) {
  if (!(utilisation >= 0 && utilisation <= 1)) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "pool '{}' at t={}: utilisation {} is not in [0, 1] (it is allocated / capacity)", history_.model,
                     now_s, utilisation);
  }
  if (now_s < clock_) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "pool '{}': observation at t={} is before the pricer's clock (t={}); observe in time order",
                     history_.model, now_s, clock_);
  }
  TIDAL_RETURN_IF_ERROR(AdvanceTo(now_s));
  if (has_value_) {
    area_ += held_ * static_cast<double>(now_s - held_since_);
    covered_s_ += now_s - held_since_;
  }
  held_ = utilisation;
  held_since_ = now_s;
  has_value_ = true;
  return Ok();
}

Result<Quote> DynamicPricer::QuoteJob(Tier tier, std::int64_t start_s, std::int64_t duration_s, std::int64_t milli_gpus,
                                      std::int64_t in_floor_milli_gpus) const {
  std::int64_t end_s = 0;
  if (duration_s < 0 || __builtin_add_overflow(start_s, duration_s, &end_s)) {
    return MakeError(ErrorCode::kInvalidArgument, "quote duration {} s is negative or too long", duration_s);
  }
  if (milli_gpus < 0 || in_floor_milli_gpus < 0 || in_floor_milli_gpus > milli_gpus) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "quote for {} milli-GPU with {} in floor: need 0 <= in-floor <= milli-GPU", milli_gpus,
                     in_floor_milli_gpus);
  }
  if (tier == Tier::kGuaranteed && in_floor_milli_gpus != milli_gpus) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "a guaranteed job runs inside its tenant's floor: in-floor milli-GPU ({}) must equal milli-GPU ({})",
                     in_floor_milli_gpus, milli_gpus);
  }
  if (start_s < history_.origin_s) {
    return MakeError(ErrorCode::kInvalidArgument, "pool '{}': quote start t={} is before the market opened (t={})",
                     history_.model, start_s, history_.origin_s);
  }
  Quote q;
  q.model = history_.model;
  q.tier = tier;
  q.start_s = start_s;
  q.duration_s = duration_s;
  q.milli_gpus = milli_gpus;
  q.in_floor_milli_gpus = in_floor_milli_gpus;
  q.horizon_s = history_.horizon_s();

  const auto announced_count = static_cast<std::int64_t>(history_.entries.size());
  const Announcement& last = history_.entries.back();
  const TierBase& b = bases_[TierIndex(tier)];
  // The price of period k as the quote assumes it, and the highest it can be.
  auto price_of = [&](std::int64_t k) -> Result<std::pair<Micros, Micros>> {
    if (k < announced_count) {
      const Micros p = history_.entries[static_cast<std::size_t>(k)].Price(tier);
      return std::pair{p, p};
    }
    if (tier == Tier::kGuaranteed) return std::pair{last.Price(tier), last.Price(tier)};
    const std::int64_t ahead = k - announced_count + 1;
    std::int64_t ub_ppm = max_ppm_;
    if (ahead < (max_ppm_ - last.multiplier_ppm) / step_ppm_ + 1) {
      ub_ppm = std::min(max_ppm_, last.multiplier_ppm + ahead * step_ppm_);
    }
    TIDAL_ASSIGN_OR_RETURN(Micros ub, ApplyMultiplier(b.base, b.factor_ppm, ub_ppm));
    return std::pair{last.Price(tier), ub};
  };
  TIDAL_ASSIGN_OR_RETURN(auto at_start, price_of(history_.PeriodOf(start_s)));
  q.lock = PriceLock{.tier = tier, .start_s = start_s, .ceiling = at_start.first};
  if (__builtin_add_overflow(start_s, config_.protection_s, &q.lock.until_s)) q.lock.until_s = std::numeric_limits<std::int64_t>::max();
  const Micros ub_ceiling = at_start.second;

  auto add = [](Micros& sum, Micros x) -> Status {
    if (__builtin_add_overflow(sum, x, &sum)) {
      return MakeError(ErrorCode::kInvalidArgument, "the quote's total overflows 64-bit micro-credits");
    }
    return Ok();
  };
  const std::int64_t floating = milli_gpus - in_floor_milli_gpus;
  if (floating > 0) {
    TIDAL_RETURN_IF_ERROR(ForEachPiece(history_, start_s, end_s, q.lock.until_s,
                                       [&](std::int64_t k, std::int64_t a, std::int64_t e) -> Status {
      TIDAL_ASSIGN_OR_RETURN(auto p, price_of(k));
      auto [price, ub] = p;
      if (a < q.lock.until_s) {
        price = std::min(price, q.lock.ceiling);
        ub = std::min(ub, ub_ceiling);
      }
      ChargeLine line{.from_s = a, .to_s = e, .period = k, .announced = k < announced_count, .price = price};
      TIDAL_ASSIGN_OR_RETURN(line.charge, ChargeForInterval(floating, e - a, price));
      TIDAL_ASSIGN_OR_RETURN(line.upper_bound, ChargeForInterval(floating, e - a, ub));
      if (!line.announced) q.beyond_horizon_s += e - a;
      TIDAL_RETURN_IF_ERROR(add(q.total, line.charge));
      TIDAL_RETURN_IF_ERROR(add(q.upper_bound_total, line.upper_bound));
      q.lines.push_back(line);
      return Ok();
    }));
  }
  if (in_floor_milli_gpus > 0) {
    const Micros rate = bases_[TierIndex(Tier::kGuaranteed)].base;
    TIDAL_RETURN_IF_ERROR(ForEachPiece(history_, start_s, end_s, std::nullopt,
                                       [&](std::int64_t k, std::int64_t a, std::int64_t e) -> Status {
      ChargeLine line{.from_s = a, .to_s = e, .period = k, .announced = k < announced_count, .price = rate};
      TIDAL_ASSIGN_OR_RETURN(line.charge, ChargeForInterval(in_floor_milli_gpus, e - a, rate));
      line.upper_bound = line.charge;
      TIDAL_RETURN_IF_ERROR(add(q.in_floor_total, line.charge));
      q.in_floor_lines.push_back(line);
      return Ok();
    }));
  }
  TIDAL_RETURN_IF_ERROR(add(q.total, q.in_floor_total));
  TIDAL_RETURN_IF_ERROR(add(q.upper_bound_total, q.in_floor_total));
  return q;
}

// ---------------------------------------------------------------------------

Status MarketPrices::AddPool(const std::string& model, std::int64_t origin_s) {
  if (pools_.contains(model)) return MakeError(ErrorCode::kInvalidArgument, "pool '{}' is added twice", model);
  TIDAL_ASSIGN_OR_RETURN(DynamicPricer p, DynamicPricer::Make(model, book_, curve_, config_, origin_s));
  pools_.emplace(model, std::move(p));
  return Ok();
}

Result<DynamicPricer*> MarketPrices::Find(std::string_view model) {
  auto it = pools_.find(model);
  if (it == pools_.end()) return MakeError(ErrorCode::kNotFound, "no price pool for GPU model '{}'; add it first", model);
  return &it->second;
}

const DynamicPricer* MarketPrices::pool(std::string_view model) const {
  auto it = pools_.find(model);
  return it == pools_.end() ? nullptr : &it->second;
}

Status MarketPrices::Observe(std::string_view model, std::int64_t now_s, double utilisation) {
  TIDAL_ASSIGN_OR_RETURN(DynamicPricer * p, Find(model));
  return p->Observe(now_s, utilisation);
}

Status MarketPrices::AdvanceTo(std::int64_t now_s) {
  for (auto& [_, p] : pools_) TIDAL_RETURN_IF_ERROR(p.AdvanceTo(now_s));
  return Ok();
}

Result<Micros> MarketPrices::PriceAt(std::string_view model, Tier tier, std::int64_t t) const {
  const DynamicPricer* p = pool(model);
  if (!p) return MakeError(ErrorCode::kNotFound, "no price pool for GPU model '{}'", model);
  return p->PriceAt(tier, t);
}

Result<Quote> MarketPrices::QuoteJob(std::string_view model, Tier tier, std::int64_t start_s, std::int64_t duration_s,
                                     std::int64_t milli_gpus, std::int64_t in_floor_milli_gpus) const {
  const DynamicPricer* p = pool(model);
  if (!p) return MakeError(ErrorCode::kNotFound, "no price pool for GPU model '{}'", model);
  return p->QuoteJob(tier, start_s, duration_s, milli_gpus, in_floor_milli_gpus);
}

}  // namespace tidal::market

// The market policy file (data/market/default.yaml, docs/market.md) and the
// strict decimal parser for credits that the file and the CLI share.
//
//   version: 1
//   market:
//     prices:
//       base: {H100: 4.0, "*": 1.0}              # credits per GPU-hour
//       tier_factors: {standard: 1.0, spot: 0.3, inference: 1.5}
//       overrides: {H100: {spot: 1.5}}           # optional exact tier base (no factor)
//       in_floor: {H100: 3.2, "*": 0.8}          # fixed rate inside the floor
//     dynamic:
//       curve: [{utilisation: 0.0, multiplier: 0.5}, ...]
//       min_multiplier: 0.5
//       max_multiplier: 2.0
//       initial_multiplier: 1.0
//       period_s: 3600
//       window_periods: 3
//       max_step: 0.1
//       lead_periods: 2
//       protection_s: 21600
//     metering:
//       lender_share_ppm: 500000
//       recall_compensation_factor: 1.0
//     hoarding:
//       activity_threshold: 0.05
//       idle_power_factor: 1.5
//       idle_period_s: 1800
//       grace_s: 1800
//       fee_interval_s: 3600
//       fee_start: 0.5                           # credits per GPU-hour
//       fee_growth: 0.5
//       reclaim_after_s: 14400
//       max_gap_s: 300
//
// Every section and field is optional; what is left out keeps its default. A
// map that is given (base, tier_factors, overrides, in_floor, curve) replaces
// the default one whole. Unknown keys are errors (a typo must not silently
// fall back to a default). Decimal fields take at most 6 decimals and no
// exponent; whole-second fields take digits only.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"
#include "market/hoarding.h"
#include "market/pricing.h"

namespace tidal::market {

struct MarketConfig {
  PriceBook book = PriceBook::Default();
  PriceCurve curve = PriceCurve::Default();
  PricerConfig pricer;
  std::int64_t lender_share_ppm = 500'000;          // the lender's share of a borrower's charge
  std::int64_t recall_compensation_ppm = 1'000'000; // × the lost work's price
  HoardingConfig hoarding;
  std::string source = "built-in defaults";

  bool SamePolicy(const MarketConfig& o) const {  // everything but the source
    return book == o.book && curve == o.curve && pricer == o.pricer && lender_share_ppm == o.lender_share_ppm &&
           recall_compensation_ppm == o.recall_compensation_ppm && hoarding == o.hoarding;
  }
};

// The defaults in code; data/market/default.yaml spells out the same values.
MarketConfig DefaultMarketConfig();

Result<MarketConfig> ParseMarketYaml(const std::string& text, const std::string& source);
Result<MarketConfig> ReadMarketFile(const std::string& path);

enum class Sign { kNonNegative, kAny };

// A decimal with at most 6 decimals as an integer count of millionths:
// "2.5" → 2500000. Digits, at most one '.', digits on both sides of it; a
// leading '-' only with Sign::kAny; no '+', spaces, exponents, separators,
// hex, NaN or infinity; |value| <= 9223372036854.775807. No floating point
// is involved, so every accepted string maps to exactly one integer.
Result<std::int64_t> ParseFixed6(std::string_view text, Sign sign = Sign::kNonNegative);

// Credits → micro-credits, by ParseFixed6 (errors say "credits").
Result<Micros> ParseCredits(std::string_view text, Sign sign = Sign::kNonNegative);

// Micro-credits → credits with exactly 6 decimals: 2500000 → "2.500000",
// -1 → "-0.000001". Exact for every int64, ParseCredits' inverse.
std::string FormatCredits(Micros micros);

}  // namespace tidal::market

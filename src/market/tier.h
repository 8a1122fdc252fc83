// SLA tiers of the compute market (docs/market.md, "Tiers").
//
//   guaranteed  inside the tenant's floor; never preempted by others; charged
//               the fixed in-floor rate, which does not float.
//   standard    may borrow past the floor; borrowed capacity is reclaimable by
//               its owner; charged the floating price.
//   spot        preemptible at any time; discounted floating price. A tenant
//               over its budget drops to spot.
//   inference   latency tier for serving; floating price with a premium.
//
// The tier is also an index (TierIndex) into per-tier arrays, so the order of
// the enumerators is part of the interface: append, never reorder.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>

#include "common/result.h"

namespace tidal::market {

enum class Tier { kGuaranteed, kStandard, kSpot, kInference };

inline constexpr std::array<Tier, 4> kAllTiers = {Tier::kGuaranteed, Tier::kStandard, Tier::kSpot, Tier::kInference};
inline constexpr std::size_t kTierCount = kAllTiers.size();

constexpr std::size_t TierIndex(Tier t) { return static_cast<std::size_t>(t); }

// "guaranteed", "standard", "spot", "inference".
const char* TierName(Tier t);

// The exact lower-case name; an unknown name is an error that lists the valid
// ones.
Result<Tier> ParseTier(std::string_view name);

}  // namespace tidal::market

#include "market/tier.h"

namespace tidal::market {

const char* TierName(Tier t) {
  switch (t) {
    case Tier::kGuaranteed:
      return "guaranteed";
    case Tier::kStandard:
      return "standard";
    case Tier::kSpot:
      return "spot";
    case Tier::kInference:
      return "inference";
  }
  return "?";
}

Result<Tier> ParseTier(std::string_view name) {
  for (Tier t : kAllTiers)
    if (name == TierName(t)) return t;
  return MakeError(ErrorCode::kInvalidArgument,
                   "unknown tier '{}'; valid tiers: guaranteed, standard, spot, inference", name);
}

}  // namespace tidal::market

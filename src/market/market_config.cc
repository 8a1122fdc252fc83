#include "market/market_config.h"

#include <charconv>
#include <initializer_list>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "common/csv.h"
#include "common/strings.h"

namespace tidal::market {

// ---------------------------------------------------------------------------
// Decimals

Result<std::int64_t> ParseFixed6(std::string_view text, Sign sign) {
  const std::string shown(text);
  if (text.empty()) return MakeError(ErrorCode::kParse, "an empty number; write digits, e.g. 2.5");
  {
    std::string_view body = text;
    if (body.front() == '-' || body.front() == '+') body.remove_prefix(1);
    const std::string lower = AsciiLower(body);
    if (lower == "nan" || lower == ".nan" || lower == "inf" || lower == ".inf" || lower == "infinity") {
      return MakeError(ErrorCode::kParse, "'{}' is not a finite number; write digits, e.g. 2.5", shown);
    }
  }
  bool negative = false;
  if (text.front() == '+') {
    return MakeError(ErrorCode::kParse, "'{}': write the number without '+'", shown);
  }
  if (text.front() == '-') {
    if (sign == Sign::kNonNegative) {
      return MakeError(ErrorCode::kParse, "'{}' is negative; only amounts >= 0 are allowed here", shown);
    }
    negative = true;
    text.remove_prefix(1);
  }
  if (text.find_first_of("eE") != std::string_view::npos &&
      text.find_first_not_of("0123456789.eE+-") == std::string_view::npos) {
    return MakeError(ErrorCode::kParse, "'{}': exponents are not allowed; write all the digits (1e3 = 1000)", shown);
  }
  const auto dot = text.find('.');
  const std::string_view whole = text.substr(0, dot);
  const std::string_view frac = dot == std::string_view::npos ? std::string_view() : text.substr(dot + 1);
  auto digits = [](std::string_view s) {
    if (s.empty()) return false;
    for (char c : s)
      if (c < '0' || c > '9') return false;
    return true;
  };
  if (!digits(whole) || (dot != std::string_view::npos && !digits(frac))) {
    return MakeError(ErrorCode::kParse,
                     "'{}' is not a decimal number; write digits with at most one '.', e.g. 2.5 or 0.000001", shown);
  }
  if (frac.size() > 6) {
    return MakeError(ErrorCode::kParse, "'{}' has {} decimals; at most 6 are allowed (0.000001 is the smallest unit)",
                     shown, frac.size());
  }
  constexpr std::uint64_t kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  std::uint64_t v = 0;
  bool overflow = false;
  auto push = [&](char c) {
    if (v > (kMax - static_cast<std::uint64_t>(c - '0')) / 10) overflow = true;
    else v = v * 10 + static_cast<std::uint64_t>(c - '0');
  };
  for (char c : whole) push(c);
  for (char c : frac) push(c);
  for (std::size_t i = frac.size(); i < 6; ++i) push('0');
  if (overflow) {
    return MakeError(ErrorCode::kParse, "'{}' is too large; the most is 9223372036854.775807", shown);
  }
  const auto value = static_cast<std::int64_t>(v);
  return negative ? -value : value;
}

Result<Micros> ParseCredits(std::string_view text, Sign sign) {
  auto v = ParseFixed6(text, sign);
  if (!v) return MakeError(ErrorCode::kParse, "credits: {}", v.error().message);
  return *v;
}

std::string FormatCredits(Micros micros) {
  const bool neg = micros < 0;
  const unsigned long long u =
      neg ? 0ULL - static_cast<unsigned long long>(micros) : static_cast<unsigned long long>(micros);
  return fmt::format("{}{}.{:06}", neg ? "-" : "", u / 1'000'000ULL, u % 1'000'000ULL);
}

MarketConfig DefaultMarketConfig() { return MarketConfig{}; }

namespace {

// Millionths as a short decimal for messages: 100000000 → "100", 500000 → "0.5".
std::string Decimal(std::int64_t v) {
  std::string s = FormatCredits(v);
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s;
}

}  // namespace

// ---------------------------------------------------------------------------
// The file

namespace {

// A map entry: the key is kept for messages about an empty value (yaml-cpp
// marks a null value at the line after its key).
struct Field {
  YAML::Node key;
  YAML::Node value;
};

// The entry `name` of map n (present: the caller checked n[name]).
Field Get(const YAML::Node& n, const char* name) {
  for (const auto& kv : n)
    if (kv.first.Scalar() == name) return Field{kv.first, kv.second};
  return Field{n, n[name]};
}

class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  std::string Where(const YAML::Node& n) const { return fmt::format("{}:{}", source_, n.Mark().line + 1); }

  template <typename... Args>
  std::unexpected<Error> Fail(const YAML::Node& n, fmt::format_string<Args...> f, Args&&... args) const {
    return std::unexpected(Error{ErrorCode::kParse, Where(n) + ": " + fmt::format(f, std::forward<Args>(args)...)});
  }

  // A map whose keys are all in `known`.
  Status Keys(const YAML::Node& n, const std::string& field, std::initializer_list<const char*> known) const {
    if (!n.IsMap()) return Fail(n, "{} must be a map of {}", field, Join(known));
    for (const auto& kv : n) {
      const std::string k = kv.first.Scalar();
      bool ok = false;
      for (const char* name : known) ok = ok || k == name;
      if (!ok) return Fail(kv.first, "{}: unknown key '{}' (known: {}); check the spelling", field, k, Join(known));
    }
    return Ok();
  }

  Result<std::string> Scalar(const Field& f, const std::string& field, const char* example) const {
    const YAML::Node& n = f.value;
    if (!n.IsScalar() || n.Scalar().empty()) {
      return Fail(n.IsNull() ? f.key : n, "{} must be a single value{}; write e.g. {}", field,
                  n.IsNull() ? " (it is empty)" : "", example);
    }
    return n.Scalar();
  }

  // Credits per GPU-hour in [0, kMaxPricePerGpuHour].
  Result<Micros> Price(const Field& f, const std::string& field) const {
    const YAML::Node& n = f.value;
    TIDAL_ASSIGN_OR_RETURN(std::string s, Scalar(f, field, "2.5"));
    auto v = ParseFixed6(s);
    if (!v) return Fail(n, "{}: {} (a price in credits per GPU-hour)", field, v.error().message);
    if (*v > kMaxPricePerGpuHour) {
      return Fail(n, "{}: {} credits per GPU-hour is above the limit of 1000000; lower it", field, s);
    }
    return *v;
  }

  // A decimal in millionths, inside [lo, hi] (also millionths).
  Result<std::int64_t> Fixed(const Field& f, const std::string& field, std::int64_t lo, std::int64_t hi,
                             bool lo_open, const char* example) const {
    const YAML::Node& n = f.value;
    TIDAL_ASSIGN_OR_RETURN(std::string s, Scalar(f, field, example));
    auto v = ParseFixed6(s);
    if (!v) return Fail(n, "{}: {}", field, v.error().message);
    if (*v < lo || (lo_open && *v == lo) || *v > hi) {
      return Fail(n, "{}: {} is outside {}{}, {}]; write e.g. {}", field, s, lo_open ? "(" : "[", Decimal(lo), Decimal(hi),
                  example);
    }
    return *v;
  }

  Result<double> Ratio(const Field& f, const std::string& field, std::int64_t lo, std::int64_t hi, bool lo_open,
                       const char* example) const {
    TIDAL_ASSIGN_OR_RETURN(std::int64_t v, Fixed(f, field, lo, hi, lo_open, example));
    return static_cast<double>(v) / static_cast<double>(kPpmOne);
  }

  // A whole number in [lo, hi].
  Result<std::int64_t> Int(const Field& f, const std::string& field, std::int64_t lo, std::int64_t hi,
                           const char* example) const {
    const YAML::Node& n = f.value;
    TIDAL_ASSIGN_OR_RETURN(std::string s, Scalar(f, field, example));
    std::int64_t v = 0;
    if (s.size() > 1 && s[0] == '-' && s.find_first_not_of("0123456789", 1) == std::string::npos) {
      return Fail(n, "{}: {} is negative; it must be in [{}, {}]", field, s, lo, hi);
    }
    const bool digits = s.find_first_not_of("0123456789") == std::string::npos;
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (!digits || ec == std::errc::invalid_argument || ptr != s.data() + s.size()) {
      return Fail(n, "{}: '{}' is not a whole number (digits only); write e.g. {}", field, s, example);
    }
    if (ec == std::errc::result_out_of_range || v < lo || v > hi) {
      return Fail(n, "{}: {} is outside [{}, {}]; write e.g. {}", field, s, lo, hi, example);
    }
    return v;
  }

  // model → credits per GPU-hour.
  Result<PriceBook::ModelMap> Models(const YAML::Node& n, const std::string& field) const {
    if (!n.IsMap() || n.size() == 0) {
      return Fail(n, "{} maps GPU models to credits per GPU-hour, e.g. {{H100: 4.0, \"*\": 1.0}}", field);
    }
    PriceBook::ModelMap out;
    for (const auto& kv : n) {
      const std::string model = kv.first.Scalar();
      if (model.empty()) return Fail(kv.first, "{}: a GPU model name is empty", field);
      TIDAL_ASSIGN_OR_RETURN(Micros p, Price(Field{kv.first, kv.second}, field + "." + model));
      if (!out.emplace(model, p).second) return Fail(kv.first, "{}: model '{}' is given twice", field, model);
    }
    return out;
  }

  Result<Tier> FloatingTier(const YAML::Node& key, const std::string& field, const char* instead) const {
    const std::string name = key.Scalar();
    auto t = ParseTier(name);
    if (!t) return Fail(key, "{}: {}", field, t.error().message);
    if (*t == Tier::kGuaranteed) {
      return Fail(key, "{}: guaranteed capacity is charged the in-floor rate, which does not float; {}", field, instead);
    }
    return *t;
  }

  Status Prices(const YAML::Node& n, PriceBook& book) const {
    TIDAL_RETURN_IF_ERROR(Keys(n, "market.prices", {"base", "tier_factors", "overrides", "in_floor"}));
    if (n["base"]) {
      TIDAL_ASSIGN_OR_RETURN(book.base, Models(n["base"], "market.prices.base"));
    }
    if (n["in_floor"]) {
      TIDAL_ASSIGN_OR_RETURN(book.in_floor, Models(n["in_floor"], "market.prices.in_floor"));
    }
    if (const YAML::Node f = n["tier_factors"]) {
      if (!f.IsMap()) return Fail(f, "market.prices.tier_factors maps tiers to factors, e.g. {{spot: 0.3}}");
      book.tier_factor_ppm.clear();
      for (const auto& kv : f) {
        TIDAL_ASSIGN_OR_RETURN(Tier t, FloatingTier(kv.first, "market.prices.tier_factors",
                                                    "remove it and set market.prices.in_floor"));
        TIDAL_ASSIGN_OR_RETURN(std::int64_t ppm, Fixed(Field{kv.first, kv.second}, fmt::format("market.prices.tier_factors.{}", TierName(t)),
                                                       0, 100 * kPpmOne, true, "0.3"));
        if (!book.tier_factor_ppm.emplace(t, ppm).second) {
          return Fail(kv.first, "market.prices.tier_factors: tier '{}' is given twice", TierName(t));
        }
      }
      for (Tier t : {Tier::kStandard, Tier::kSpot, Tier::kInference}) {
        if (!book.tier_factor_ppm.contains(t)) {
          return Fail(f, "market.prices.tier_factors: no factor for {}; give standard, spot and inference", TierName(t));
        }
      }
    }
    if (const YAML::Node o = n["overrides"]) {
      if (!o.IsMap()) return Fail(o, "market.prices.overrides maps models to {{TIER: credits}}, e.g. {{H100: {{spot: 1.5}}}}");
      book.overrides.clear();
      for (const auto& kv : o) {
        const std::string model = kv.first.Scalar();
        const std::string field = "market.prices.overrides." + model;
        if (!kv.second.IsMap()) return Fail(kv.second, "{} maps tiers to credits per GPU-hour, e.g. {{spot: 1.5}}", field);
        auto& tiers = book.overrides[model];
        for (const auto& tv : kv.second) {
          TIDAL_ASSIGN_OR_RETURN(Tier t, FloatingTier(tv.first, field, "set market.prices.in_floor instead"));
          TIDAL_ASSIGN_OR_RETURN(Micros p, Price(Field{tv.first, tv.second}, fmt::format("{}.{}", field, TierName(t))));
          if (!tiers.emplace(t, p).second) return Fail(tv.first, "{}: tier '{}' is given twice", field, TierName(t));
        }
      }
    }
    if (auto st = book.Validate(); !st) {
      return Fail(n, "market.prices: {}", st.error().message);
    }
    return Ok();
  }

  Status Dynamic(const YAML::Node& n, MarketConfig& c) const {
    TIDAL_RETURN_IF_ERROR(Keys(n, "market.dynamic",
                               {"curve", "min_multiplier", "max_multiplier", "initial_multiplier", "period_s",
                                "window_periods", "max_step", "lead_periods", "protection_s"}));
    constexpr std::int64_t kMaxMult = 1000 * kPpmOne;
    double lo = c.curve.min_multiplier(), hi = c.curve.max_multiplier();
    if (n["min_multiplier"]) {
      TIDAL_ASSIGN_OR_RETURN(lo, Ratio(Get(n, "min_multiplier"), "market.dynamic.min_multiplier", 0, kMaxMult, true, "0.5"));
    }
    if (n["max_multiplier"]) {
      TIDAL_ASSIGN_OR_RETURN(hi, Ratio(Get(n, "max_multiplier"), "market.dynamic.max_multiplier", 0, kMaxMult, true, "2.0"));
    }
    if (lo > hi) {
      return Fail(n["min_multiplier"] ? n["min_multiplier"] : n, "market.dynamic: min_multiplier {} is above max_multiplier {}; swap them",
                  lo, hi);
    }
    std::vector<CurvePoint> points = c.curve.points();
    if (const YAML::Node cv = n["curve"]) {
      if (!cv.IsSequence() || cv.size() == 0) {
        return Fail(cv, "market.dynamic.curve lists points, e.g. [{{utilisation: 0.0, multiplier: 0.5}}, ...]");
      }
      points.clear();
      for (std::size_t i = 0; i < cv.size(); ++i) {
        const YAML::Node p = cv[i];
        const std::string field = fmt::format("market.dynamic.curve point {}", i + 1);
        TIDAL_RETURN_IF_ERROR(Keys(p, field, {"utilisation", "multiplier"}));
        if (!p["utilisation"] || !p["multiplier"]) return Fail(p, "{} needs utilisation and multiplier", field);
        CurvePoint pt;
        TIDAL_ASSIGN_OR_RETURN(pt.utilisation, Ratio(Get(p, "utilisation"), field + " utilisation", 0, kPpmOne, false, "0.5"));
        TIDAL_ASSIGN_OR_RETURN(pt.multiplier, Ratio(Get(p, "multiplier"), field + " multiplier", 0, kMaxMult, true, "1.0"));
        if (!points.empty() && !(pt.utilisation > points.back().utilisation)) {
          return Fail(p, "{}: utilisation {} is not above point {}'s ({}); list the points in increasing utilisation",
                      field, pt.utilisation, i, points.back().utilisation);
        }
        if (pt.multiplier < lo || pt.multiplier > hi) {
          return Fail(p, "{}: multiplier {} is outside [min_multiplier {}, max_multiplier {}]; move the point or widen the bounds",
                      field, pt.multiplier, lo, hi);
        }
        points.push_back(pt);
      }
    }
    auto curve = PriceCurve::Make(points, lo, hi);
    if (!curve) return Fail(n["curve"] ? n["curve"] : n, "market.dynamic: {}", curve.error().message);
    c.curve = *curve;

    PricerConfig& pc = c.pricer;
    constexpr std::int64_t kYear = 366LL * 86400;
    if (n["period_s"]) {
      TIDAL_ASSIGN_OR_RETURN(pc.period_s, Int(Get(n, "period_s"), "market.dynamic.period_s", 1, kYear, "3600"));
    }
    if (n["window_periods"]) {
      TIDAL_ASSIGN_OR_RETURN(pc.window_periods, Int(Get(n, "window_periods"), "market.dynamic.window_periods", 1, 10000, "3"));
    }
    if (n["max_step"]) {
      TIDAL_ASSIGN_OR_RETURN(pc.max_step, Ratio(Get(n, "max_step"), "market.dynamic.max_step", 0, kMaxMult, true, "0.1"));
    }
    if (n["lead_periods"]) {
      TIDAL_ASSIGN_OR_RETURN(pc.lead_periods, Int(Get(n, "lead_periods"), "market.dynamic.lead_periods", 1, 10000, "2"));
    }
    if (n["protection_s"]) {
      TIDAL_ASSIGN_OR_RETURN(pc.protection_s, Int(Get(n, "protection_s"), "market.dynamic.protection_s", 0, 10 * kYear, "21600"));
    }
    if (n["initial_multiplier"]) {
      TIDAL_ASSIGN_OR_RETURN(pc.initial_multiplier,
                             Ratio(Get(n, "initial_multiplier"), "market.dynamic.initial_multiplier", 0, kMaxMult, true, "1.0"));
    }
    if (pc.initial_multiplier < lo || pc.initial_multiplier > hi) {
      return Fail(n["initial_multiplier"] ? n["initial_multiplier"] : n,
                  "market.dynamic.initial_multiplier {} is outside [min_multiplier {}, max_multiplier {}]; bring it inside",
                  pc.initial_multiplier, lo, hi);
    }
    if (auto st = pc.Validate(); !st) return Fail(n, "market.dynamic: {}", st.error().message);
    return Ok();
  }

  Status Metering(const YAML::Node& n, MarketConfig& c) const {
    TIDAL_RETURN_IF_ERROR(Keys(n, "market.metering", {"lender_share_ppm", "recall_compensation_factor"}));
    if (const YAML::Node s = n["lender_share_ppm"]) {
      TIDAL_ASSIGN_OR_RETURN(std::string text, Scalar(Get(n, "lender_share_ppm"), "market.metering.lender_share_ppm", "500000"));
      if (text.find('.') != std::string::npos) {
        return Fail(s, "market.metering.lender_share_ppm: '{}' is parts per million, a whole number in [0, 1000000] "
                       "(500000 = half)", text);
      }
      TIDAL_ASSIGN_OR_RETURN(c.lender_share_ppm, Int(Get(n, "lender_share_ppm"), "market.metering.lender_share_ppm", 0,
                                                     kPpmOne, "500000 (parts per million of the borrower's charge: half)"));
    }
    if (n["recall_compensation_factor"]) {
      TIDAL_ASSIGN_OR_RETURN(c.recall_compensation_ppm,
                             Fixed(Get(n, "recall_compensation_factor"), "market.metering.recall_compensation_factor", 0, 100 * kPpmOne, false, "1.0"));
    }
    return Ok();
  }

  Status Hoarding(const YAML::Node& n, HoardingConfig& h) const {
    TIDAL_RETURN_IF_ERROR(Keys(n, "market.hoarding",
                               {"activity_threshold", "idle_power_factor", "idle_period_s", "grace_s", "fee_interval_s",
                                "fee_start", "fee_growth", "reclaim_after_s", "max_gap_s"}));
    constexpr std::int64_t kMaxS = 1'000'000'000;
    if (n["activity_threshold"]) {
      TIDAL_ASSIGN_OR_RETURN(h.activity_threshold,
                             Ratio(Get(n, "activity_threshold"), "market.hoarding.activity_threshold", 0, kPpmOne, true, "0.05"));
    }
    if (n["idle_power_factor"]) {
      TIDAL_ASSIGN_OR_RETURN(h.idle_power_factor, Ratio(Get(n, "idle_power_factor"), "market.hoarding.idle_power_factor", 0,
                                                        1000 * kPpmOne, true, "1.5"));
    }
    struct Dur {
      const char* key;
      std::int64_t* dst;
      std::int64_t min;
      const char* example;
    };
    for (const Dur& d : {Dur{"idle_period_s", &h.idle_period_s, 0, "1800"}, Dur{"grace_s", &h.grace_s, 0, "1800"},
                         Dur{"fee_interval_s", &h.fee_interval_s, 1, "3600"},
                         Dur{"reclaim_after_s", &h.reclaim_after_s, 0, "14400"}, Dur{"max_gap_s", &h.max_gap_s, 1, "300"}}) {
      if (n[d.key]) {
        TIDAL_ASSIGN_OR_RETURN(*d.dst, Int(Get(n, d.key), std::string("market.hoarding.") + d.key, d.min, kMaxS, d.example));
      }
    }
    if (n["fee_start"]) {
      TIDAL_ASSIGN_OR_RETURN(h.fee_start, Price(Get(n, "fee_start"), "market.hoarding.fee_start"));
    }
    if (n["fee_growth"]) {
      TIDAL_ASSIGN_OR_RETURN(h.fee_growth, Price(Get(n, "fee_growth"), "market.hoarding.fee_growth"));
    }
    if (auto st = h.Validate(); !st) return Fail(n, "market.hoarding: {}", st.error().message);
    return Ok();
  }

 private:
  static std::string Join(std::initializer_list<const char*> names) {
    std::string out;
    for (const char* n : names) out += (out.empty() ? "" : ", ") + std::string(n);
    return out;
  }
  std::string source_;
};

}  // namespace

Result<MarketConfig> ParseMarketYaml(const std::string& text, const std::string& source) {
  YAML::Node doc;
  try {
    doc = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return MakeError(ErrorCode::kParse, "{}:{}: not valid YAML: {}", source, e.mark.line + 1, e.msg);
  }
  MarketConfig c;
  c.source = source;
  const Reader r(source);
  try {
    if (!doc.IsMap() || !doc["version"] || !doc["version"].IsScalar() || doc["version"].Scalar() != "1") {
      return MakeError(ErrorCode::kParse, "{}:1: a market file starts with 'version: 1'", source);
    }
    TIDAL_RETURN_IF_ERROR(r.Keys(doc, "the top level", {"version", "market"}));
    const YAML::Node m = doc["market"];
    if (!m || m.IsNull()) {
      return MakeError(ErrorCode::kParse, "{}: no 'market:' section; put prices, dynamic, metering and hoarding under it",
                       source);
    }
    TIDAL_RETURN_IF_ERROR(r.Keys(m, "market", {"prices", "dynamic", "metering", "hoarding"}));
    if (m["prices"]) TIDAL_RETURN_IF_ERROR(r.Prices(m["prices"], c.book));
    if (m["dynamic"]) TIDAL_RETURN_IF_ERROR(r.Dynamic(m["dynamic"], c));
    if (m["metering"]) TIDAL_RETURN_IF_ERROR(r.Metering(m["metering"], c));
    if (m["hoarding"]) TIDAL_RETURN_IF_ERROR(r.Hoarding(m["hoarding"], c.hoarding));
  } catch (const YAML::Exception& e) {
    return MakeError(ErrorCode::kParse, "{}:{}: {}", source, e.mark.line + 1, e.msg);
  }
  return c;
}

Result<MarketConfig> ReadMarketFile(const std::string& path) {
  TIDAL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  return ParseMarketYaml(text, path);
}

}  // namespace tidal::market

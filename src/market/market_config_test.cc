// The market file and the credits parser: tables of good and bad strings with
// the values worked out by hand; a table of bad files, each asserted as the
// parts of the message a person needs (file:line, the field, what to do);
// the shipped default.yaml equals the defaults in code; a full example.
#include "market/market_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cctype>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

namespace tidal::market {
namespace {

using ::testing::HasSubstr;

constexpr Micros kMax64 = std::numeric_limits<Micros>::max();
constexpr Micros kMin64 = std::numeric_limits<Micros>::min();

// --- ParseCredits / FormatCredits ----------------------------------------------

struct CreditsRow {
  std::string text;
  Sign sign;
  std::optional<Micros> value;  // nullopt: an error containing `error`
  std::string error;
};
void PrintTo(const CreditsRow& r, std::ostream* os) { *os << "'" << r.text << "'"; }

const std::vector<CreditsRow> kCredits = {
    {"2.5", Sign::kNonNegative, 2'500'000, ""},
    {"0", Sign::kNonNegative, 0, ""},
    {"0.0", Sign::kNonNegative, 0, ""},
    {"0.000001", Sign::kNonNegative, 1, ""},
    {"1.234567", Sign::kNonNegative, 1'234'567, ""},
    {"12", Sign::kNonNegative, 12'000'000, ""},
    {"007.5", Sign::kNonNegative, 7'500'000, ""},
    {"9223372036854.775807", Sign::kNonNegative, kMax64, ""},
    {"-1.5", Sign::kAny, -1'500'000, ""},
    {"-0.000001", Sign::kAny, -1, ""},
    {"-9223372036854.775807", Sign::kAny, -kMax64, ""},
    {"9223372036854.775808", Sign::kNonNegative, std::nullopt, "too large"},
    {"12345678901234567890", Sign::kNonNegative, std::nullopt, "too large"},
    {"-9223372036854.775808", Sign::kAny, std::nullopt, "too large"},
    {"1.2345678", Sign::kNonNegative, std::nullopt, "7 decimals"},
    {"1e3", Sign::kNonNegative, std::nullopt, "exponents"},
    {"2.5E-1", Sign::kNonNegative, std::nullopt, "exponents"},
    {"nan", Sign::kNonNegative, std::nullopt, "not a finite number"},
    {"NaN", Sign::kAny, std::nullopt, "not a finite number"},
    {"inf", Sign::kNonNegative, std::nullopt, "not a finite number"},
    {".inf", Sign::kNonNegative, std::nullopt, "not a finite number"},
    {"-Infinity", Sign::kAny, std::nullopt, "not a finite number"},
    {"", Sign::kNonNegative, std::nullopt, "empty"},
    {"-1", Sign::kNonNegative, std::nullopt, "negative"},
    {"-0.5", Sign::kNonNegative, std::nullopt, "negative"},
    {"+1", Sign::kAny, std::nullopt, "without '+'"},
    {"-", Sign::kAny, std::nullopt, "not a decimal number"},
    {" 1", Sign::kNonNegative, std::nullopt, "not a decimal number"},
    {"1 ", Sign::kNonNegative, std::nullopt, "not a decimal number"},
    {"1.", Sign::kNonNegative, std::nullopt, "not a decimal number"},
    {".5", Sign::kNonNegative, std::nullopt, "not a decimal number"},
    {"1,5", Sign::kNonNegative, std::nullopt, "not a decimal number"},
    {"1_000", Sign::kNonNegative, std::nullopt, "not a decimal number"},
    {"0x10", Sign::kNonNegative, std::nullopt, "not a decimal number"},
    {"1.5.2", Sign::kNonNegative, std::nullopt, "not a decimal number"},
    {"--1", Sign::kAny, std::nullopt, "not a decimal number"},
    {"2.5cr", Sign::kNonNegative, std::nullopt, "not a decimal number"},
};

class CreditsTable : public ::testing::TestWithParam<CreditsRow> {};
TEST_P(CreditsTable, Parse) {
  const CreditsRow& r = GetParam();
  auto v = ParseCredits(r.text, r.sign);
  if (r.value) {
    ASSERT_TRUE(v.has_value()) << v.error().message;
    EXPECT_EQ(*v, *r.value);
  } else {
    ASSERT_FALSE(v.has_value()) << *v;
    EXPECT_THAT(v.error().message, HasSubstr(r.error));
    EXPECT_THAT(v.error().message, HasSubstr("credits"));
  }
}
INSTANTIATE_TEST_SUITE_P(Rows, CreditsTable, ::testing::ValuesIn(kCredits));

TEST(FormatCredits, SixDecimalsExact) {
  EXPECT_EQ(FormatCredits(2'500'000), "2.500000");
  EXPECT_EQ(FormatCredits(0), "0.000000");
  EXPECT_EQ(FormatCredits(1), "0.000001");
  EXPECT_EQ(FormatCredits(-1), "-0.000001");
  EXPECT_EQ(FormatCredits(-1'500'000), "-1.500000");
  EXPECT_EQ(FormatCredits(123'456'789), "123.456789");
  EXPECT_EQ(FormatCredits(kMax64), "9223372036854.775807");
  EXPECT_EQ(FormatCredits(kMin64), "-9223372036854.775808");
}

RC_GTEST_PROP(FormatCredits, ParseCreditsInvertsIt, ()) {
  const Micros m = *rc::gen::inRange<Micros>(kMin64 + 1, kMax64);
  RC_ASSERT(*ParseCredits(FormatCredits(m), Sign::kAny) == m);
}

// --- the file ------------------------------------------------------------------

struct BadRow {
  std::string what;
  std::string text;
  std::vector<std::string> must_contain;
};
void PrintTo(const BadRow& row, std::ostream* os) { *os << row.what; }

// Lines 1-2; the rows' own lines start at 3.
const std::string kHead = "version: 1\nmarket:\n";

const std::vector<BadRow> kBad = {
    {"not YAML", "version: 1\nmarket: [\n", {"m.yaml:", "not valid YAML"}},
    {"missing version", "market:\n  prices: {}\n", {"m.yaml:1", "starts with 'version: 1'"}},
    {"version 2", "version: 2\nmarket: {}\n", {"m.yaml:1", "'version: 1'"}},
    {"no market section", "version: 1\n", {"m.yaml", "no 'market:' section"}},
    {"unknown top key", kHead + "  prices: {}\nmarkets: {}\n", {"m.yaml:4", "unknown key 'markets'", "known: version, market"}},
    {"market not a map", "version: 1\nmarket: 5\n", {"m.yaml:2", "market must be a map"}},
    {"unknown section", kHead + "  pricing: {}\n", {"m.yaml:3", "unknown key 'pricing'", "prices, dynamic, metering, hoarding"}},
    {"negative price", kHead + "  prices:\n    base:\n      H100: -1\n",
     {"m.yaml:5", "market.prices.base.H100", "'-1' is negative", "a price in credits per GPU-hour"}},
    {"overflowing amount", kHead + "  prices:\n    base:\n      H100: 99999999999999\n",
     {"m.yaml:5", "market.prices.base.H100", "too large"}},
    {"price above the limit", kHead + "  prices:\n    in_floor:\n      \"*\": 2000000\n",
     {"m.yaml:5", "market.prices.in_floor.*", "above the limit", "lower it"}},
    {"exponent in a price", kHead + "  prices:\n    base: {H100: 1e3}\n", {"m.yaml:4", "market.prices.base.H100", "exponents"}},
    {"NaN price", kHead + "  prices:\n    base: {H100: .nan}\n", {"m.yaml:4", "not a finite number"}},
    {"empty price", kHead + "  prices:\n    base:\n      H100:\n", {"m.yaml:5", "market.prices.base.H100", "(it is empty)", "write e.g. 2.5"}},
    {"price given twice", kHead + "  prices:\n    base:\n      H100: 1\n      H100: 2\n",
     {"m.yaml:6", "'H100' is given twice"}},
    {"base not a map", kHead + "  prices:\n    base: 4.0\n", {"m.yaml:4", "market.prices.base maps GPU models"}},
    {"unknown tier", kHead + "  prices:\n    tier_factors: {standard: 1.0, spot: 0.3, gold: 2.0}\n",
     {"m.yaml:4", "market.prices.tier_factors", "unknown tier 'gold'", "guaranteed, standard, spot, inference"}},
    {"guaranteed tier factor", kHead + "  prices:\n    tier_factors: {guaranteed: 1.0, standard: 1.0, spot: 0.3}\n",
     {"m.yaml:4", "in-floor rate", "market.prices.in_floor"}},
    {"a tier factor missing", kHead + "  prices:\n    tier_factors: {standard: 1.0, spot: 0.3}\n",
     {"m.yaml:4", "no factor for inference"}},
    {"zero tier factor", kHead + "  prices:\n    tier_factors: {standard: 1.0, spot: 0, inference: 1.5}\n",
     {"m.yaml:4", "market.prices.tier_factors.spot", "outside (0, 100]"}},
    {"override for guaranteed", kHead + "  prices:\n    overrides:\n      H100: {guaranteed: 1.0}\n",
     {"m.yaml:5", "market.prices.overrides.H100", "in-floor"}},
    {"override with an unknown tier", kHead + "  prices:\n    overrides:\n      H100: {spott: 1.0}\n",
     {"m.yaml:5", "unknown tier 'spott'"}},
    {"a model without an in-floor rate", kHead + "  prices:\n    base: {B200: 5.0}\n    in_floor: {H100: 3.0}\n",
     {"m.yaml:4", "market.prices", "no in-floor rate for GPU model 'B200'", "under in_floor"}},
    {"unsorted curve",
     kHead + "  dynamic:\n    curve:\n      - {utilisation: 0.5, multiplier: 1.0}\n      - {utilisation: 0.2, multiplier: 0.8}\n",
     {"m.yaml:6", "curve point 2", "increasing utilisation"}},
    {"curve utilisation above 1", kHead + "  dynamic:\n    curve:\n      - {utilisation: 1.5, multiplier: 1.0}\n",
     {"m.yaml:5", "curve point 1 utilisation", "outside [0, 1]"}},
    {"curve point without a multiplier", kHead + "  dynamic:\n    curve:\n      - {utilisation: 0.5}\n",
     {"m.yaml:5", "curve point 1", "needs utilisation and multiplier"}},
    {"curve point with a typo", kHead + "  dynamic:\n    curve:\n      - {utilization: 0.5, multiplier: 1}\n",
     {"m.yaml:5", "unknown key 'utilization'", "known: utilisation, multiplier"}},
    {"curve not a list", kHead + "  dynamic:\n    curve: {utilisation: 0.5}\n", {"m.yaml:4", "lists points"}},
    {"curve point outside new bounds", kHead + "  dynamic:\n    max_multiplier: 1.5\n",
     {"m.yaml:4", "point 4", "outside the bounds [0.5, 1.5]"}},
    {"min above max", kHead + "  dynamic:\n    min_multiplier: 3.0\n", {"m.yaml:4", "above max_multiplier", "swap"}},
    {"initial multiplier outside bounds", kHead + "  dynamic:\n    initial_multiplier: 0.25\n",
     {"m.yaml:4", "market.dynamic.initial_multiplier", "outside"}},
    {"non-numeric period", kHead + "  dynamic:\n    period_s: hourly\n",
     {"m.yaml:4", "market.dynamic.period_s", "'hourly' is not a whole number", "write e.g. 3600"}},
    {"fractional period", kHead + "  dynamic:\n    period_s: 3600.5\n", {"m.yaml:4", "not a whole number"}},
    {"zero window", kHead + "  dynamic:\n    window_periods: 0\n",
     {"m.yaml:4", "market.dynamic.window_periods", "outside [1, 10000]"}},
    {"zero max step", kHead + "  dynamic:\n    max_step: 0\n", {"m.yaml:4", "market.dynamic.max_step", "outside (0,"}},
    {"negative protection", kHead + "  dynamic:\n    protection_s: -5\n",
     {"m.yaml:4", "market.dynamic.protection_s", "negative"}},
    {"lender share above 1000000 ppm", kHead + "  metering:\n    lender_share_ppm: 1000001\n",
     {"m.yaml:4", "lender_share_ppm", "[0, 1000000]"}},
    {"lender share as a fraction", kHead + "  metering:\n    lender_share_ppm: 0.5\n",
     {"m.yaml:4", "lender_share_ppm", "parts per million", "500000 = half"}},
    {"negative recall factor", kHead + "  metering:\n    recall_compensation_factor: -1\n",
     {"m.yaml:4", "recall_compensation_factor", "negative"}},
    {"unknown hoarding key", kHead + "  hoarding:\n    idle_period: 1800\n",
     {"m.yaml:4", "market.hoarding", "unknown key 'idle_period'", "idle_period_s"}},
    {"non-numeric fee", kHead + "  hoarding:\n    fee_start: cheap\n",
     {"m.yaml:4", "market.hoarding.fee_start", "'cheap' is not a decimal number"}},
    {"fee with 7 decimals", kHead + "  hoarding:\n    fee_growth: 0.1234567\n",
     {"m.yaml:4", "market.hoarding.fee_growth", "7 decimals"}},
    {"zero activity threshold", kHead + "  hoarding:\n    activity_threshold: 0\n",
     {"m.yaml:4", "activity_threshold", "outside (0, 1]"}},
    {"threshold as a percentage", kHead + "  hoarding:\n    activity_threshold: 5\n",
     {"m.yaml:4", "activity_threshold", "outside (0, 1]", "0.05"}},
    {"empty duration", kHead + "  hoarding:\n    grace_s:\n    max_gap_s: 60\n",
     {"m.yaml:4", "market.hoarding.grace_s", "(it is empty)"}},
    {"zero max gap", kHead + "  hoarding:\n    max_gap_s: 0\n", {"m.yaml:4", "market.hoarding.max_gap_s", "outside [1,"}},
    {"a list where a value goes", kHead + "  hoarding:\n    grace_s: [1, 2]\n",
     {"m.yaml:4", "market.hoarding.grace_s", "single value"}},
};

class BadMarketFile : public ::testing::TestWithParam<BadRow> {};
TEST_P(BadMarketFile, SaysWhereWhatAndWhatToDo) {
  const BadRow& row = GetParam();
  auto c = ParseMarketYaml(row.text, "m.yaml");
  ASSERT_FALSE(c.has_value()) << "accepted:\n" << row.text;
  for (const std::string& part : row.must_contain) EXPECT_THAT(c.error().message, HasSubstr(part)) << row.text;
}
std::string BadName(const ::testing::TestParamInfo<BadRow>& info) {
  std::string s = std::to_string(info.index) + "_";
  for (char c : info.param.what) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return s;
}
INSTANTIATE_TEST_SUITE_P(Table, BadMarketFile, ::testing::ValuesIn(kBad), BadName);

TEST(MarketFile, ShippedDefaultEqualsTheDefaultsInCode) {
  auto c = ReadMarketFile(std::string(TIDAL_SOURCE_DIR) + "/data/market/default.yaml");
  ASSERT_TRUE(c.has_value()) << c.error().message;
  EXPECT_TRUE(c->SamePolicy(DefaultMarketConfig()));
  // And the defaults are the documented numbers (not just whatever the code has).
  const MarketConfig& d = *c;
  EXPECT_EQ(d.book.base.at("H100"), 4'000'000);
  EXPECT_EQ(d.book.in_floor.at("T4"), 320'000);
  EXPECT_EQ(d.book.tier_factor_ppm.at(Tier::kSpot), 300'000);
  EXPECT_EQ(d.book.tier_factor_ppm.at(Tier::kInference), 1'500'000);
  EXPECT_EQ(d.curve.points(), (std::vector<CurvePoint>{{0.0, 0.5}, {0.5, 1.0}, {0.8, 1.2}, {1.0, 2.0}}));
  EXPECT_EQ(d.pricer.period_s, 3600);
  EXPECT_EQ(d.pricer.window_periods, 3);
  EXPECT_DOUBLE_EQ(d.pricer.max_step, 0.1);
  EXPECT_EQ(d.pricer.lead_periods, 2);
  EXPECT_EQ(d.pricer.protection_s, 21600);
  EXPECT_EQ(d.lender_share_ppm, 500'000);
  EXPECT_EQ(d.recall_compensation_ppm, 1'000'000);
  EXPECT_DOUBLE_EQ(d.hoarding.activity_threshold, 0.05);
  EXPECT_EQ(d.hoarding.idle_period_s, 1800);
  EXPECT_EQ(d.hoarding.fee_start, 500'000);
  EXPECT_EQ(d.hoarding.reclaim_after_s, 14400);
  EXPECT_EQ(d.hoarding.max_gap_s, 300);
}

TEST(MarketFile, FullExample) {
  const std::string text = R"(version: 1
market:
  prices:
    base: {B200: 6.25, "*": 1}
    tier_factors: {standard: 1, spot: 0.25, inference: 2}
    overrides:
      B200: {spot: 1.000001}
    in_floor: {"*": 0.75}
  dynamic:
    curve:
      - {utilisation: 0.1, multiplier: 0.6}
      - {utilisation: 0.9, multiplier: 3}
    min_multiplier: 0.6
    max_multiplier: 3
    initial_multiplier: 0.9
    period_s: 900
    window_periods: 4
    max_step: 0.05
    lead_periods: 3
    protection_s: 0
  metering:
    lender_share_ppm: 250000
    recall_compensation_factor: 1.25
  hoarding:
    activity_threshold: 0.1
    idle_power_factor: 1.25
    idle_period_s: 600
    grace_s: 0
    fee_interval_s: 600
    fee_start: 0.000001
    fee_growth: 0
    reclaim_after_s: 3600
    max_gap_s: 90
)";
  auto c = ParseMarketYaml(text, "full.yaml");
  ASSERT_TRUE(c.has_value()) << c.error().message;
  EXPECT_EQ(c->source, "full.yaml");
  EXPECT_EQ(c->book.base, (PriceBook::ModelMap{{"B200", 6'250'000}, {"*", 1'000'000}}));
  EXPECT_EQ(c->book.in_floor, (PriceBook::ModelMap{{"*", 750'000}}));
  EXPECT_EQ(*c->book.Floating("B200", Tier::kSpot), (TierBase{1'000'001, 1'000'000}));
  EXPECT_EQ(*c->book.ListPrice("B200", Tier::kInference), 12'500'000);
  EXPECT_EQ(*c->book.ListPrice("A100", Tier::kSpot), 250'000);
  EXPECT_EQ(c->curve.points(), (std::vector<CurvePoint>{{0.1, 0.6}, {0.9, 3.0}}));
  EXPECT_DOUBLE_EQ(c->curve.min_multiplier(), 0.6);
  EXPECT_DOUBLE_EQ(c->curve.max_multiplier(), 3.0);
  EXPECT_EQ(c->pricer, (PricerConfig{.period_s = 900, .window_periods = 4, .max_step = 0.05, .lead_periods = 3,
                                     .protection_s = 0, .initial_multiplier = 0.9}));
  EXPECT_EQ(c->lender_share_ppm, 250'000);
  EXPECT_EQ(c->recall_compensation_ppm, 1'250'000);
  EXPECT_EQ(c->hoarding, (HoardingConfig{.activity_threshold = 0.1, .idle_power_factor = 1.25, .idle_period_s = 600,
                                         .grace_s = 0, .fee_interval_s = 600, .fee_start = 1, .fee_growth = 0,
                                         .reclaim_after_s = 3600, .max_gap_s = 90}));
}

TEST(MarketFile, PartialFileKeepsTheRest) {
  auto c = ParseMarketYaml("version: 1\nmarket:\n  hoarding:\n    grace_s: 60\n", "p.yaml");
  ASSERT_TRUE(c.has_value()) << c.error().message;
  MarketConfig want = DefaultMarketConfig();
  want.hoarding.grace_s = 60;
  EXPECT_TRUE(c->SamePolicy(want));
  auto empty = ParseMarketYaml("version: 1\nmarket: {}\n", "e.yaml");
  ASSERT_TRUE(empty.has_value()) << empty.error().message;
  EXPECT_TRUE(empty->SamePolicy(DefaultMarketConfig()));
}

TEST(MarketFile, MissingFile) {
  auto c = ReadMarketFile("/nonexistent/market.yaml");
  ASSERT_FALSE(c.has_value());
  EXPECT_THAT(c.error().message, HasSubstr("/nonexistent/market.yaml"));
}

}  // namespace
}  // namespace tidal::market

// Demand traces: the real files (row counts, spans, totals and the READMEs'
// peak/trough ratios), a bad-input table per reader, and the helpers checked
// against values worked out by hand.
#include "inference/demand.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <numeric>
#include <ostream>
#include <string>
#include <vector>

namespace tidal::inference {
namespace {

using ::testing::HasSubstr;

const std::string kTraces = std::string(TIDAL_SHARED_DIR) + "/traces/inference/";
const std::string kAzure = kTraces + "azure-llm-2024-week/azure2024_";
const std::string kServeGen = kTraces + "alibaba-servegen/servegen_";

DemandSeries MustRead(const std::string& path, const std::string& format) {
  auto s = ReadDemandTrace(path, format);
  EXPECT_TRUE(s.has_value()) << s.error().message;
  return s ? *s : DemandSeries{};
}

TEST(AzureTrace, CodeWeekAsTheReadmeDescribesIt) {
  const DemandSeries s = MustRead(kAzure + "code_1week_per_minute.csv", "azure2024");
  ASSERT_EQ(s.rate.size(), 10080u);
  EXPECT_EQ(s.step_s, 60);
  EXPECT_EQ(s.span_s(), 7 * 86400);
  EXPECT_EQ(s.origin_s, 1715299200);  // 2024-05-10T00:00Z
  EXPECT_DOUBLE_EQ(s.rate[0], 1537.0 / 60);
  EXPECT_DOUBLE_EQ(s.tokens_per_s[0], (3671963.0 + 34817.0) / 60);
  // README: 16,803,695 requests; hour 0 has 77,540.
  EXPECT_NEAR(std::accumulate(s.rate.begin(), s.rate.end(), 0.0) * 60, 16803695, 1e-3);
  EXPECT_NEAR(std::accumulate(s.rate.begin(), s.rate.begin() + 60, 0.0) * 60, 77540, 1e-6);
}

TEST(AzureTrace, ConvWeekStartsTwoDaysLater) {
  const DemandSeries s = MustRead(kAzure + "conv_1week_per_minute.csv", "azure2024");
  ASSERT_EQ(s.rate.size(), 10080u);
  EXPECT_EQ(s.origin_s, 1715472000);  // 2024-05-12T00:00Z
  EXPECT_NEAR(std::accumulate(s.rate.begin(), s.rate.end(), 0.0) * 60, 27303999, 1e-3);
}

TEST(ServeGenTrace, MLargeFourteenDays) {
  const DemandSeries s = MustRead(kServeGen + "m-large_10min.csv", "servegen");
  ASSERT_EQ(s.rate.size(), 2016u);
  EXPECT_EQ(s.step_s, 600);
  EXPECT_EQ(s.origin_s, 0);
  EXPECT_EQ(s.span_s(), 14 * 86400);
  EXPECT_DOUBLE_EQ(s.rate[0], 212.78);
  EXPECT_DOUBLE_EQ(s.tokens_per_s[0], (30649117.0 + 25222969.0) / 600);
  EXPECT_DOUBLE_EQ(s.rate.back(), 246.9233);
}

struct DiurnalCase {
  std::string file, format;
  double missing_below, readme_a;
  int days;
};
void PrintTo(const DiurnalCase& c, std::ostream* os) { *os << c.file; }

class ReadmeDiurnal : public ::testing::TestWithParam<DiurnalCase> {};

// The "A" column of the trace READMEs: median over full days of max/min hourly.
TEST_P(ReadmeDiurnal, PeakTroughWithinATenth) {
  const DiurnalCase& c = GetParam();
  const DemandSeries s = MustRead(kTraces + c.file, c.format);
  auto st = ComputeDiurnalStats(s, c.missing_below);
  ASSERT_TRUE(st.has_value()) << st.error().message;
  std::printf("%s: %d full days, peak/trough median %.2f [%.2f-%.2f] (README %.2f)\n", c.file.c_str(), st->full_days,
              st->median_ratio, st->min_ratio, st->max_ratio, c.readme_a);
  EXPECT_EQ(st->full_days, c.days);
  EXPECT_NEAR(st->median_ratio, c.readme_a, 0.1);
}

INSTANTIATE_TEST_SUITE_P(
    Traces, ReadmeDiurnal,
    ::testing::Values(
        DiurnalCase{"azure-llm-2024-week/azure2024_code_1week_per_minute.csv", "azure2024", 0, 9.13, 7},
        DiurnalCase{"azure-llm-2024-week/azure2024_conv_1week_per_minute.csv", "azure2024", 0, 1.94, 7},
        DiurnalCase{"alibaba-servegen/servegen_m-large_10min.csv", "servegen", 0, 2.55, 14},
        DiurnalCase{"alibaba-servegen/servegen_m-mid_10min.csv", "servegen", 0.1, 2.31, 9},
        DiurnalCase{"alibaba-servegen/servegen_m-small_10min.csv", "servegen", 0.1, 2.40, 8},
        DiurnalCase{"alibaba-servegen/servegen_deepseek-r1_10min.csv", "servegen", 0, 4.91, 1},
        DiurnalCase{"alibaba-servegen/servegen_mm-image_10min.csv", "servegen", 0, 2.28, 1}));

using Parser = Result<DemandSeries> (*)(std::string_view, const std::string&);

struct BadRow {
  std::string what, text;
  std::vector<std::string> must_contain;
  Parser parse = nullptr;  // set by the INSTANTIATE below
};
void PrintTo(const BadRow& r, std::ostream* os) { *os << r.what; }

std::vector<BadRow> With(Parser parse, std::vector<BadRow> rows) {
  for (BadRow& r : rows) r.parse = parse;
  return rows;
}

class ReaderBad : public ::testing::TestWithParam<BadRow> {};
TEST_P(ReaderBad, SaysWhatAndWhere) {
  auto r = GetParam().parse(GetParam().text, "x.csv");
  ASSERT_FALSE(r.has_value());
  for (const std::string& part : GetParam().must_contain) EXPECT_THAT(r.error().message, HasSubstr(part));
}

const std::string kAzHead = "timestamp_minute,requests,input_tokens,output_tokens\n";

INSTANTIATE_TEST_SUITE_P(
    Azure, ReaderBad,
    ::testing::ValuesIn(With(ParseAzure2024Minutes, {
        BadRow{"missing column", "timestamp_minute,requests,input_tokens\n2024-05-10T00:00Z,1,2\n",
               {"x.csv:1", "missing column 'output_tokens'"}},
        BadRow{"gap", kAzHead + "2024-05-10T00:00Z,1,2,3\n2024-05-10T00:03Z,1,2,3\n",
               {"x.csv:3", "gap", "2 missing minute(s)", "write 0"}},
        BadRow{"out of order", kAzHead + "2024-05-10T00:01Z,1,2,3\n2024-05-10T00:00Z,1,2,3\n",
               {"x.csv:3", "out of order", "sort"}},
        BadRow{"duplicate", kAzHead + "2024-05-10T00:00Z,1,2,3\n2024-05-10T00:00Z,1,2,3\n",
               {"x.csv:3", "duplicate timestamp"}},
        BadRow{"negative", kAzHead + "2024-05-10T00:00Z,-5,2,3\n", {"x.csv:2", "'requests'", "-5 is negative"}},
        BadRow{"nan", kAzHead + "2024-05-10T00:00Z,nan,2,3\n", {"x.csv:2", "'nan' is not a number"}},
        BadRow{"inf tokens", kAzHead + "2024-05-10T00:00Z,1,inf,3\n", {"x.csv:2", "'input_tokens'", "not a number"}},
        BadRow{"empty trace", kAzHead, {"x.csv", "no rows"}},
        BadRow{"empty file", "", {"x.csv", "empty"}},
        BadRow{"bad timestamp", kAzHead + "2024-05-10 00:00,1,2,3\n", {"x.csv:2", "not a UTC minute", "2024-05-10T00:00Z"}},
        BadRow{"bad month", kAzHead + "2024-13-10T00:00Z,1,2,3\n", {"x.csv:2", "not a UTC minute"}},
        BadRow{"truncated", kAzHead + "2024-05-10T00:00Z,1,2\n", {"x.csv:2", "expected 4 fields"}}})));

const std::string kSgHead = "window_start_s,total_rate_rps,input_tokens_est,output_tokens_est\n";

INSTANTIATE_TEST_SUITE_P(
    ServeGen, ReaderBad,
    ::testing::ValuesIn(With(ParseServeGen10Min, {
        BadRow{"missing column", "window_start_s,rate\n0,1\n", {"x.csv:1", "missing column 'total_rate_rps'"}},
        BadRow{"gap", kSgHead + "0,1,2,3\n1200,1,2,3\n", {"x.csv:3", "gap", "1 missing 600-s window(s)"}},
        BadRow{"off grid", kSgHead + "0,1,2,3\n900,1,2,3\n", {"x.csv:3", "not on the 600-s grid"}},
        BadRow{"out of order", kSgHead + "600,1,2,3\n0,1,2,3\n", {"x.csv:3", "out of order"}},
        BadRow{"duplicate", kSgHead + "600,1,2,3\n600,1,2,3\n", {"x.csv:3", "duplicate timestamp 600"}},
        BadRow{"negative", kSgHead + "0,-0.5,2,3\n", {"x.csv:2", "'total_rate_rps'", "negative"}},
        BadRow{"infinite", kSgHead + "0,inf,2,3\n", {"x.csv:2", "not a number"}},
        BadRow{"fractional start", kSgHead + "0.5,1,2,3\n", {"x.csv:2", "fractional"}},
        BadRow{"empty trace", kSgHead, {"x.csv", "no rows"}}})));

TEST(DemandTrace, UnknownFormatNamesTheKnownOnes) {
  auto r = ReadDemandTrace("x.csv", "burstgpt");
  ASSERT_FALSE(r.has_value());
  EXPECT_THAT(r.error().message, HasSubstr("unknown trace format 'burstgpt'"));
  EXPECT_THAT(r.error().message, HasSubstr("azure2024"));
  EXPECT_THAT(r.error().message, HasSubstr("servegen"));
}

TEST(DemandTrace, MissingFileIsAnError) {
  auto r = ReadDemandTrace("/nonexistent/x.csv", "servegen");
  ASSERT_FALSE(r.has_value());
  EXPECT_THAT(r.error().message, HasSubstr("cannot open"));
}

DemandSeries Series(std::vector<double> rate, int64_t step = 60) {
  return DemandSeries{.name = "t", .step_s = step, .rate = std::move(rate)};
}

TEST(ScaleToPeak, MaxBecomesPeakOthersInProportion) {
  DemandSeries s = Series({1, 2, 4, 4});
  s.tokens_per_s = {10, 20, 40, 40};
  const DemandSeries t = ScaleToPeak(s, 10);
  EXPECT_EQ(t.rate, (std::vector<double>{2.5, 5, 10, 10}));
  EXPECT_EQ(t.tokens_per_s, (std::vector<double>{25, 50, 100, 100}));
  EXPECT_EQ(ScaleToPeak(Series({0, 0}), 5).rate, (std::vector<double>{0, 0}));
  // A peak that does not divide evenly still lands exactly.
  EXPECT_EQ(ScaleToPeak(Series({3, 7}), 0.1).rate[1], 0.1);
}

TEST(RateAt, HeldOverTheStepAndWrapped) {
  const DemandSeries s = Series({1, 2, 3});
  EXPECT_EQ(RateAt(s, 0), 1);
  EXPECT_EQ(RateAt(s, 59), 1);
  EXPECT_EQ(RateAt(s, 60), 2);
  EXPECT_EQ(RateAt(s, 179), 3);
  EXPECT_EQ(RateAt(s, 180), 1);  // the span is 180 s: wraps to the start
  EXPECT_EQ(RateAt(s, 180 * 5 + 61), 2);
  EXPECT_EQ(RateAt(s, -1), 3);
  EXPECT_EQ(RateAt(Series({}), 10), 0);
}

TEST(Resample, CoarserAveragesFinerHoldsUnevenWeighs) {
  DemandSeries s = Series({1, 2, 3, 4});
  s.tokens_per_s = {10, 20, 30, 40};
  auto coarse = Resample(s, 120);
  ASSERT_TRUE(coarse.has_value());
  EXPECT_EQ(coarse->rate, (std::vector<double>{1.5, 3.5}));
  EXPECT_EQ(coarse->tokens_per_s, (std::vector<double>{15, 35}));
  EXPECT_EQ(coarse->step_s, 120);
  auto fine = Resample(s, 30);
  ASSERT_TRUE(fine.has_value());
  EXPECT_EQ(fine->rate, (std::vector<double>{1, 1, 2, 2, 3, 3, 4, 4}));
  // 90-s steps: (1*60 + 2*30)/90, (2*30 + 3*60)/90, then a partial 60-s step of 4.
  auto uneven = Resample(s, 90);
  ASSERT_TRUE(uneven.has_value());
  ASSERT_EQ(uneven->rate.size(), 3u);
  EXPECT_DOUBLE_EQ(uneven->rate[0], 120.0 / 90);
  EXPECT_DOUBLE_EQ(uneven->rate[1], 240.0 / 90);
  EXPECT_DOUBLE_EQ(uneven->rate[2], 4);
  EXPECT_FALSE(Resample(s, 0).has_value());
}

TEST(DiurnalStats, HandWorkedDays) {
  // Hourly steps. Day 1: hours 1..24 -> 24/1. Day 2: 2 everywhere but one hour of 8 -> 4.
  std::vector<double> r;
  for (int h = 1; h <= 24; ++h) r.push_back(h);
  for (int h = 0; h < 24; ++h) r.push_back(h == 5 ? 8 : 2);
  r.push_back(100);  // a partial third day is not a full day
  auto st = ComputeDiurnalStats(Series(r, 3600));
  ASSERT_TRUE(st.has_value()) << st.error().message;
  EXPECT_EQ(st->full_days, 2);
  EXPECT_EQ(st->per_day, (std::vector<double>{24, 4}));
  EXPECT_EQ(st->median_ratio, 14);
  EXPECT_EQ(st->min_ratio, 4);
  EXPECT_EQ(st->max_ratio, 24);
}

TEST(DiurnalStats, GapsAndDayBoundaries) {
  std::vector<double> r(48, 10);
  r[30] = 0.5;  // day 2: below 10% of the median (10) -> missing with the ServeGen rule
  r[3] = 20;
  auto st = ComputeDiurnalStats(Series(r, 3600), 0.1);
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->per_day, (std::vector<double>{2}));
  // Starting at noon, the first day boundary is 12 steps in: one full day only.
  DemandSeries noon = Series(std::vector<double>(48, 1), 3600);
  noon.origin_s = 43200;
  noon.rate[11] = 50;  // before the boundary: not counted
  noon.rate[12] = 3;
  auto st2 = ComputeDiurnalStats(noon);
  ASSERT_TRUE(st2.has_value());
  EXPECT_EQ(st2->per_day, (std::vector<double>{3}));
  EXPECT_FALSE(ComputeDiurnalStats(Series(std::vector<double>(23, 1), 3600)).has_value());
  EXPECT_FALSE(ComputeDiurnalStats(Series({1, 2}, 7)).has_value());  // 7 s does not divide an hour
}

}  // namespace
}  // namespace tidal::inference

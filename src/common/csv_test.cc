#include "common/csv.h"

#include <limits>

#include <gtest/gtest.h>

namespace tidal {
namespace {

TEST(CsvTest, ParsesHeaderRowsQuotesAndBlanks) {
  auto t = CsvTable::Parse("\xEF\xBB\xBF" "a, b ,c\r\n1,\"x,y\",3\r\n\r\n4, 5 ,\"q\"\"\"\n", "mem.csv");
  ASSERT_TRUE(t.has_value()) << t.error().ToString();
  EXPECT_EQ(t->header(), (std::vector<std::string>{"a", "b", "c"}));
  ASSERT_EQ(t->rows().size(), 2u);
  EXPECT_EQ(t->rows()[0].field(1), "x,y");
  EXPECT_EQ(t->rows()[1].field(1), "5");
  EXPECT_EQ(t->rows()[1].field(2), "q\"");
  EXPECT_EQ(t->rows()[1].line(), 4);
}

TEST(CsvTest, TruncatedLineNamesFileAndLine) {
  auto t = CsvTable::Parse("a,b,c\n1,2,3\n4,5\n", "pods.csv");
  ASSERT_FALSE(t.has_value());
  EXPECT_NE(t.error().message.find("pods.csv:3"), std::string::npos) << t.error().message;
  EXPECT_NE(t.error().message.find("expected 3 fields"), std::string::npos);
}

TEST(CsvTest, EmptyFileIsAnError) {
  auto t = CsvTable::Parse("", "empty.csv");
  ASSERT_FALSE(t.has_value());
  EXPECT_NE(t.error().message.find("empty.csv"), std::string::npos);
}

TEST(CsvTest, UnterminatedQuoteIsAnError) {
  auto t = CsvTable::Parse("a,b\n1,\"open\n", "q.csv");
  ASSERT_FALSE(t.has_value());
  EXPECT_NE(t.error().message.find("q.csv:2"), std::string::npos) << t.error().message;
}

TEST(CsvTest, TypedAccessorsReportColumnAndRange) {
  auto t = CsvTable::Parse("n,x\n12,abc\n-5,1e999\n99999999999999999999,2.0\n7.0,0.5\n", "t.csv");
  ASSERT_TRUE(t.has_value());
  const auto& r = t->rows();
  EXPECT_EQ(*r[0].Int(0, 0, 100), 12);
  auto bad = r[0].Int(1, 0, 100);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("t.csv:2: column 'x'"), std::string::npos);
  auto neg = r[1].Int(0, 0, 100);
  ASSERT_FALSE(neg.has_value());
  EXPECT_NE(neg.error().message.find("out of range"), std::string::npos);
  EXPECT_FALSE(r[1].Double(1, 0, 1e300).has_value());  // inf is rejected
  auto huge = r[2].Int(0, 0, INT64_MAX);
  ASSERT_FALSE(huge.has_value());
  EXPECT_NE(huge.error().message.find("too large"), std::string::npos);
  EXPECT_EQ(*r[3].IntLenient(0, 0, 10), 7);
  EXPECT_FALSE(r[3].IntLenient(1, 0, 10).has_value());  // 0.5 is not whole
  EXPECT_EQ(*r[2].IntLenient(1, 0, 10), 2);
}

// NaN and infinities are not numbers to a reader, whatever the range: a
// NaN passes every comparison, so only the explicit check refuses it.
TEST(CsvTest, NanAndInfinityAreRefusedEvenWithAnOpenRange) {
  auto t = CsvTable::Parse("x\nnan\nNaN\ninf\n-inf\ninfinity\n1.5\n", "n.csv");
  ASSERT_TRUE(t.has_value());
  const double lo = -std::numeric_limits<double>::infinity(), hi = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < 5; ++i) {
    auto v = t->rows()[i].Double(0, lo, hi);
    ASSERT_FALSE(v.has_value()) << i;
    EXPECT_NE(v.error().message.find("is not a number"), std::string::npos) << v.error().message;
  }
  EXPECT_EQ(*t->rows()[5].Double(0, lo, hi), 1.5);
}

// Ranges are closed: both ends are in, one past either end is out.
TEST(CsvTest, RangesIncludeBothEnds) {
  auto t = CsvTable::Parse("n,x\n0,0\n100,1\n-1,-0.5\n101,1.5\n", "r.csv");
  ASSERT_TRUE(t.has_value());
  const auto& r = t->rows();
  EXPECT_EQ(*r[0].Int(0, 0, 100), 0);
  EXPECT_EQ(*r[1].Int(0, 0, 100), 100);
  EXPECT_FALSE(r[2].Int(0, 0, 100).has_value());
  EXPECT_FALSE(r[3].Int(0, 0, 100).has_value());
  EXPECT_EQ(*r[0].Double(1, 0, 1), 0.0);
  EXPECT_EQ(*r[1].Double(1, 0, 1), 1.0);
  auto below = r[2].Double(1, 0, 1);
  ASSERT_FALSE(below.has_value());
  EXPECT_NE(below.error().message.find("-0.5 is out of range, expected [0, 1]"), std::string::npos) << below.error().message;
  EXPECT_FALSE(r[3].Double(1, 0, 1).has_value());
}

TEST(CsvTest, FindsEveryColumnByName) {
  auto t = CsvTable::Parse("a,b,c\n1,2,3\n", "f.csv");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->FindColumn("a"), 0u);
  EXPECT_EQ(t->FindColumn("b"), 1u);
  EXPECT_EQ(t->FindColumn("c"), 2u);
  EXPECT_EQ(t->FindColumn("d"), std::nullopt);
}

TEST(CsvTest, MissingColumnListsHeader) {
  auto t = CsvTable::Parse("a,b\n1,2\n", "h.csv");
  ASSERT_TRUE(t.has_value());
  auto c = t->RequireColumn("zz");
  ASSERT_FALSE(c.has_value());
  EXPECT_NE(c.error().message.find("header has: a,b"), std::string::npos);
}

}  // namespace
}  // namespace tidal

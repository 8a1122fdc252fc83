// Slurm-style host lists: ExpandHostlist on every form the readers meet
// (ranges, zero padding, bracket products, commas in and out of brackets,
// whitespace) and every error, the max_hosts bound checked before anything
// is expanded; CompressHostlist's exact output; and the round trip
// ExpandHostlist(CompressHostlist(v)) == v as a property.
#include "topology/hostlist.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <chrono>
#include <string>
#include <vector>

namespace tidal::topo {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using V = std::vector<std::string>;

V Expand(std::string_view s, size_t max = 10'000'000) {
  auto r = ExpandHostlist(s, max);
  EXPECT_TRUE(r.has_value()) << s << ": " << r.error().message;
  return r.value_or(V{});
}

std::string ExpandError(std::string_view s, size_t max = 10'000'000) {
  auto r = ExpandHostlist(s, max);
  EXPECT_FALSE(r.has_value()) << s << " expanded to " << r->size() << " names";
  return r ? std::string() : r.error().message;
}

TEST(ExpandHostlistTest, RangesListsAndPlainNames) {
  EXPECT_THAT(Expand("tux[0-3,7],login1"), ElementsAre("tux0", "tux1", "tux2", "tux3", "tux7", "login1"));
  EXPECT_THAT(Expand("a"), ElementsAre("a"));
  EXPECT_THAT(Expand("a,b,c"), ElementsAre("a", "b", "c"));
  EXPECT_THAT(Expand("n[5]"), ElementsAre("n5"));
  EXPECT_THAT(Expand("n[3-3]"), ElementsAre("n3"));
  EXPECT_THAT(Expand("n[1,3,2]"), ElementsAre("n1", "n3", "n2"));  // order as written
  EXPECT_THAT(Expand("[1-3]"), ElementsAre("1", "2", "3"));
  EXPECT_THAT(Expand("gpu[1-2]x"), ElementsAre("gpu1x", "gpu2x"));
  EXPECT_THAT(Expand("a,b[1-2],c"), ElementsAre("a", "b1", "b2", "c"));
  EXPECT_THAT(Expand("a-1,a-2"), ElementsAre("a-1", "a-2"));
  EXPECT_THAT(Expand("n[9-11]"), ElementsAre("n9", "n10", "n11"));
}

TEST(ExpandHostlistTest, ZeroPaddingFollowsTheLowEnd) {
  EXPECT_THAT(Expand("node[01-04]"), ElementsAre("node01", "node02", "node03", "node04"));
  EXPECT_THAT(Expand("node[08-11]"), ElementsAre("node08", "node09", "node10", "node11"));
  EXPECT_THAT(Expand("n[001-002,010,99-100]"), ElementsAre("n001", "n002", "n010", "n99", "n100"));
  EXPECT_THAT(Expand("n[00-02]"), ElementsAre("n00", "n01", "n02"));
  EXPECT_THAT(Expand("n[0-2]"), ElementsAre("n0", "n1", "n2"));  // a lone 0 is no padding
  EXPECT_THAT(Expand("n[098-101]"), ElementsAre("n098", "n099", "n100", "n101"));
}

TEST(ExpandHostlistTest, SeveralBracketGroupsExpandAsAProduct) {
  EXPECT_THAT(Expand("r[1-2]-n[1-3]"), ElementsAre("r1-n1", "r1-n2", "r1-n3", "r2-n1", "r2-n2", "r2-n3"));
  EXPECT_THAT(Expand("r[1,3]n[01-02]g[7]"), ElementsAre("r1n01g7", "r1n02g7", "r3n01g7", "r3n02g7"));
  EXPECT_THAT(Expand("x[1-2],r[1-2]-n[1-2],y"),
              ElementsAre("x1", "x2", "r1-n1", "r1-n2", "r2-n1", "r2-n2", "y"));
}

TEST(ExpandHostlistTest, WhitespaceAroundNamesAndEmptyLists) {
  EXPECT_THAT(Expand(" a1 , a2\t,\tb[1-2] "), ElementsAre("a1", "a2", "b1", "b2"));
  EXPECT_THAT(Expand("a b"), ElementsAre("a b"));  // inside a name it is kept
  EXPECT_TRUE(Expand("").empty());
  EXPECT_TRUE(Expand("   ").empty());
  EXPECT_TRUE(Expand("\t").empty());
}

TEST(ExpandHostlistTest, BracketErrorsNameTheTextAndPosition) {
  EXPECT_EQ(ExpandError("node[1-2"), "host list 'node[1-2': '[' is never closed");
  EXPECT_EQ(ExpandError("a,node[1-2"), "host list 'a,node[1-2': '[' is never closed");
  EXPECT_EQ(ExpandError("node[[1]]"), "host list 'node[[1]]': nested '[' at 6");
  EXPECT_EQ(ExpandError("node[1[2]]"), "host list 'node[1[2]]': nested '[' at 7");
  EXPECT_EQ(ExpandError("node]1"), "host list 'node]1': ']' without '[' at 5");
  EXPECT_EQ(ExpandError("n[1]]"), "host list 'n[1]]': ']' without '[' at 5");
  EXPECT_EQ(ExpandError("]"), "host list ']': ']' without '[' at 1");
}

TEST(ExpandHostlistTest, RangeErrors) {
  EXPECT_EQ(ExpandError("node[5-3]"), "host list 'node[5-3]': range '5-3' runs backwards");
  EXPECT_EQ(ExpandError("node[1,5-3]"), "host list 'node[1,5-3]': range '5-3' runs backwards");
  for (const char* bad : {"a-b", "", "1-", "-2", "1-2-3", " 1", "1 ", "+1", "0x1", "1.5", "-1", "a"}) {
    const std::string list = std::string("node[") + bad + "]";
    EXPECT_EQ(ExpandError(list), "host list '" + list + "': '" + bad + "' is not a number or range like 1-8") << list;
  }
  EXPECT_EQ(ExpandError("node[1,]"), "host list 'node[1,]': '' is not a number or range like 1-8");
  EXPECT_EQ(ExpandError("node[,1]"), "host list 'node[,1]': '' is not a number or range like 1-8");
  // 19 digits do not fit the parser; 18 do.
  EXPECT_THAT(ExpandError("n[1234567890123456789]"), HasSubstr("'1234567890123456789' is not a number"));
  EXPECT_THAT(Expand("n[123456789012345678]"), ElementsAre("n123456789012345678"));
}

TEST(ExpandHostlistTest, EmptyNamesBetweenCommas) {
  EXPECT_EQ(ExpandError("a,,b"), "host list 'a,,b': empty name between commas");
  EXPECT_EQ(ExpandError("a,"), "host list 'a,': empty name between commas");
  EXPECT_EQ(ExpandError(",a"), "host list ',a': empty name between commas");
  EXPECT_EQ(ExpandError("a, ,b"), "host list 'a, ,b': empty name between commas");
}

TEST(ExpandHostlistTest, MaxHostsIsExactAtTheBoundary) {
  EXPECT_EQ(Expand("n[1-3]", 3).size(), 3u);
  EXPECT_EQ(ExpandError("n[1-3]", 2), "host list 'n[1-3]': range '1-3' names more than 2 hosts");
  EXPECT_EQ(Expand("n[1-2,3-4]", 4).size(), 4u);
  EXPECT_EQ(ExpandError("n[1-2,3-4]", 3), "host list 'n[1-2,3-4]': range '3-4' names more than 3 hosts");
  EXPECT_EQ(Expand("a,b,c", 3).size(), 3u);
  EXPECT_EQ(ExpandError("a,b,c", 2), "host list 'a,b,c' names more than 2 hosts");
  EXPECT_EQ(Expand("r[1-2]-n[1-3]", 6).size(), 6u);
  EXPECT_EQ(ExpandError("r[1-2]-n[1-3]", 5), "host list 'r[1-2]-n[1-3]' names more than 5 hosts");
  EXPECT_EQ(Expand("a[1-2],b[1-2]", 4).size(), 4u);
  EXPECT_EQ(ExpandError("a[1-2],b[1-2]", 3), "host list 'a[1-2],b[1-2]' names more than 3 hosts");
  EXPECT_EQ(Expand("a,b[1-2]", 3).size(), 3u);
  EXPECT_EQ(ExpandError("a,b,c[1-2]", 3), "host list 'a,b,c[1-2]' names more than 3 hosts");
}

TEST(ExpandHostlistTest, HugeRangesAreRejectedBeforeExpansion) {
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(ExpandError("n[0-999999999999999999]"),
            "host list 'n[0-999999999999999999]': range '0-999999999999999999' names more than 10000000 hosts");
  EXPECT_EQ(ExpandError("n[1-10000001]"), "host list 'n[1-10000001]': range '1-10000001' names more than 10000000 hosts");
  // Each group alone is small; the product (10^10 names) is refused before it is built.
  EXPECT_EQ(ExpandError("a[1-100000]b[1-100000]"), "host list 'a[1-100000]b[1-100000]' names more than 10000000 hosts");
  EXPECT_THAT(ExpandError("n[1-5],m[0-999999999999]", 100), HasSubstr("range '0-999999999999' names more than 100 hosts"));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 2.0);  // an expansion of any of these would take minutes and gigabytes
}

// --- CompressHostlist --------------------------------------------------------

TEST(CompressHostlistTest, RunsAndGaps) {
  EXPECT_EQ(CompressHostlist({}), "");
  EXPECT_EQ(CompressHostlist({"n1"}), "n1");
  EXPECT_EQ(CompressHostlist({"n1", "n2"}), "n[1-2]");
  EXPECT_EQ(CompressHostlist({"n1", "n2", "n3"}), "n[1-3]");
  EXPECT_EQ(CompressHostlist({"n1", "n3"}), "n[1,3]");
  EXPECT_EQ(CompressHostlist({"n1", "n2", "n4", "n5", "n7"}), "n[1-2,4-5,7]");
  EXPECT_EQ(CompressHostlist({"n0", "n1"}), "n[0-1]");
  EXPECT_EQ(CompressHostlist({"n9", "n10", "n11"}), "n[9-11]");
  EXPECT_EQ(CompressHostlist({"1", "2", "3"}), "[1-3]");
}

TEST(CompressHostlistTest, OnlyAscendingNumbersJoinARun) {
  EXPECT_EQ(CompressHostlist({"n3", "n2", "n1"}), "n3,n2,n1");
  EXPECT_EQ(CompressHostlist({"n1", "n1"}), "n1,n1");
  EXPECT_EQ(CompressHostlist({"n1", "n2", "n2", "n3"}), "n[1-2],n[2-3]");
  EXPECT_EQ(CompressHostlist({"n1", "n5", "n2"}), "n[1,5],n2");
}

TEST(CompressHostlistTest, PaddingWidthsNeverMix) {
  EXPECT_EQ(CompressHostlist({"n01", "n02", "n03"}), "n[01-03]");
  EXPECT_EQ(CompressHostlist({"n08", "n09", "n10"}), "n[08-10]");
  EXPECT_EQ(CompressHostlist({"n001", "n010", "n011"}), "n[001,010-011]");
  EXPECT_EQ(CompressHostlist({"n01", "n10", "n11"}), "n[01,10-11]");
  EXPECT_EQ(CompressHostlist({"n00", "n01"}), "n[00-01]");
  EXPECT_EQ(CompressHostlist({"n1", "n01"}), "n1,n01");
  EXPECT_EQ(CompressHostlist({"n01", "n1"}), "n01,n1");
  EXPECT_EQ(CompressHostlist({"n01", "n2"}), "n01,n2");
  EXPECT_EQ(CompressHostlist({"n01", "n001"}), "n01,n001");
  EXPECT_EQ(CompressHostlist({"n0", "n00"}), "n0,n00");
  EXPECT_EQ(CompressHostlist({"n9", "n010"}), "n9,n010");
  EXPECT_EQ(CompressHostlist({"n01", "n02", "n3", "n4"}), "n[01-02],n[3-4]");
}

TEST(CompressHostlistTest, MixedPrefixesAndNamesWithoutDigits) {
  EXPECT_EQ(CompressHostlist({"a1", "a2", "b1", "b2", "a3"}), "a[1-2],b[1-2],a3");
  EXPECT_EQ(CompressHostlist({"login", "n1", "n2", "gw"}), "login,n[1-2],gw");
  EXPECT_EQ(CompressHostlist({"r1n1", "r1n2", "r2n1", "r2n2"}), "r1n[1-2],r2n[1-2]");
  EXPECT_EQ(CompressHostlist({"n1a", "n2a"}), "n1a,n2a");  // the number must be at the end
  EXPECT_EQ(CompressHostlist({"n1", "n2x", "n3"}), "n1,n2x,n3");
  EXPECT_EQ(CompressHostlist({"n-1", "n-2"}), "n-[1-2]");
}

TEST(CompressHostlistTest, NamesThatCannotBeCompressedAreLeftAlone) {
  EXPECT_EQ(CompressHostlist({"s[1-2]", "s3", "s4"}), "s[1-2],s[3-4]");
  EXPECT_EQ(CompressHostlist({"a[1]", "a[2]"}), "a[1],a[2]");
  EXPECT_EQ(CompressHostlist({"x,1", "x,2"}), "x,1,x,2");
  EXPECT_EQ(CompressHostlist({"x1]", "x2]"}), "x1],x2]");
  // Numbers past 18 digits are not parsed; such names stay as they are.
  const std::string long1 = "n1234567890123456789", long2 = "n1234567890123456790";
  EXPECT_EQ(CompressHostlist({long1, long2}), long1 + "," + long2);
  EXPECT_EQ(CompressHostlist({"n123456789012345678", "n123456789012345679"}), "n[123456789012345678-123456789012345679]");
}

TEST(CompressHostlistTest, ExpandsBackForTheCasesAbove) {
  for (const V& v : {V{"n08", "n09", "n10", "n12"}, V{"n9", "n10", "n0", "n1"}, V{"a1", "b1", "a2"}, V{"n01", "n1", "n001"},
                     V{"login", "x", "r1n1", "r1n2"}, V{"n3", "n2", "n1", "n1"}}) {
    EXPECT_EQ(Expand(CompressHostlist(v)), v) << CompressHostlist(v);
  }
}

// Names of the compressible kind: a prefix without brackets, commas or
// surrounding blanks, then optionally a number (maybe zero-padded).
rc::Gen<std::string> CompressibleName() {
  return rc::gen::apply(
      [](int prefix, bool with_number, int number, int pad) {
        static const char* kPrefixes[] = {"n", "node", "rack-", "r1n", "gpu-a", "x y", ""};
        std::string name = kPrefixes[prefix];
        if (with_number || name.empty()) {
          std::string digits = std::to_string(number);
          if (static_cast<int>(digits.size()) < pad) digits.insert(0, static_cast<size_t>(pad) - digits.size(), '0');
          name += digits;
        }
        return name;
      },
      rc::gen::inRange(0, 7), rc::gen::map(rc::gen::inRange(0, 6), [](int x) { return x != 0; }), rc::gen::inRange(0, 120),
      rc::gen::inRange(0, 4));
}

RC_GTEST_PROP(HostlistProperty, ExpandUndoesCompress, ()) {
  // Mostly ascending runs with gaps (what clusters look like), sometimes shuffled.
  const auto names = *rc::gen::container<V>(CompressibleName());
  V v = names;
  if (*rc::gen::inRange(0, 3) != 0) std::sort(v.begin(), v.end(), [](const std::string& a, const std::string& b) {
      return a.size() != b.size() ? a.size() < b.size() : a < b;
    });
  const std::string text = CompressHostlist(v);
  auto back = ExpandHostlist(text);
  RC_ASSERT(back.has_value());
  RC_ASSERT(*back == v);
}

RC_GTEST_PROP(HostlistProperty, DenseRunsCompressToOneRange, ()) {
  const int lo = *rc::gen::inRange(0, 1000);
  const int count = *rc::gen::inRange(2, 200);
  V v;
  for (int i = lo; i < lo + count; ++i) v.push_back("node" + std::to_string(i));
  RC_ASSERT(CompressHostlist(v) == "node[" + std::to_string(lo) + "-" + std::to_string(lo + count - 1) + "]");
}

}  // namespace
}  // namespace tidal::topo

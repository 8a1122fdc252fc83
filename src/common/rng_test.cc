#include "common/rng.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

namespace tidal {
namespace {

TEST(RngTest, SameSeedSameSequence) {
  Rng a(42), b(42), c(43);
  bool differs = false;
  for (int i = 0; i < 100; ++i) {
    uint64_t x = a.Next();
    EXPECT_EQ(x, b.Next());
    differs |= x != c.Next();
  }
  EXPECT_TRUE(differs);
}

TEST(RngTest, UniformStaysInRangeAndCoversIt) {
  Rng r(7);
  std::vector<int> hits(10, 0);
  for (int i = 0; i < 10000; ++i) {
    uint64_t v = r.Uniform(10);
    ASSERT_LT(v, 10u);
    ++hits[v];
  }
  for (int h : hits) EXPECT_GT(h, 800);
}

TEST(RngTest, ShuffleIsAPermutation) {
  Rng r(1);
  std::vector<int> v(1000);
  std::iota(v.begin(), v.end(), 0);
  auto w = v;
  r.Shuffle(w);
  EXPECT_NE(v, w);
  std::sort(w.begin(), w.end());
  EXPECT_EQ(v, w);
}

}  // namespace
}  // namespace tidal

#include "scheduler/attained_bound.h"

#include <gtest/gtest.h>

namespace tidal {
namespace {

TEST(AttainedBound, EmptyHoldsNone) {
  AttainedBound b;
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(b.MaxAt(1000), AttainedBound::kNone);
}

TEST(AttainedBound, TheMostAttainedGrowsWithEachJobsGpus) {
  AttainedBound b;
  b.Add(/*attained=*/5000, /*start=*/100, /*gpus=*/1);  // 5000 + (t - 100)
  b.Add(0, 200, 8);                                     // (t - 200) * 8
  EXPECT_FALSE(b.empty());
  EXPECT_EQ(b.MaxAt(100), 5000);
  EXPECT_EQ(b.MaxAt(200), 5100);
  // 8-GPU job: 800 * 8 = 6400 at t = 1000; the 1-GPU job 5900.
  EXPECT_EQ(b.MaxAt(1000), 6400);
  EXPECT_EQ(b.MaxAt(900), 5800);  // 5800 against 5600
}

TEST(AttainedBound, RemovingOneOfTwoEqualJobsKeepsTheOther) {
  AttainedBound b;
  b.Add(100, 0, 2);
  b.Add(100, 0, 2);
  b.Add(50, 0, 4);
  b.Remove(100, 0, 2);
  EXPECT_EQ(b.MaxAt(0), 100);
  b.Remove(100, 0, 2);
  EXPECT_EQ(b.MaxAt(0), 50);
  EXPECT_EQ(b.MaxAt(10), 90);
  b.Remove(50, 0, 4);
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(b.MaxAt(10), AttainedBound::kNone);
}

TEST(AttainedBound, RemovingTheLargestFallsBackToTheNext) {
  AttainedBound b;
  b.Add(10, 0, 1);
  b.Add(30, 0, 1);
  b.Add(20, 0, 1);
  b.Remove(30, 0, 1);
  EXPECT_EQ(b.MaxAt(0), 20);
}

TEST(AttainedBound, RemovingWhatWasNeverAddedChangesNothing) {
  AttainedBound b;
  b.Add(10, 0, 1);
  b.Remove(10, 0, 2);  // another GPU count
  b.Remove(11, 0, 1);  // another key
  EXPECT_EQ(b.MaxAt(0), 10);
}

}  // namespace
}  // namespace tidal

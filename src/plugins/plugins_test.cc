#include <gtest/gtest.h>

#include "plugins/registry.h"

namespace tidal::plugins {
namespace {

TEST(RegistryTest, KnowsTheSixPaperPolicies) {
  EXPECT_EQ(PolicyNames().size(), 6u);
  EXPECT_EQ(*PolicyLabel("fgd"), "06-FGD");
  EXPECT_FALSE(PolicyLabel("nope").has_value());
}

}  // namespace
}  // namespace tidal::plugins

#include "mig/packer.h"

#include <gtest/gtest.h>

namespace tidal::mig {
namespace {

const Geometry& G() { return *FindGeometry("H100"); }
int P(const char* n) { return G().FindProfile(n); }
Layout L(const char* text) { return *ParseLayout(G(), text); }

RequestMix Mix(std::initializer_list<std::pair<const char*, double>> w) {
  RequestMix m;
  m.weight.assign(G().profiles.size(), 0.0);
  for (auto [n, x] : w) m.weight[static_cast<size_t>(P(n))] = x;
  return m;
}

TEST(MigPacker, MaxAddable) {
  EXPECT_EQ(MaxAddable(G(), {}, P("1g.10gb")), 7);
  EXPECT_EQ(MaxAddable(G(), {}, P("1g.20gb")), 4);
  EXPECT_EQ(MaxAddable(G(), {}, P("1g.10gb+me")), 1);
  EXPECT_EQ(MaxAddable(G(), {}, P("3g.40gb")), 2);
  EXPECT_EQ(MaxAddable(G(), L("3g.40gb@0"), P("2g.20gb")), 1);
  EXPECT_EQ(MaxAddable(G(), L("3g.40gb@4"), P("4g.40gb")), 1);
  EXPECT_EQ(MaxAddable(G(), L("3g.40gb@4"), P("4g.40gb"), {.allow_4g_with_3g = false}), 0);
  EXPECT_EQ(MaxAddable(G(), L("1g.10gb@0,1g.10gb@5"), P("2g.20gb")), 1);  // @2; @0 and @4 are broken
}

TEST(MigPacker, FragmentationByHand) {
  const RequestMix m = Mix({{"1g.10gb", 0.5}, {"3g.40gb", 0.5}});
  // Empty: 1g uses all 7; 3g at most 2 x 3 = 6, so 1 slice is lost to it.
  EXPECT_DOUBLE_EQ(Fragmentation(G(), {}, m), 0.5);
  // 1g@0 held: 6 free; 3g only at 4 -> 3 of 6 lost for it.
  EXPECT_DOUBLE_EQ(Fragmentation(G(), L("1g.10gb@0"), m), 1.5);
  EXPECT_DOUBLE_EQ(Fragmentation(G(), L("1g.10gb@0,1g.10gb@1"), m), 1.0);
  EXPECT_DOUBLE_EQ(Fragmentation(G(), L("1g.10gb@0,1g.10gb@4"), m), 2.5);
  // Weights are normalised.
  EXPECT_DOUBLE_EQ(Fragmentation(G(), L("1g.10gb@0"), Mix({{"1g.10gb", 2}, {"3g.40gb", 2}})), 1.5);
  // A mix with no weight at all scores 0, not 0 / 0.
  RequestMix none;
  none.weight.assign(G().profiles.size(), 0.0);
  EXPECT_EQ(Fragmentation(G(), L("1g.10gb@0"), none), 0.0);
  // A full GPU has nothing to fragment.
  EXPECT_DOUBLE_EQ(Fragmentation(G(), L("7g.80gb@0"), m), 0.0);
}

TEST(MigPacker, BestSlotKeepsTheOtherHalfWhole) {
  const RequestMix m = Mix({{"1g.10gb", 0.5}, {"3g.40gb", 0.5}});
  Layout held = L("1g.10gb@0");
  GpuSlots gpu{&held, {true}};
  auto c = BestSlot(G(), gpu, P("1g.10gb"), m);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->instance.start, 1);  // 1g@4..6 would kill the last 3g slot
  EXPECT_DOUBLE_EQ(c->delta, -0.5);
  EXPECT_FALSE(c->reuse);
  // The greedy baseline takes the lowest start too here, but on an empty
  // GPU with a 3g held at 0 it does not care which half it breaks:
  Layout three = L("3g.40gb@0");
  GpuSlots g3{&three, {true}};
  auto first = FirstSlot(G(), g3, P("1g.10gb"));
  ASSERT_TRUE(first);
  EXPECT_EQ(first->instance.start, 4);
}

TEST(MigPacker, BestSlotPrefersAFreeInstanceOnATie) {
  const RequestMix only1g = Mix({{"1g.10gb", 1}});
  Layout layout = L("1g.10gb@3");
  GpuSlots gpu{&layout, {false}};
  auto c = BestSlot(G(), gpu, P("1g.10gb"), only1g);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->instance.start, 3);
  EXPECT_TRUE(c->reuse);
  auto f = FirstSlot(G(), gpu, P("1g.10gb"));
  ASSERT_TRUE(f);
  EXPECT_TRUE(f->reuse);
  EXPECT_EQ(f->instance.start, 3);
  EXPECT_EQ(f->delta, 0.0);  // first-fit does not score
}

TEST(MigPacker, FreeInstancesDoNotBlock) {
  // A free 7g may be destroyed: a 3g still fits, at the slot that keeps
  // the other 3g slot.
  Layout layout = L("7g.80gb@0");
  GpuSlots gpu{&layout, {false}};
  auto c = BestSlot(G(), gpu, P("3g.40gb"), Mix({{"3g.40gb", 1}}));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->instance.start, 0);
  EXPECT_FALSE(c->reuse);
  Layout full = L("7g.80gb@0");
  GpuSlots held{&full, {true}};
  EXPECT_FALSE(BestSlot(G(), held, P("1g.10gb"), {}));
  EXPECT_FALSE(FirstSlot(G(), held, P("1g.10gb")));
  // An idle GPU not in MIG mode.
  GpuSlots idle;
  auto i = BestSlot(G(), idle, P("4g.40gb"), {});
  ASSERT_TRUE(i);
  EXPECT_EQ(i->instance.start, 0);
}

}  // namespace
}  // namespace tidal::mig

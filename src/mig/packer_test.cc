#include "mig/packer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

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

// Every valid layout of g (held instances in start order).
void AllLayouts(const Geometry& g, DriverCaps caps, Layout& l, std::vector<Layout>& out) {
  out.push_back(l);
  const int last = l.instances.empty() ? -1 : l.instances.back().start;
  for (int k = 0; k < static_cast<int>(g.profiles.size()); ++k) {
    for (int s : g.profile(k).starts) {
      if (s <= last || !Fits(g, l, {k, s}, caps)) continue;
      l.instances.push_back({k, s});
      AllLayouts(g, caps, l, out);
      l.instances.pop_back();
    }
  }
}

// The memo answers as the brute force does, on every valid layout of every
// geometry, for both driver generations, every profile and three mixes; its
// keys tell every layout apart; BestSlot through it chooses the same slot
// with held and free instances mixed.
TEST(MigPacker, TheMemoAgreesWithTheBruteForceOnEveryLayout) {
  for (const Geometry& g : AllGeometries()) {
    for (const bool r510 : {true, false}) {
      SCOPED_TRACE(g.model + (r510 ? " R510" : " pre-R510"));
      const DriverCaps caps{.allow_4g_with_3g = r510};
      std::vector<Layout> layouts;
      Layout scratch;
      AllLayouts(g, caps, scratch, layouts);
      ASSERT_GT(layouts.size(), 20u);
      AddableMemo memo(g, caps);
      std::set<uint32_t> keys;
      std::vector<RequestMix> mixes(3);
      mixes[1].weight.assign(g.profiles.size(), 0.0);
      mixes[1].weight[0] = 3;
      mixes[1].weight.back() = 1;
      for (size_t k = 0; k < g.profiles.size(); ++k) mixes[2].weight.push_back(1.0 + static_cast<double>(k % 3));
      for (size_t li = 0; li < layouts.size(); ++li) {
        const Layout& l = layouts[li];
        keys.insert(AddableMemo::Key(l));
        const std::vector<int8_t>& addable = memo.Of(l);
        ASSERT_EQ(addable.size(), g.profiles.size());
        for (int k = 0; k < static_cast<int>(g.profiles.size()); ++k) ASSERT_EQ(addable[static_cast<size_t>(k)], MaxAddable(g, l, k, caps)) << FormatLayout(g, l);
        for (const RequestMix& m : mixes) ASSERT_DOUBLE_EQ(memo.Fragmentation(l, m), Fragmentation(g, l, m, caps)) << FormatLayout(g, l);
        // Held = every other instance; the rest free.
        GpuSlots gpu{&l, {}};
        for (size_t i = 0; i < l.instances.size(); ++i) gpu.held.push_back((i + li) % 2 == 0);
        for (int k = 0; k < static_cast<int>(g.profiles.size()); ++k) {
          auto plain = BestSlot(g, gpu, k, mixes[2], caps);
          auto fast = BestSlot(memo, gpu, k, mixes[2]);
          ASSERT_EQ(plain.has_value(), fast.has_value()) << FormatLayout(g, l) << " " << g.profile(k).name;
          if (!plain) continue;
          EXPECT_EQ(plain->instance, fast->instance) << FormatLayout(g, l) << " " << g.profile(k).name;
          EXPECT_EQ(plain->reuse, fast->reuse);
          EXPECT_DOUBLE_EQ(plain->delta, fast->delta);
        }
      }
      EXPECT_EQ(keys.size(), layouts.size());
      EXPECT_EQ(memo.size(), layouts.size());
    }
  }
}

// A tie at the smallest increase, where that increase is not zero: a free
// instance at the later start wins over a new one at the earlier start, in
// both the brute force and the memo (every such case on the H100).
TEST(MigPacker, AFreeInstanceWinsATieAtAnyIncrease) {
  AddableMemo memo(G());
  std::vector<Layout> layouts;
  Layout scratch;
  AllLayouts(G(), {}, scratch, layouts);
  int checked = 0;
  for (const Layout& held : layouts) {
    for (int k = 0; k < static_cast<int>(G().profiles.size()); ++k) {
      const std::vector<SlotChoice> d = SlotDeltas(memo, held, k, {});
      if (d.size() < 2) continue;
      double lo = d[0].delta;
      for (const SlotChoice& c : d) lo = std::min(lo, c.delta);
      std::vector<Instance> tied;
      for (const SlotChoice& c : d)
        if (std::abs(c.delta - lo) <= 1e-9) tied.push_back(c.instance);
      if (tied.size() < 2 || std::abs(lo) <= 1e-9) continue;
      Layout l = held;
      l.instances.push_back(tied.back());
      Normalize(l);
      GpuSlots gpu{&l, {}};
      for (const Instance& in : l.instances) gpu.held.push_back(!(in == tied.back()));
      for (const auto& got : {BestSlot(G(), gpu, k, {}), BestSlot(memo, gpu, k, {})}) {
        ASSERT_TRUE(got);
        EXPECT_EQ(got->instance, tied.back()) << FormatLayout(G(), held) << " " << G().profile(k).name;
        EXPECT_TRUE(got->reuse);
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 10);
}

TEST(MigPacker, SlotDeltasListEveryFittingStart) {
  AddableMemo memo(G());
  const RequestMix m = Mix({{"1g.10gb", 0.5}, {"3g.40gb", 0.5}});
  auto d = SlotDeltas(memo, L("1g.10gb@0"), P("1g.10gb"), m);
  ASSERT_EQ(d.size(), 6u);  // starts 1..6
  EXPECT_EQ(d[0].instance.start, 1);
  EXPECT_DOUBLE_EQ(d[0].delta, -0.5);
  EXPECT_DOUBLE_EQ(d[3].delta, 1.0);  // @4 kills the last 3g slot: frag 1.5 -> 2.5
  EXPECT_TRUE(SlotDeltas(memo, L("1g.10gb@1,1g.10gb@5"), P("3g.40gb"), m).empty());
}

}  // namespace
}  // namespace tidal::mig

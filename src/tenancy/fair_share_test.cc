// Fair share: the decayed usage meter against the closed form and a numeric
// integral, the half-life, shares from floors x weight, Slurm's factor and
// the usage/share order, and Kueue's dominant resource share — every
// expected value worked out by hand.
#include "tenancy/fair_share.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace tidal::tenancy {
namespace {

// org -> a (3 GPUs, weight 1), b (1 GPU, weight 2), and optionally c (no GPU floor).
TenantTree Tree(bool with_c = false) {
  std::vector<TenantSpec> specs = {{.name = "org"}, {.name = "a", .parent = "org"}, {.name = "b", .parent = "org", .weight = 2}};
  specs[1].quotas = {{"gpu", Quota{.nominal = 3000}}};
  specs[2].quotas = {{"gpu", Quota{.nominal = 1000}}};
  if (with_c) specs.push_back({.name = "c", .parent = "org", .weight = 4});
  auto t = TenantTree::Build(std::move(specs));
  EXPECT_TRUE(t.has_value()) << t.error().message;
  return std::move(*t);
}

void ExpectRelNear(double actual, double expected, double rel) {
  EXPECT_NEAR(actual, expected, std::abs(expected) * rel) << "expected " << expected;
}

// U(T) from zero at constant rate r: the integral of r 2^(-(T-s)/H) ds over [0, T].
double ClosedForm(double r, double h, double t) { return r * h / std::log(2.0) * (1 - std::pow(2.0, -t / h)); }

TEST(UsageMeterTest, ConstantRateFromZeroMatchesTheClosedForm) {
  const double h = 3600;
  for (int64_t t_end : {int64_t{1}, int64_t{600}, int64_t{3600}, int64_t{7200}, int64_t{86400}}) {
    const TenantTree tree = Tree();
    UsageMeter m(tree, h);
    const TenantId a = tree.Find("a"), b = tree.Find("b");
    m.Advance(0);
    m.AddRate(a, 4);
    m.Advance(t_end);
    ExpectRelNear(m.decayed(a), ClosedForm(4, h, static_cast<double>(t_end)), 1e-9);
    EXPECT_EQ(m.decayed(b), 0);
    ExpectRelNear(m.total(), m.decayed(a), 1e-15);
  }
  // Spot values: T = H gives r H / ln2 / 2; T >> H tends to r H / ln 2.
  const TenantTree tree = Tree();
  UsageMeter m(tree, 3600);
  m.Advance(0);
  m.AddRate(tree.Find("a"), 2);
  m.Advance(3600);
  ExpectRelNear(m.decayed(tree.Find("a")), 2 * 3600 / 0.6931471805599453 / 2, 1e-12);
}

TEST(UsageMeterTest, ClosedFormAgreesWithANumericIntegral) {
  // Midpoint rule for the integral of r 2^(-(T-s)/H) ds, independent of the closed form.
  const double r = 3, h = 1000, t_end = 2500;
  const int n = 200000;
  double sum = 0;
  for (int i = 0; i < n; ++i) {
    const double s = (i + 0.5) * t_end / n;
    sum += r * std::pow(2.0, -(t_end - s) / h) * (t_end / n);
  }
  const TenantTree tree = Tree();
  UsageMeter m(tree, h);
  m.Advance(0);
  m.AddRate(tree.Find("b"), r);
  m.Advance(static_cast<int64_t>(t_end));
  ExpectRelNear(m.decayed(tree.Find("b")), sum, 1e-9);
}

TEST(UsageMeterTest, StepsIntegrateExactlyAndRatesChangeBetweenEvents) {
  const double h = 7200;
  const TenantTree tree = Tree();
  const TenantId a = tree.Find("a");
  UsageMeter one(tree, h), many(tree, h);
  one.Advance(0);
  many.Advance(0);
  one.AddRate(a, 5);
  many.AddRate(a, 5);
  one.Advance(10000);
  for (int64_t t = 1000; t <= 10000; t += 1000) many.Advance(t);
  ExpectRelNear(many.decayed(a), one.decayed(a), 1e-12);

  // Rate 5 on [0, 10000), then 1 on [10000, 13000): U = U1 d + 1 H/ln2 (1 - d), d = 2^(-3000/H).
  const double u1 = ClosedForm(5, h, 10000);
  one.AddRate(a, -4);
  one.Advance(13000);
  const double d = std::pow(2.0, -3000 / h);
  ExpectRelNear(one.decayed(a), u1 * d + 1 * h / std::log(2.0) * (1 - d), 1e-9);
}

TEST(UsageMeterTest, UsageHalvesEveryHalfLifeAtRateZero) {
  const double h = 5000;
  const TenantTree tree = Tree();
  const TenantId a = tree.Find("a");
  UsageMeter m(tree, h);
  m.Advance(0);
  m.AddRate(a, 8);
  m.Advance(20000);
  const double u0 = m.decayed(a);
  ASSERT_GT(u0, 0);
  m.AddRate(a, -8);
  m.Advance(25000);
  ExpectRelNear(m.decayed(a), u0 / 2, 1e-12);
  m.Advance(35000);
  ExpectRelNear(m.decayed(a), u0 / 8, 1e-12);
  // A rate taken below zero stays at zero: nothing is integrated.
  m.AddRate(a, -3);
  m.Advance(40000);
  ExpectRelNear(m.decayed(a), u0 / 16, 1e-12);
  // The clock never moves back.
  m.Advance(1000);
  ExpectRelNear(m.decayed(a), u0 / 16, 1e-12);
}

TEST(UsageMeterTest, TheFirstAdvanceSetsTheClock) {
  const double h = 3600;
  const TenantTree tree = Tree();
  const TenantId a = tree.Find("a");
  UsageMeter m(tree, h);
  const int64_t t0 = 1'700'000'000;  // an epoch timestamp: nothing is integrated from 0
  m.Advance(t0);
  EXPECT_EQ(m.decayed(a), 0);
  m.AddRate(a, 4);
  m.Advance(t0 + 1800);
  ExpectRelNear(m.decayed(a), ClosedForm(4, h, 1800), 1e-9);
  // A non-positive half-life means the default, 7 days.
  UsageMeter def(tree, 0);
  def.Advance(0);
  def.AddRate(a, 1);
  def.Advance(7 * 86400);
  ExpectRelNear(def.decayed(a), 7 * 86400 / std::log(2.0) / 2, 1e-9);
}

TEST(UsageMeterTest, ShareIsFloorOverFloorsTimesWeight) {
  const TenantTree t = Tree(/*with_c=*/true);
  UsageMeter m(t, 3600);
  // floors 3000 + 1000 + 0 = 4000.
  EXPECT_DOUBLE_EQ(m.share(t.Find("a")), 0.75 * 1);
  EXPECT_DOUBLE_EQ(m.share(t.Find("b")), 0.25 * 2);
  EXPECT_DOUBLE_EQ(m.share(t.Find("c")), 1e-6 * 4);  // no floor: a small share, still times weight
  EXPECT_EQ(m.share(t.root()), 0);                   // inner tenants have none

  // No GPU floors anywhere: shares by weight alone, w / sum of weights.
  std::vector<TenantSpec> specs = {{.name = "org"}, {.name = "x", .parent = "org"}, {.name = "y", .parent = "org", .weight = 3}};
  specs[1].quotas = {{"cpu", Quota{.nominal = 1000}}};
  auto w = TenantTree::Build(specs);
  ASSERT_TRUE(w.has_value());
  UsageMeter mw(*w, 3600);
  EXPECT_DOUBLE_EQ(mw.share(w->Find("x")), 0.25);
  EXPECT_DOUBLE_EQ(mw.share(w->Find("y")), 0.75);
  // A gpu resource whose floors are all 0: the same.
  specs[1].quotas = {{"gpu", Quota{.nominal = 0}}};
  auto z = TenantTree::Build(specs);
  ASSERT_TRUE(z.has_value());
  UsageMeter mz(*z, 3600);
  EXPECT_DOUBLE_EQ(mz.share(z->Find("x")), 0.25);
  EXPECT_DOUBLE_EQ(mz.share(z->Find("y")), 0.75);
}

TEST(UsageMeterTest, SlurmFactorAndNormalizedUsageByHand) {
  const TenantTree t = Tree();
  const TenantId a = t.Find("a"), b = t.Find("b");
  UsageMeter m(t, 3600);
  // Nothing ran: usage 0, factor 1.
  EXPECT_EQ(m.NormalizedUsageOverShare(a), 0);
  EXPECT_EQ(m.SlurmFactor(a), 1);
  m.Advance(0);
  m.AddRate(a, 3);
  m.AddRate(b, 1);
  m.Advance(5000);
  // Same window, so decayed usage is in proportion to rate: a 3/4, b 1/4.
  // a: 0.75 / share 0.75 = 1 -> F = 2^-1; b: 0.25 / 0.5 = 0.5 -> F = 2^-0.5.
  EXPECT_NEAR(m.NormalizedUsageOverShare(a), 1.0, 1e-12);
  EXPECT_NEAR(m.NormalizedUsageOverShare(b), 0.5, 1e-12);
  EXPECT_NEAR(m.SlurmFactor(a), 0.5, 1e-12);
  EXPECT_NEAR(m.SlurmFactor(b), 0.7071067811865476, 1e-12);
  EXPECT_GT(m.SlurmFactor(b), m.SlurmFactor(a));  // b used less than its share: runs first
}

// Random floors, weights and rate schedules: Slurm's factor orders the
// tenants exactly opposite to usage/share (the order tidal uses), and lies in
// (0, 1] for tenants with a floor (for those without, see below).
RC_GTEST_PROP(UsageMeterProperty, SlurmFactorOrderIsUsageOverShareOrder, ()) {
  const int n = *rc::gen::inRange(2, 6);
  std::vector<TenantSpec> specs = {{.name = "org"}};
  for (int i = 0; i < n; ++i) {
    TenantSpec s{.name = fmt::format("t{}", i), .parent = "org", .weight = static_cast<double>(*rc::gen::inRange(1, 9))};
    s.quotas = {{"gpu", Quota{.nominal = *rc::gen::inRange<int64_t>(0, 17) * 1000}}};
    specs.push_back(std::move(s));
  }
  auto tree = TenantTree::Build(specs);
  RC_ASSERT(tree.has_value());
  UsageMeter m(*tree, static_cast<double>(*rc::gen::inRange(60, 100000)));
  const std::vector<TenantId> leaves = tree->Leaves();
  int64_t now = *rc::gen::inRange<int64_t>(0, 1000);
  m.Advance(now);
  const int events = *rc::gen::inRange(1, 30);
  for (int e = 0; e < events; ++e) {
    m.AddRate(*rc::gen::elementOf(leaves), static_cast<double>(*rc::gen::inRange(-4, 9)));
    now += *rc::gen::inRange<int64_t>(0, 20000);
    m.Advance(now);
  }
  for (TenantId x : leaves) {
    const double f = m.SlurmFactor(x);
    RC_ASSERT(f >= 0);
    RC_ASSERT(f <= 1);
    if (tree->nominal(x, 0) > 0) RC_ASSERT(f > 0);
    for (TenantId y : leaves) {
      const double ux = m.NormalizedUsageOverShare(x), uy = m.NormalizedUsageOverShare(y);
      if (ux < uy) RC_ASSERT(f >= m.SlurmFactor(y));
      if (f > m.SlurmFactor(y)) RC_ASSERT(ux < uy);
    }
  }
}

// Disabled: fair_share.h promises a factor in (0, 1], but a tenant without a
// GPU floor has share 1e-6 x weight, so any real use gives usage/share in the
// hundreds of thousands and 2^(-that) underflows to 0 — and every such tenant
// ties at 0 whatever it used.
TEST(UsageMeterTest, SlurmFactorOfATenantWithoutAFloorStaysPositive) {
  const TenantTree t = Tree(/*with_c=*/true);
  const TenantId a = t.Find("a"), c = t.Find("c");
  UsageMeter m(t, 3600);
  m.Advance(0);
  m.AddRate(a, 1);
  m.AddRate(c, 1);
  m.Advance(3600);
  // c: usage 1/2, share 4e-6 -> usage/share = 125000; 2^-125000 is below the smallest double.
  EXPECT_NEAR(m.NormalizedUsageOverShare(c), 125000, 1e-6);
  EXPECT_GT(m.SlurmFactor(c), 0);
}

TEST(DominantResourceShareTest, ZeroWithinQuotaAboveItOverTheParentsQuota) {
  auto build = [] {
    std::vector<TenantSpec> specs = {{.name = "org"}, {.name = "a", .parent = "org"}, {.name = "b", .parent = "org", .weight = 2}};
    specs[1].quotas = {{"gpu", Quota{.nominal = 4000}}, {"cpu", Quota{.nominal = 8000}}};
    specs[2].quotas = {{"gpu", Quota{.nominal = 4000}}, {"cpu", Quota{.nominal = 8000}}};
    auto t = TenantTree::Build(std::move(specs));
    EXPECT_TRUE(t.has_value());
    return std::move(*t);
  };
  {
    TenantTree t = build();
    const ResourceId gpu = *t.resource("gpu");
    const TenantId a = t.Find("a");
    EXPECT_EQ(DominantResourceShare(t, a), 0);  // nothing used
    t.Add(a, {{gpu, 3000}});
    EXPECT_EQ(DominantResourceShare(t, a), 0);  // within quota
    t.Add(a, {{gpu, 1000}});
    EXPECT_EQ(DominantResourceShare(t, a), 0);  // exactly at quota
    t.Add(a, {{gpu, 2000}});
    EXPECT_EQ(DominantResourceShare(t, a), 250);  // (6000-4000)*1000/S(org)=8000
    EXPECT_EQ(DominantResourceShare(t, t.root()), 0);
  }
  {
    TenantTree t = build();
    const ResourceId gpu = *t.resource("gpu"), cpu = *t.resource("cpu");
    const TenantId a = t.Find("a");
    t.Add(a, {{gpu, 5000}, {cpu, 12000}});
    // gpu: 1000*1000/8000 = 125; cpu: 4000*1000/16000 = 250; the dominant one.
    EXPECT_EQ(DominantResourceShare(t, a), 250);
  }
  {
    TenantTree t = build();
    const TenantId b = t.Find("b");
    t.Add(b, {{*t.resource("gpu"), 7000}});
    // 3000*1000/8000 = 375, over weight 2 = 187.5 -> 187.
    EXPECT_EQ(DominantResourceShare(t, b), 187);
  }
}

TEST(DominantResourceShareTest, TheParentIsTheImmediateParent) {
  // org -> bg -> t1 (2), t2 (2); org -> c (4). S(bg)=4000, S(org)=8000.
  std::vector<TenantSpec> specs = {{.name = "org"}, {.name = "bg", .parent = "org"}, {.name = "t1", .parent = "bg"},
                                   {.name = "t2", .parent = "bg"}, {.name = "c", .parent = "org"}};
  specs[2].quotas = {{"gpu", Quota{.nominal = 2000}}};
  specs[3].quotas = {{"gpu", Quota{.nominal = 2000}}};
  specs[4].quotas = {{"gpu", Quota{.nominal = 4000}}};
  auto t = TenantTree::Build(std::move(specs));
  ASSERT_TRUE(t.has_value());
  t->Add(t->Find("t1"), {{0, 5000}});
  // t1: (5000-2000)*1000/S(bg)=4000 = 750; bg: U(bg)=5000, (5000-4000)*1000/S(org)=8000 = 125.
  EXPECT_EQ(DominantResourceShare(*t, t->Find("t1")), 750);
  EXPECT_EQ(DominantResourceShare(*t, t->Find("bg")), 125);
  EXPECT_EQ(DominantResourceShare(*t, t->Find("t2")), 0);
}

}  // namespace
}  // namespace tidal::tenancy

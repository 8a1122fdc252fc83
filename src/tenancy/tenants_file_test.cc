// The tenants file: a table of bad inputs, each asserted as the parts of the
// message a person needs (file:line where the reader gives one, the tenant,
// what to do); a full example read with its quantities worked out by hand;
// proportional floors (hand cases and a property); WithoutBorrowing.
#include "tenancy/tenants_file.h"

#include <gmock/gmock.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <random>
#include <string>
#include <unistd.h>
#include <vector>

namespace tidal::tenancy {
namespace {

using ::testing::HasSubstr;

// ParseTenantsYaml then Build: the first error, or "" when both succeed.
std::string ReadError(const std::string& text) {
  auto specs = ParseTenantsYaml(text, "t.yaml");
  if (!specs) return specs.error().message;
  auto tree = TenantTree::Build(std::move(*specs));
  return tree ? std::string() : tree.error().message;
}

TenantTree Read(const std::string& text) {
  auto specs = ParseTenantsYaml(text, "t.yaml");
  EXPECT_TRUE(specs.has_value()) << specs.error().message << "\n" << text;
  if (!specs) return *TenantTree::Build({TenantSpec{.name = "empty"}});
  auto tree = TenantTree::Build(std::move(*specs));
  EXPECT_TRUE(tree.has_value()) << tree.error().message << "\n" << text;
  if (!tree) return *TenantTree::Build({TenantSpec{.name = "empty"}});
  return std::move(*tree);
}

struct BadRow {
  std::string what;
  std::string text;
  std::vector<std::string> must_contain;
};
void PrintTo(const BadRow& row, std::ostream* os) { *os << row.what; }

// Lines 1-3; the rows' own lines start at 4.
const std::string kHead = "version: 1\ntenants:\n  - name: org\n";

const std::vector<BadRow> kBad = {
    {"quantity below the unit", kHead + "  - name: a\n    parent: org\n    quota:\n      gpu: {nominal: 0.0001}\n",
     {"t.yaml:7", "'0.0001'", "below its unit"}},
    {"hex quantity", kHead + "  - name: a\n    parent: org\n    quota:\n      memory: {nominal: 0x10}\n",
     {"t.yaml:7", "'0x10'", "not a quantity"}},
    {"not YAML", "version: 1\ntenants: [\n  - name: org\n", {"t.yaml:", "not valid YAML"}},
    {"a YAML scalar, not a map", "just some words\n", {"t.yaml:1", "version: 1"}},
    {"missing version", "tenants:\n  - name: org\n", {"t.yaml:1", "starts with 'version: 1'"}},
    {"version 2", "version: 2\ntenants:\n  - name: org\n", {"t.yaml:1", "'version: 1'"}},
    {"unknown top key", "version: 1\ntenant:\n  - name: org\n", {"t.yaml:2", "unknown key 'tenant'", "known: version, tenants"}},
    {"tenants not a list", "version: 1\ntenants: org\n", {"t.yaml", "'tenants:' must list the tenants"}},
    {"tenants an empty list", "version: 1\ntenants: []\n", {"t.yaml", "'tenants:' must list the tenants"}},
    {"a tenant that is not a map", kHead + "  - ads\n", {"t.yaml:4", "each tenant is a map"}},
    {"tenant without name", kHead + "  - parent: org\n    weight: 2\n", {"t.yaml:4", "needs 'name:'"}},
    {"empty tenant name", kHead + "  - name: ''\n    parent: org\n", {"t.yaml:4", "no name"}},
    {"unknown tenant key", kHead + "  - name: ads\n    parent: org\n    quotas: {}\n",
     {"t.yaml:6", "unknown tenant key 'quotas'", "known: name, parent, weight, tier, groups, quota"}},
    {"unknown resource", kHead + "  - name: ads\n    parent: org\n    quota:\n      gpus: {nominal: 8}\n",
     {"t.yaml:7", "unknown resource 'gpus'", "known: gpu, gpu/<MODEL>, cpu, memory"}},
    {"gpu/ without a model", kHead + "  - name: ads\n    parent: org\n    quota:\n      gpu/: {nominal: 8}\n",
     {"t.yaml:7", "unknown resource 'gpu/'"}},
    {"quota not a map", kHead + "  - name: ads\n    parent: org\n    quota: 8\n", {"t.yaml:6", "'quota:' maps resources"}},
    {"quota without nominal", kHead + "  - name: ads\n    parent: org\n    quota:\n      gpu: {borrowing_limit: 8}\n",
     {"t.yaml:7", "resource 'gpu' needs {nominal: N}"}},
    {"quota a bare number", kHead + "  - name: ads\n    parent: org\n    quota:\n      gpu: 8\n",
     {"t.yaml:7", "resource 'gpu' needs {nominal: N}"}},
    {"unknown quota field", kHead + "  - name: ads\n    parent: org\n    quota:\n      gpu: {nominal: 8, borrow: 2}\n",
     {"t.yaml:7", "unknown quota field 'borrow'", "known: nominal, borrowing_limit, lending_limit"}},
    {"negative quota", kHead + "  - name: ads\n    parent: org\n    quota:\n      gpu: {nominal: -1}\n",
     {"t.yaml:7", "'-1'", "'gpu'", "negative"}},
    {"negative borrowing limit", kHead + "  - name: ads\n    parent: org\n    quota:\n      gpu: {nominal: 1, borrowing_limit: -2}\n",
     {"t.yaml:7", "'-2'", "negative"}},
    {"non-number quota", kHead + "  - name: ads\n    parent: org\n    quota:\n      gpu: {nominal: lots}\n",
     {"t.yaml:7", "'lots' is not a quantity for 'gpu'", "write e.g. 64, 0.5"}},
    {"memory with a bad suffix", kHead + "  - name: ads\n    parent: org\n    quota:\n      memory: {nominal: 4GB}\n",
     {"t.yaml:7", "'4GB' is not a quantity for 'memory'", "4096Gi"}},
    {"gpu with a memory suffix", kHead + "  - name: ads\n    parent: org\n    quota:\n      gpu: {nominal: 8Gi}\n",
     {"t.yaml:7", "'8Gi' is not a quantity for 'gpu'"}},
    {"infinite quota", kHead + "  - name: ads\n    parent: org\n    quota:\n      gpu: {nominal: .inf}\n",
     {"t.yaml:7", "not a quantity"}},
    {"overflowing quota", kHead + "  - name: ads\n    parent: org\n    quota:\n      gpu: {nominal: 1e20}\n",
     {"t.yaml:7", "'1e20'", "too large"}},
    {"just at 2^50 milli", kHead + "  - name: ads\n    parent: org\n    quota:\n      gpu: {nominal: 1125899906842.624}\n",
     {"t.yaml:7", "too large"}},
    {"resource given twice", kHead + "  - name: ads\n    parent: org\n    quota:\n      gpu: {nominal: 1}\n      gpu: {nominal: 2}\n",
     {"t.yaml:", "'gpu'", "twice"}},
    {"lending_limit above nominal", kHead + "  - name: ads\n    parent: org\n    quota:\n      gpu: {nominal: 4, lending_limit: 5}\n",
     {"t.yaml:4", "tenant 'ads'", "lending_limit 5000 is above its nominal quota 4000", "lend at most what it has"}},
    {"parent that does not exist", kHead + "  - name: ads\n    parent: orgg\n",
     {"t.yaml:4", "tenant 'ads'", "parent 'orgg'", "not a tenant"}},
    {"parent named by a group alias", kHead + "  - name: ads\n    parent: org\n    groups: [g1]\n  - name: r\n    parent: g1\n",
     {"t.yaml:7", "tenant 'r'", "parent 'g1'", "not a tenant"}},
    {"two roots", kHead + "  - name: other\n", {"t.yaml:4", "'org' and 'other'", "one root"}},
    {"a cycle beside the root", kHead + "  - name: a\n    parent: b\n  - name: b\n    parent: a\n",
     {"t.yaml:4", "tenant 'a'", "own ancestor", "cycle"}},
    {"a cycle and no root", "version: 1\ntenants:\n  - name: a\n    parent: b\n  - name: b\n    parent: a\n",
     {"t.yaml:3", "tenant 'a'", "cycle"}},
    {"its own parent", kHead + "  - name: a\n    parent: a\n", {"t.yaml:4", "tenant 'a'", "cycle"}},
    {"duplicate names", kHead + "  - name: ads\n    parent: org\n  - name: ads\n    parent: org\n",
     {"t.yaml:6", "'ads' is used twice", "unique"}},
    {"duplicate group alias", kHead + "  - name: a\n    parent: org\n    groups: [g1]\n  - name: b\n    parent: org\n    groups: [g2, g1]\n",
     {"t.yaml:7", "'g1' is used twice"}},
    {"group alias equal to a tenant name", kHead + "  - name: a\n    parent: org\n    groups: [org]\n", {"t.yaml:4", "'org' is used twice"}},
    {"groups not a list", kHead + "  - name: a\n    parent: org\n    groups: g1\n", {"t.yaml:6", "'groups:' is a list"}},
    {"bad tier", kHead + "  - name: a\n    parent: org\n    tier: gold\n",
     {"t.yaml:6", "unknown tier 'gold'", "choose guaranteed, standard or spot"}},
    {"weight 0", kHead + "  - name: a\n    parent: org\n    weight: 0\n", {"t.yaml:4", "tenant 'a'", "weight 0", "(0, 1e6]"}},
    {"negative weight", kHead + "  - name: a\n    parent: org\n    weight: -1\n", {"t.yaml:4", "tenant 'a'", "(0, 1e6]"}},
};

class BadTenantsFile : public ::testing::TestWithParam<BadRow> {};

TEST_P(BadTenantsFile, SaysWhereAndWhat) {
  const BadRow& row = GetParam();
  const std::string err = ReadError(row.text);
  ASSERT_FALSE(err.empty()) << "accepted:\n" << row.text;
  for (const std::string& part : row.must_contain) EXPECT_THAT(err, HasSubstr(part)) << row.text;
}

std::string BadName(const ::testing::TestParamInfo<BadRow>& info) {
  std::string s = std::to_string(info.index) + "_";
  for (char c : info.param.what) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return s;
}
INSTANTIATE_TEST_SUITE_P(Table, BadTenantsFile, ::testing::ValuesIn(kBad), BadName);

// Inputs the reader gets wrong today (disabled; enable with the fix):
//  * "name:" with no value is read as the tenant "null" and accepted;
//  * a value of the wrong YAML type (a word for weight, a list for a quantity)
//    gives yaml-cpp's bare "t.yaml:N: bad conversion": no field, no tenant,
//    nothing to do.
const std::vector<BadRow> kBadButMishandled = {
    {"name with no value", kHead + "  - name:\n    parent: org\n", {"t.yaml:4", "name"}},
    {"weight not a number", kHead + "  - name: a\n    parent: org\n    weight: heavy\n", {"t.yaml:6", "'heavy'", "weight"}},
    {"quantity a list", kHead + "  - name: a\n    parent: org\n    quota:\n      gpu: {nominal: [1]}\n", {"t.yaml:7", "'gpu'", "nominal"}},
    {"tier a list", kHead + "  - name: a\n    parent: org\n    tier: [spot]\n", {"t.yaml:6", "tier"}},
};
INSTANTIATE_TEST_SUITE_P(FormerlyMishandled, BadTenantsFile, ::testing::ValuesIn(kBadButMishandled), BadName);

// --- a good file ----------------------------------------------------------

const std::string kExample = R"(version: 1
tenants:
  - name: org
    quota:
      gpu: {nominal: 2}
  - name: ads
    parent: org
    weight: 2
    tier: guaranteed
    quota:
      gpu: {nominal: 64, borrowing_limit: 32, lending_limit: 16}
      gpu/H100: {nominal: 8}
      cpu: {nominal: 2}
      memory: {nominal: 4096Gi}
  - name: ads/ranking
    parent: ads
    groups: [11cb48, rank-old]
    quota:
      gpu: {nominal: 0.5}
      memory: {nominal: 1Ti}
  - name: search
    parent: org
    tier: spot
    quota:
      memory: {nominal: 512}
      cpu: {nominal: 0.25}
)";

TEST(TenantsFileTest, ExampleParsesWithMilliQuantities) {
  const TenantTree t = Read(kExample);
  ASSERT_EQ(t.size(), 4);
  const TenantId org = t.Find("org"), ads = t.Find("ads"), rank = t.Find("ads/ranking"), search = t.Find("search");
  ASSERT_NE(ads, kNoTenant);
  ASSERT_NE(rank, kNoTenant);
  ASSERT_NE(search, kNoTenant);
  EXPECT_EQ(t.root(), org);
  EXPECT_EQ(t.parent(ads), org);
  EXPECT_EQ(t.parent(rank), ads);
  EXPECT_EQ(t.parent(search), org);
  EXPECT_EQ(t.depth(rank), 2);
  EXPECT_EQ(t.spec(ads).weight, 2);
  EXPECT_EQ(t.spec(rank).weight, 1);  // default
  EXPECT_EQ(t.spec(ads).tier, Tier::kGuaranteed);
  EXPECT_EQ(t.spec(rank).tier, Tier::kStandard);  // default
  EXPECT_EQ(t.spec(search).tier, Tier::kSpot);
  EXPECT_EQ(t.spec(ads).source, "t.yaml:6");
  EXPECT_EQ(t.spec(search).source, "t.yaml:21");

  const ResourceId gpu = *t.resource("gpu"), h100 = *t.resource("gpu/H100"), cpu = *t.resource("cpu"),
                   mem = *t.resource("memory");
  EXPECT_EQ(t.nominal(org, gpu), 2000);
  EXPECT_EQ(t.nominal(ads, gpu), 64000);
  EXPECT_EQ(t.quota(ads, gpu).borrowing_limit, 32000);
  EXPECT_EQ(t.quota(ads, gpu).lending_limit, 16000);
  EXPECT_EQ(t.quota(rank, gpu).borrowing_limit, std::nullopt);
  EXPECT_EQ(t.nominal(ads, h100), 8000);
  EXPECT_EQ(t.nominal(ads, cpu), 2000);          // 2 cores
  EXPECT_EQ(t.nominal(search, cpu), 250);        // 0.25 cores
  EXPECT_EQ(t.nominal(ads, mem), 4194304);       // 4096Gi = 4096 * 1024 MiB
  EXPECT_EQ(t.nominal(rank, mem), 1048576);      // 1Ti = 1024 * 1024 MiB
  EXPECT_EQ(t.nominal(search, mem), 512);        // bare: MiB
  EXPECT_EQ(t.nominal(rank, gpu), 500);          // 0.5 GPU
  EXPECT_EQ(t.nominal(search, gpu), 0);          // not given
  // S(rank)=500; S(ads)=64000+500=64500, G(ads)=64500-16000=48500;
  // S(org)=2000+(64500-48500)+0=18000.
  EXPECT_EQ(t.subtree(ads, gpu), 64500);
  EXPECT_EQ(t.guaranteed(ads, gpu), 48500);
  EXPECT_EQ(t.subtree(org, gpu), 18000);

  // Group aliases resolve to their tenant; unknown names do not.
  EXPECT_EQ(t.Find("11cb48"), rank);
  EXPECT_EQ(t.Find("rank-old"), rank);
  EXPECT_EQ(t.Find("ranking"), kNoTenant);
  EXPECT_EQ(t.Find(""), kNoTenant);
}

TEST(TenantsFileTest, ReadTenantsFileNamesThePath) {
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("tidal_tenants_{}", ::getpid());
  std::filesystem::create_directories(dir);
  const std::string good = (dir / "good.yaml").string(), bad = (dir / "bad.yaml").string();
  std::ofstream(good) << kExample;
  std::ofstream(bad) << kHead << "  - name: ads\n    parent: nobody\n";
  auto t = ReadTenantsFile(good);
  ASSERT_TRUE(t.has_value()) << t.error().message;
  EXPECT_EQ(t->size(), 4);
  EXPECT_EQ(t->spec(t->Find("ads")).source, good + ":6");
  auto e = ReadTenantsFile(bad);
  ASSERT_FALSE(e.has_value());
  EXPECT_THAT(e.error().message, HasSubstr(bad + ":4"));
  EXPECT_THAT(e.error().message, HasSubstr("parent 'nobody'"));
  auto missing = ReadTenantsFile((dir / "none.yaml").string());
  ASSERT_FALSE(missing.has_value());
  EXPECT_THAT(missing.error().message, HasSubstr("none.yaml"));
  std::filesystem::remove_all(dir);
}

// --- proportional floors --------------------------------------------------

// Floors in milli-GPU by group name.
std::vector<std::pair<std::string, int64_t>> Floors(const TenantTree& t) {
  std::vector<std::pair<std::string, int64_t>> out;
  const ResourceId gpu = *t.resource("gpu");
  for (TenantId l : t.Leaves()) out.push_back({t.name(l), t.nominal(l, gpu)});
  std::sort(out.begin(), out.end());
  return out;
}
using FloorList = std::vector<std::pair<std::string, int64_t>>;

TEST(ProportionalTenantsTest, ExactSharesAndTheRoot) {
  auto t = ProportionalTenants({{"b", 3000}, {"a", 6000}, {"c", 1000}}, 10);
  ASSERT_TRUE(t.has_value()) << t.error().message;
  EXPECT_EQ(t->name(t->root()), "cluster");
  EXPECT_EQ(t->nominal(t->root(), *t->resource("gpu")), 0);
  EXPECT_EQ(Floors(*t), (FloorList{{"a", 6000}, {"b", 3000}, {"c", 1000}}));
  for (TenantId l : t->Leaves()) {
    EXPECT_EQ(t->parent(l), t->root());
    EXPECT_EQ(t->quota(l, 0).borrowing_limit, std::nullopt);
    EXPECT_EQ(t->quota(l, 0).lending_limit, std::nullopt);
  }
}

TEST(ProportionalTenantsTest, LargestRemainderTieGoesToTheFirstName) {
  // 10 GPUs / 3 = 3.33 each: floors 3,3,3, one left; equal remainders -> "a" (names sorted).
  auto t = ProportionalTenants({{"c", 1}, {"b", 1}, {"a", 1}}, 10);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(Floors(*t), (FloorList{{"a", 4000}, {"b", 3000}, {"c", 3000}}));
  // 10 GPUs at 45/35/20 of 100: 4.5, 3.5, 2.0 -> 4, 3, 2, one left; remainders .5, .5, 0: "a".
  auto u = ProportionalTenants({{"b", 35}, {"a", 45}, {"c", 20}}, 10);
  ASSERT_TRUE(u.has_value());
  EXPECT_EQ(Floors(*u), (FloorList{{"a", 5000}, {"b", 3000}, {"c", 2000}}));
  // 7 GPUs at 5/3/2 of 10: 3.5, 2.1, 1.4 -> 3, 2, 1, one left to "a" (remainder .5).
  auto v = ProportionalTenants({{"c", 2}, {"a", 5}, {"b", 3}}, 7);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(Floors(*v), (FloorList{{"a", 4000}, {"b", 2000}, {"c", 1000}}));
}

TEST(ProportionalTenantsTest, EveryGroupWithGpuTimeGetsAGpu) {
  // 4 GPUs: 3.996 and 0.004 -> 3 and 0, the remainder to "a" (4, 0); "b" asked, so it takes one from "a".
  auto t = ProportionalTenants({{"a", 1000}, {"b", 1}}, 4);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(Floors(*t), (FloorList{{"a", 3000}, {"b", 1000}}));
  // A group that asked for nothing gets nothing.
  auto u = ProportionalTenants({{"a", 1000}, {"idle", 0}}, 4);
  ASSERT_TRUE(u.has_value());
  EXPECT_EQ(Floors(*u), (FloorList{{"a", 4000}, {"idle", 0}}));
  // More groups than GPUs: no minimum (it cannot hold for all).
  auto v = ProportionalTenants({{"a", 100}, {"b", 100}, {"c", 1}}, 2);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(Floors(*v), (FloorList{{"a", 1000}, {"b", 1000}, {"c", 0}}));
}

// Disabled: the minimum counts the groups that asked for nothing too. Two
// groups asked for GPU time and there are 3 GPUs — enough for one each — but
// with two idle groups in the list (4 groups > 3 GPUs) "b" gets none.
TEST(ProportionalTenantsTest, IdleGroupsDoNotCancelTheMinimum) {
  // exact: a 3*1000/1001 = 2.997, b 0.003 -> floors 2, 0; the remainder to a (3, 0); b asked: 2, 1.
  auto t = ProportionalTenants({{"a", 1000}, {"b", 1}, {"c", 0}, {"d", 0}}, 3);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(Floors(*t), (FloorList{{"a", 2000}, {"b", 1000}, {"c", 0}, {"d", 0}}));
}

TEST(ProportionalTenantsTest, Errors) {
  auto empty_name = ProportionalTenants({{"a", 10}, {"", 5}}, 8);
  ASSERT_FALSE(empty_name.has_value());
  EXPECT_THAT(empty_name.error().message, HasSubstr("empty group"));
  auto no_gpus = ProportionalTenants({{"a", 10}}, 0);
  ASSERT_FALSE(no_gpus.has_value());
  EXPECT_THAT(no_gpus.error().message, HasSubstr("GPUs"));
  auto no_time = ProportionalTenants({{"a", 0}, {"b", 0}}, 8);
  ASSERT_FALSE(no_time.has_value());
  EXPECT_THAT(no_time.error().message, HasSubstr("no GPU time"));
  auto none = ProportionalTenants({}, 8);
  ASSERT_FALSE(none.has_value());
  auto twice = ProportionalTenants({{"a", 10}, {"a", 5}}, 8);
  ASSERT_FALSE(twice.has_value());
  EXPECT_THAT(twice.error().message, HasSubstr("'a'"));
}

// Random demands (every group asked for some GPU time) and cluster sizes:
// floors are whole GPUs summing to the total exactly; the same whatever the
// input order; each group gets >= 1 GPU when there are at least as many GPUs
// as groups; and when no group's exact share is below 1 GPU (so no floor is
// moved to make the minimum), each floor is within 1 GPU of its exact share.
RC_GTEST_PROP(ProportionalTenantsProperty, FloorsSumExactlyAndAreProportional, ()) {
  const int n = *rc::gen::inRange(1, 12);
  const int64_t total = *rc::gen::inRange<int64_t>(1, 300);
  std::vector<GroupUsage> groups;
  double sum = 0;
  for (int i = 0; i < n; ++i) {
    const double s = static_cast<double>(*rc::gen::inRange<int64_t>(1, 5'000'000));
    groups.push_back({fmt::format("g{}", i), s});
    sum += s;
  }
  auto t = ProportionalTenants(groups, total);
  RC_ASSERT(t.has_value());
  const FloorList floors = Floors(*t);
  RC_ASSERT(floors.size() == static_cast<size_t>(n));
  int64_t given = 0;
  bool all_at_least_one = true;
  for (const GroupUsage& g : groups) all_at_least_one &= total * g.gpu_seconds / sum >= 1;
  for (const auto& [name, milli] : floors) {
    RC_ASSERT(milli % 1000 == 0);
    RC_ASSERT(milli >= 0);
    given += milli;
    if (n <= total) RC_ASSERT(milli >= 1000);
    const auto g = std::find_if(groups.begin(), groups.end(), [&](const GroupUsage& x) { return x.group == name; });
    RC_ASSERT(g != groups.end());
    const double exact = static_cast<double>(total) * g->gpu_seconds / sum;
    if (all_at_least_one) RC_ASSERT(std::abs(static_cast<double>(milli) / 1000 - exact) < 1 + 1e-9);
  }
  RC_ASSERT(given == total * 1000);
  std::shuffle(groups.begin(), groups.end(), std::mt19937(*rc::gen::arbitrary<uint32_t>()));
  auto again = ProportionalTenants(groups, total);
  RC_ASSERT(again.has_value());
  RC_ASSERT(Floors(*again) == floors);
}

// --- without borrowing ----------------------------------------------------

TEST(WithLeavesTest, AddsLeavesUnderTheRootOrTheirParent) {
  const TenantTree base = Read(R"(version: 1
tenants:
  - name: org
  - name: bg
    parent: org
    quota:
      gpu: {nominal: 6}
)");
  TenantSpec inf{.name = "inf-chat", .tier = Tier::kGuaranteed, .source = "service"};
  inf.quotas.push_back({"gpu", Quota{.nominal = 2000, .lending_limit = 0}});
  TenantSpec team{.name = "team", .parent = "bg"};
  team.quotas.push_back({"gpu", Quota{.nominal = 1000}});
  auto t = WithLeaves(base, {inf, team});
  ASSERT_TRUE(t.has_value()) << t.error().message;
  ASSERT_EQ(t->size(), base.size() + 2);
  const ResourceId gpu = *t->resource("gpu");
  const TenantId i = t->Find("inf-chat");
  ASSERT_NE(i, kNoTenant);
  EXPECT_EQ(t->parent(i), t->root());
  EXPECT_EQ(t->parent(t->Find("team")), t->Find("bg"));
  EXPECT_TRUE(t->is_leaf(i));
  EXPECT_EQ(t->spec(i).tier, Tier::kGuaranteed);
  EXPECT_EQ(t->quota(i, gpu).lending_limit, 0);
  // S(bg) = 6000 + 1000 (team lends all); inf-chat lends nothing to the root
  // (lending limit 0: its 2000 are guaranteed to it alone).
  EXPECT_EQ(t->subtree(t->root(), gpu), 6000 + 1000);
  EXPECT_EQ(t->subtree(i, gpu), 2000);
  // A name that exists is refused by the tree's own validation.
  auto dup = WithLeaves(base, {TenantSpec{.name = "bg"}});
  EXPECT_FALSE(dup.has_value());
}

TEST(WithoutBorrowingTest, LeavesGetTheirFloorAndNoMore) {
  const TenantTree base = Read(R"(version: 1
tenants:
  - name: org
    quota:
      cpu: {nominal: 8}
  - name: bg
    parent: org
    quota:
      gpu: {nominal: 0, borrowing_limit: 3}
  - name: a
    parent: bg
    groups: [ga]
    quota:
      gpu: {nominal: 4}
  - name: b
    parent: bg
    quota:
      gpu: {nominal: 4, borrowing_limit: 2, lending_limit: 1}
  - name: c
    parent: org
    quota:
      gpu: {nominal: 2}
)");
  const ResourceId gpu = *base.resource("gpu"), cpu = *base.resource("cpu");
  // With borrowing, a idle tree lets a use far past its floor:
  // S(b)=4000, G(b)=3000; S(bg)=0+4000+(4000-3000)=5000; S(org)=5000+2000=7000;
  // A(a)=A(bg)=min(7000, 5000+3000)=7000.
  EXPECT_EQ(base.Available(base.Find("a"), gpu), 7000);
  EXPECT_EQ(base.Available(base.Find("a"), cpu), 8000);  // the root's cpu pool

  auto t = WithoutBorrowing(base);
  ASSERT_TRUE(t.has_value()) << t.error().message;
  ASSERT_EQ(t->size(), base.size());
  for (TenantId l : t->Leaves()) {
    for (ResourceId r = 0; r < t->num_resources(); ++r) EXPECT_EQ(t->quota(l, r).borrowing_limit, 0) << t->name(l);
  }
  // Inner nodes, names, aliases, lending limits, sources are kept.
  const TenantId a = t->Find("a"), b = t->Find("b"), c = t->Find("c"), bg = t->Find("bg");
  EXPECT_EQ(t->Find("ga"), a);
  EXPECT_EQ(t->quota(bg, gpu).borrowing_limit, 3000);
  EXPECT_EQ(t->quota(b, gpu).lending_limit, 1000);
  EXPECT_EQ(t->spec(b).source, base.spec(base.Find("b")).source);
  EXPECT_EQ(t->subtree(t->root(), gpu), 7000);

  // Available == own floor - usage, whatever the others do.
  EXPECT_EQ(t->Available(a, gpu), 4000);
  EXPECT_EQ(t->Available(b, gpu), 4000);
  EXPECT_EQ(t->Available(c, gpu), 2000);
  EXPECT_EQ(t->Available(a, cpu), 0);  // no cpu floor: the root's pool is out of reach
  EXPECT_FALSE(t->Fits(a, {{gpu, 4001}}));
  t->Add(a, {{gpu, 2500}});
  t->Add(b, {{gpu, 3500}});
  t->Add(c, {{gpu, 1000}});
  EXPECT_EQ(t->Available(a, gpu), 4000 - 2500);
  EXPECT_EQ(t->Available(b, gpu), 4000 - 3500);
  EXPECT_EQ(t->Available(c, gpu), 2000 - 1000);
  t->Add(a, {{gpu, 1500}});
  EXPECT_EQ(t->Available(a, gpu), 0);
  EXPECT_FALSE(t->Borrowing(a));
  EXPECT_EQ(t->Available(b, gpu), 500);
  EXPECT_EQ(t->Available(c, gpu), 1000);
}

}  // namespace
}  // namespace tidal::tenancy

#include "mig/mig_parted.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "common/csv.h"

namespace tidal::mig {
namespace {

const std::string kDir = std::string(TIDAL_SHARED_DIR) + "/fixtures/k8s-gpu-labels/";

std::string Slurp(const std::string& path) {
  auto text = ReadFileToString(path);
  EXPECT_TRUE(text) << text.error().message;
  return text ? *text : std::string();
}

const Geometry& G(std::string_view model) { return *FindGeometry(model); }

MigPartedConfig MustRead(std::string_view text, std::string_view source = "t.yaml") {
  auto c = ReadMigParted(text, source);
  EXPECT_TRUE(c) << c.error().message;
  return c ? *c : MigPartedConfig{};
}

// The PCI ids the fixtures' device-filters use for the GPUs tidal has a
// geometry of, as the configs' own comments name them ("H100-80GB, H800-80GB,
// A100-80GB, A800-80GB"; "A100-40GB, A800-40GB"; "H200 141GB, H200 NVL"):
// GA100 parts are 0x20xx, GH100 ones 0x23xx.
const std::map<uint32_t, std::string> kPciModel = {
    {0x20B010DE, "A100-SXM4-40GB"}, {0x20B110DE, "A100-SXM4-40GB"}, {0x20F110DE, "A100-SXM4-40GB"}, {0x20F610DE, "A100-SXM4-40GB"},
    {0x20B210DE, "A100-SXM4-80GB"}, {0x20B510DE, "A100-SXM4-80GB"}, {0x20F310DE, "A100-SXM4-80GB"}, {0x20F510DE, "A100-SXM4-80GB"},
    {0x233010DE, "H100-80GB"},      {0x233110DE, "H100-80GB"},      {0x232210DE, "H100-80GB"},      {0x232410DE, "H100-80GB"},
    {0x233510DE, "H200-141GB"},     {0x233B10DE, "H200-141GB"},
};

// Whether an entry is meant for GPUs of geometry g: its device-filter names
// one, or it has none and g has every profile it counts.
bool Targets(const MigPartedEntry& e, const Geometry& g) {
  if (!e.device_filter.empty()) {
    for (const PciDeviceId& id : e.device_filter)
      if (kPciModel.contains(id.id) && kPciModel.at(id.id) == g.model) return true;
    return false;
  }
  for (const MigDeviceCount& d : e.mig_devices)
    if (g.FindProfile(d.profile) < 0) return false;
  return true;
}

std::map<std::string, int> Counts(const Geometry& g, const Layout& layout) {
  std::map<std::string, int> out;
  for (const Instance& in : layout.instances) ++out[g.profile(in.profile).name];
  return out;
}

struct Tally {
  int entries = 0, targeted = 0, foreign = 0;
};

// Every entry that targets one of tidal's GPUs yields a valid layout with
// its counts there; every other one is refused with "profile not on this GPU".
Tally CheckEveryEntry(const MigPartedConfig& c) {
  Tally t;
  for (const NamedMigConfig& named : c.configs) {
    for (const MigPartedEntry& e : named.entries) {
      ++t.entries;
      bool any = false;
      for (const Geometry& g : AllGeometries()) {
        if (!Targets(e, g)) continue;
        any = true;
        ++t.targeted;
        auto layout = LayoutForEntry(e, g);
        EXPECT_TRUE(layout) << named.name << " on " << g.model << ": " << layout.error().message;
        if (!layout) continue;
        EXPECT_TRUE(ValidateLayout(g, *layout)) << named.name;
        EXPECT_EQ(Counts(g, *layout), e.Counts()) << named.name << " on " << g.model;
      }
      if (any || e.Counts().empty()) continue;
      ++t.foreign;
      auto h100 = LayoutForEntry(e, G("H100"));
      EXPECT_FALSE(h100) << named.name;
      if (!h100) {
        EXPECT_NE(h100.error().message.find("profile not on this GPU"), std::string::npos) << h100.error().message;
      }
    }
  }
  return t;
}

TEST(MigParted, ReadsTheDefaultConfig) {
  const MigPartedConfig c = MustRead(Slurp(kDir + "mig-parted-config-default.yaml"), "default.yaml");
  ASSERT_EQ(c.configs.size(), 81u);
  EXPECT_EQ(c.configs[0].name, "all-disabled");
  EXPECT_EQ(c.configs[0].line, 3);
  ASSERT_EQ(c.configs[0].entries.size(), 1u);
  EXPECT_FALSE(c.configs[0].entries[0].mig_enabled);
  EXPECT_TRUE(c.configs[0].entries[0].all_devices);
  const NamedMigConfig* ones = c.Find("all-1g.10gb");
  ASSERT_TRUE(ones && ones->entries.size() == 2u);
  EXPECT_EQ(ones->line, 105);
  EXPECT_EQ(ones->entries[0].line, 107);
  EXPECT_EQ(ones->entries[0].device_filter.size(), 8u);
  EXPECT_EQ(ones->entries[0].device_filter[0].ToString(), "0x233010DE");
  EXPECT_EQ(ones->entries[1].Counts(), (std::map<std::string, int>{{"1g.10gb", 4}}));
  const NamedMigConfig* balanced = c.Find("all-balanced");
  ASSERT_TRUE(balanced && balanced->entries.size() == 12u);
  const MigPartedEntry& a30 = balanced->entries[10];  // device-filter: "0x20B710DE", a string, not a list
  EXPECT_EQ(a30.device_filter, (std::vector<PciDeviceId>{{0x20B710DE, std::nullopt}}));
  const Tally t = CheckEveryEntry(c);
  EXPECT_EQ(t.entries, 94);
  EXPECT_EQ(t.targeted, 40);
  EXPECT_EQ(t.foreign, 68);
}

TEST(MigParted, ReadsTheGpuOperatorConfigMapWithItsLines) {
  const std::string text = Slurp(kDir + "gpu-operator-mig-manager-default-configmap.yaml");
  auto c = ReadMigPartedConfigMap(text, "cm.yaml");
  ASSERT_TRUE(c) << c.error().message;
  ASSERT_EQ(c->configs.size(), 81u);
  EXPECT_EQ(c->Find("all-1g.10gb")->line, 112);  // the ConfigMap's line, not the embedded file's
  EXPECT_EQ(c->Find("all-balanced")->line, 358);
  const Tally t = CheckEveryEntry(*c);
  EXPECT_EQ(t.entries, 94);
  EXPECT_EQ(t.targeted, 40);
  // An error inside the embedded config names the ConfigMap's line too.
  std::string bad = text;
  bad.replace(bad.find("\"1g.10gb\": 7"), 12, "\"1g.10gb\": x");
  auto err = ReadMigPartedConfigMap(bad, "cm.yaml");
  ASSERT_FALSE(err);
  EXPECT_NE(err.error().message.find("cm.yaml:118: the count of '1g.10gb' 'x' is not a whole number from 0 to 2147483647"), std::string::npos)
      << err.error().message;
  auto none = ReadMigPartedConfigMap("apiVersion: v1\nkind: ConfigMap\ndata:\n  other.yaml: x\n", "cm.yaml");
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("cm.yaml:4: no data.\"config.yaml\""), std::string::npos) << none.error().message;
}

TEST(MigParted, PlacesTheFixturesConfigsForEachGpu) {
  const MigPartedConfig c = MustRead(Slurp(kDir + "mig-parted-config-default.yaml"), "default.yaml");
  const auto layout = [&](std::string_view config, uint32_t pci, std::string_view model) {
    const MigPartedEntry* e = SelectEntry(*c.Find(config), 0, pci);
    EXPECT_NE(e, nullptr) << config;
    if (!e) return std::string("(no entry)");
    auto l = LayoutForEntry(*e, G(model));
    return l ? FormatLayout(G(model), *l) : l.error().message;
  };
  // The 3g sits at 4: at 0 it would leave slice 7 to a 1g, which cannot start there.
  EXPECT_EQ(layout("all-balanced", 0x233010DE, "H100"), "2g.20gb@0,1g.10gb@2,1g.10gb@3,3g.40gb@4");
  EXPECT_EQ(layout("all-balanced", 0x20B010DE, "A100-SXM4-40GB"), "2g.10gb@0,1g.5gb@2,1g.5gb@3,3g.20gb@4");
  EXPECT_EQ(layout("all-balanced", 0x233B10DE, "H200"), "2g.35gb@0,1g.18gb@2,1g.18gb@3,3g.71gb@4");
  EXPECT_EQ(layout("all-1g.10gb", 0x20B110DE, "A100-SXM4-40GB"), "1g.10gb@0,1g.10gb@2,1g.10gb@4,1g.10gb@6");
  EXPECT_EQ(layout("all-1g.10gb", 0x20B210DE, "A100-80GB"), "1g.10gb@0,1g.10gb@1,1g.10gb@2,1g.10gb@3,1g.10gb@4,1g.10gb@5,1g.10gb@6");
  EXPECT_EQ(layout("all-1g.35gb", 0x233510DE, "H200"), "1g.35gb@0,1g.35gb@2,1g.35gb@4,1g.35gb@6");
  EXPECT_EQ(layout("all-enabled", 0x233010DE, "H100"), "");
  EXPECT_EQ(SelectEntry(*c.Find("all-balanced"), 0, 0x10DE10DE), nullptr);  // no entry for that GPU
  // RTX PRO 6000 profiles on an H100.
  EXPECT_EQ(layout("all-1g.24gb.gfx", 0x233010DE, "H100"),
            "default.yaml:54: config 'all-1g.24gb.gfx', mig-devices '1g.24gb+gfx': profile not on this GPU: H100-80GB has no MIG "
            "profile '1g.24gb+gfx' (it has 1g.10gb, 1g.10gb+me, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb); this entry is for another "
            "GPU model: give it that model's device-filter, or use H100-80GB's profile names");
}

struct BadYaml {
  const char* what;
  std::string text;
  const char* error;
};

const std::string kHead = "version: v1\nmig-configs:\n  a:\n";

TEST(MigParted, ReaderBadInputTable) {
  const BadYaml cases[] = {
      {"empty", "", "t.yaml:1: not a mig-parted config: it starts with 'version: v1'"},
      {"a scalar", "hello\n", "t.yaml:1: not a mig-parted config"},
      {"version", "version: v2\nmig-configs: {}\n", "t.yaml:1: a mig-parted config starts with 'version: v1'"},
      {"no version", "mig-configs:\n  a: []\n", "t.yaml:1: a mig-parted config starts with 'version: v1'"},
      {"unknown field", "version: v1\nbogus: 1\n", "t.yaml:2: unexpected field 'bogus' in a mig-parted config (mig-parted knows version, mig-configs)"},
      {"no configs", "version: v1\n", "t.yaml:1: no 'mig-configs:'"},
      {"empty configs", "version: v1\nmig-configs: {}\n", "t.yaml:2: 'mig-configs' must map at least one config name"},
      {"config without entries", kHead + "  b: []\n", "t.yaml:3: config 'a' must list at least one entry"},
      {"config twice", kHead + "    - {devices: all, mig-enabled: false}\n  a:\n    - {devices: all, mig-enabled: false}\n",
       "t.yaml:5: config 'a' is defined twice"},
      {"no devices", kHead + "    - mig-enabled: false\n", "t.yaml:4: an entry of config 'a' lacks the required field 'devices'"},
      {"no mig-enabled", kHead + "    - devices: all\n", "t.yaml:4: an entry of config 'a' lacks the required field 'mig-enabled'"},
      {"entry field", kHead + "    - devices: all\n      mig-enabled: false\n      gpus: 2\n",
       "t.yaml:6: unexpected field 'gpus' in an entry of config 'a' (mig-parted knows device-filter, devices, mig-enabled, mig-devices)"},
      {"field twice", kHead + "    - devices: all\n      devices: all\n      mig-enabled: false\n", "t.yaml:5: 'devices' is given twice"},
      {"devices bogus", kHead + "    - devices: some\n      mig-enabled: false\n", "t.yaml:4: 'devices' must be 'all' or a list of GPU indices"},
      {"devices map", kHead + "    - devices: {}\n      mig-enabled: false\n", "t.yaml:4: 'devices' must be 'all' or a list"},
      {"device index", kHead + "    - devices: [0, x]\n      mig-enabled: false\n", "t.yaml:4: GPU index 'x' is not a whole number from 0 to 2147483647"},
      {"negative index", kHead + "    - devices: [-1]\n      mig-enabled: false\n", "t.yaml:4: GPU index '-1' is not a whole number"},
      {"filter", kHead + "    - device-filter: A100-SXM4-40GB\n      devices: all\n      mig-enabled: false\n",
       "t.yaml:4: device-filter 'A100-SXM4-40GB' is not a PCI device id like \"0x233010DE\""},
      {"filter item", kHead + "    - device-filter: [\"0x233010DE\", \"0xZZ\"]\n      devices: all\n      mig-enabled: false\n",
       "t.yaml:4: device-filter '0xZZ' is not a PCI device id"},
      {"filter too wide", kHead + "    - device-filter: \"0x1233010DE\"\n      devices: all\n      mig-enabled: false\n",
       "t.yaml:4: device-filter '0x1233010DE' is not a PCI device id"},
      {"mig-enabled", kHead + "    - devices: all\n      mig-enabled: maybe\n", "t.yaml:5: 'mig-enabled' must be true or false"},
      {"mig-enabled quoted", kHead + "    - devices: all\n      mig-enabled: \"true\"\n", "t.yaml:5: 'mig-enabled' must be true or false"},
      {"enabled without devices", kHead + "    - devices: all\n      mig-enabled: true\n",
       "t.yaml:4: 'mig-devices' is required when 'mig-enabled' is true (write 'mig-devices: {}' for no instances)"},
      {"enabled, null devices", kHead + "    - devices: all\n      mig-enabled: true\n      mig-devices:\n", "t.yaml:4: 'mig-devices' is required"},
      {"disabled with devices", kHead + "    - devices: all\n      mig-enabled: false\n      mig-devices: {\"1g.10gb\": 1}\n",
       "t.yaml:6: 'mig-devices' lists instances but 'mig-enabled' is false"},
      {"mig-devices list", kHead + "    - devices: all\n      mig-enabled: true\n      mig-devices: [1g.10gb]\n",
       "t.yaml:6: 'mig-devices' must map profile names to counts"},
      {"profile name", kHead + "    - devices: all\n      mig-enabled: true\n      mig-devices:\n        bogus: 2\n",
       "t.yaml:7: mig-devices: 'bogus' is not a MIG profile name like 1g.10gb or 1g.10gb+me: expected Ng.Mgb or Nc.Ng.Mgb"},
      {"profile +-", kHead + "    - devices: all\n      mig-enabled: true\n      mig-devices: {\"1g.24gb+me-gfx\": 1}\n",
       "t.yaml:6: mig-devices: '1g.24gb+me-gfx' is not a MIG profile name like 1g.10gb or 1g.10gb+me: it has both '+' and '-'"},
      {"profile attr", kHead + "    - devices: all\n      mig-enabled: true\n      mig-devices: {\"1g.10gb+me+me\": 1}\n",
       "attribute 'me+me' is not a name"},
      {"profile units", kHead + "    - devices: all\n      mig-enabled: true\n      mig-devices: {\"1g.10GB\": 1}\n", "'10GB' is not a number followed by 'gb'"},
      {"count", kHead + "    - devices: all\n      mig-enabled: true\n      mig-devices:\n        \"1g.10gb\": -1\n",
       "t.yaml:7: the count of '1g.10gb' '-1' is not a whole number from 0 to 2147483647"},
      {"count quoted", kHead + "    - devices: all\n      mig-enabled: true\n      mig-devices:\n        \"1g.10gb\": \"2\"\n", "t.yaml:7: the count of '1g.10gb' '2'"},
      {"count too large", kHead + "    - devices: all\n      mig-enabled: true\n      mig-devices: {\"1g.10gb\": 99999999999}\n",
       "t.yaml:6: the count of '1g.10gb' '99999999999' is not a whole number from 0 to 2147483647"},
      {"config name", "version: v1\nmig-configs:\n  \"a\\tb\": []\n", "t.yaml:3: config name 'a?b' has a control character"},
      {"count fraction", kHead + "    - devices: all\n      mig-enabled: true\n      mig-devices: {\"1g.10gb\": 1.5}\n", "t.yaml:6: the count of '1g.10gb' '1.5'"},
      {"all zero", kHead + "    - devices: all\n      mig-enabled: true\n      mig-devices: {\"1g.10gb\": 0, \"2g.20gb\": 0}\n",
       "t.yaml:6: every count in 'mig-devices' is 0"},
      {"profile twice", kHead + "    - devices: all\n      mig-enabled: true\n      mig-devices:\n        \"1g.10gb\": 1\n        \"1g.10gb\": 2\n",
       "t.yaml:8: mig-devices: '1g.10gb' is given twice"},
      {"not YAML", "version: v1\nmig-configs:\n  a: [\n", "t.yaml:4: not valid YAML"},
      {"tab", "version: v1\nmig-configs:\n\ta: []\n", "t.yaml:3: not valid YAML"},
      {"deep", "version: v1\nmig-configs: " + std::string(3000, '[') + std::string(3000, ']') + "\n", "t.yaml:2: not valid YAML"},
      {"entry not a map", kHead + "    - all\n", "t.yaml:4: an entry of config 'a' must be a map"},
  };
  for (const BadYaml& c : cases) {
    auto r = ReadMigParted(c.text, "t.yaml");
    ASSERT_FALSE(r) << c.what;
    EXPECT_NE(r.error().message.find(c.error), std::string::npos) << c.what << "\n  got: " << r.error().message;
  }
}

MigPartedEntry Entry(std::string_view devices) {
  auto c = ReadMigParted(kHead + "    - devices: all\n      mig-enabled: true\n      mig-devices: " + std::string(devices) + "\n", "t.yaml");
  EXPECT_TRUE(c) << c.error().message;
  return c ? c->configs[0].entries[0] : MigPartedEntry{};
}

TEST(MigParted, LayoutForEntryBadInputTable) {
  struct Case {
    const char* devices;
    DriverCaps caps;
    const char* error;
  };
  const Case cases[] = {
      {"{\"4g.40gb\": 2}", {}, "t.yaml:6: config 'a', mig-devices '4g.40gb': H100-80GB allows at most 1 4g.40gb instance per GPU; the entry asks for 2"},
      {"{\"1g.10gb\": 8}", {}, "t.yaml:6: config 'a', mig-devices '1g.10gb': H100-80GB allows at most 7 1g.10gb instances per GPU"},
      {"{\"1g.5gb\": 1}", {}, "t.yaml:6: config 'a', mig-devices '1g.5gb': profile not on this GPU: H100-80GB has no MIG profile '1g.5gb'"},
      {"{\"1c.3g.40gb\": 1}", {}, "mig-devices '1c.3g.40gb': a compute-instance profile (part of a GPU instance)"},
      {"{\"7g.80gb\": 1, \"1g.10gb\": 1}", {}, "t.yaml:4: config 'a' (7g.80gb x1, 1g.10gb x1): needs 8 compute slices; a H100-80GB has 7"},
      {"{\"3g.40gb\": 2, \"1g.10gb\": 1}", {}, "t.yaml:4: config 'a' (3g.40gb x2, 1g.10gb x1): needs 9 memory slices; a H100-80GB has 8"},
      {"{\"4g.40gb\": 1, \"3g.40gb\": 1}", {.allow_4g_with_3g = false},
       "t.yaml:4: config 'a' (4g.40gb x1, 3g.40gb x1): these instances cannot all be placed on one H100-80GB: every choice of starts breaks "
       "a placement rule (the last: 3g.40gb@4: 4g and 3g instances together need driver R510 or newer (the MIG User Guide, Concepts))"},
  };
  for (const Case& c : cases) {
    auto layout = LayoutForEntry(Entry(c.devices), G("H100"), c.caps);
    ASSERT_FALSE(layout) << c.devices;
    EXPECT_NE(layout.error().message.find(c.error), std::string::npos) << c.devices << "\n  got: " << layout.error().message;
  }
  // Largest first, each at the lowest start that lets the rest fit.
  const auto placed = [](std::string_view devices) {
    auto l = LayoutForEntry(Entry(devices), G("H100"));
    return l ? FormatLayout(G("H100"), *l) : l.error().message;
  };
  EXPECT_EQ(placed("{\"4g.40gb\": 1, \"3g.40gb\": 1}"), "4g.40gb@0,3g.40gb@4");
  EXPECT_EQ(placed("{\"2g.20gb\": 2, \"3g.40gb\": 1}"), "2g.20gb@0,2g.20gb@2,3g.40gb@4");
  EXPECT_EQ(placed("{\"1g.10gb\": 3, \"2g.20gb\": 2, \"1g.20gb\": 0}"), "2g.20gb@0,2g.20gb@2,1g.10gb@4,1g.10gb@5,1g.10gb@6");
  EXPECT_EQ(placed("{\"1g.20gb\": 1, \"1g.10gb\": 6}"), "1g.10gb@0,1g.10gb@1,1g.10gb@2,1g.10gb@3,1g.10gb@4,1g.10gb@5,1g.20gb@6");
  EXPECT_EQ(placed("{\"1g.10gb+me\": 1, \"7g.80gb\": 0, \"2g.20gb\": 3}"), "2g.20gb@0,2g.20gb@2,2g.20gb@4,1g.10gb+me@6");
  auto off = ReadMigParted(kHead + "    - devices: [1, 3]\n      mig-enabled: false\n", "t.yaml");
  ASSERT_TRUE(off);
  EXPECT_EQ(LayoutForEntry(off->configs[0].entries[0], G("H100")), Layout{});
  EXPECT_TRUE(off->configs[0].entries[0].Matches(3, 0x233010DE));
  EXPECT_FALSE(off->configs[0].entries[0].Matches(2, 0x233010DE));
}

TEST(MigParted, SubsystemFiltersAndTheLastMatchingEntryDecide) {
  const MigPartedConfig c = MustRead(kHead +
                                     "    - devices: all\n      mig-enabled: false\n"
                                     "    - device-filter: [\"0x233010DE:0x16C110DE\"]\n      devices: [1]\n      mig-enabled: true\n"
                                     "      mig-devices: {\"7g.80gb\": 1}\n");
  const NamedMigConfig& a = c.configs[0];
  EXPECT_EQ(a.entries[1].device_filter[0].ToString(), "0x233010DE:0x16C110DE");
  EXPECT_EQ(SelectEntry(a, 1, 0x233010DE, 0x16C110DE), &a.entries[1]);
  EXPECT_EQ(SelectEntry(a, 1, 0x233010DE), &a.entries[0]);           // another subsystem
  EXPECT_EQ(SelectEntry(a, 0, 0x233010DE, 0x16C110DE), &a.entries[0]);  // another GPU
}

TEST(MigParted, WritesOneEntryPerGroupOfEqualCounts) {
  const Geometry& g = G("H100");
  std::map<int, std::optional<Layout>> gpus;
  gpus[0] = *ParseLayout(g, "3g.40gb@0,2g.20gb@4,1g.10gb@6");
  gpus[1] = *ParseLayout(g, "7g.80gb");
  gpus[2] = std::nullopt;
  gpus[3] = *ParseLayout(g, "1g.10gb@6,3g.40gb@0,2g.20gb@4");  // the counts of GPU 0
  gpus[5] = Layout{};
  auto text = WriteMigParted("tidal-plan", gpus, g);
  ASSERT_TRUE(text) << text.error().message;
  EXPECT_EQ(*text,
            "# Written by tidal: the MIG layout tidal wants on each GPU. mig-parted only counts\n"
            "# instances and lets the driver choose their placements; the comments give the\n"
            "# placements tidal planned (one valid choice).\n"
            "version: v1\n"
            "mig-configs:\n"
            "  tidal-plan:\n"
            "    # GPU 0: 3g.40gb@0,2g.20gb@4,1g.10gb@6\n"
            "    # GPU 3: 3g.40gb@0,2g.20gb@4,1g.10gb@6\n"
            "    - devices: [0, 3]\n"
            "      mig-enabled: true\n"
            "      mig-devices:\n"
            "        \"3g.40gb\": 1\n"
            "        \"2g.20gb\": 1\n"
            "        \"1g.10gb\": 1\n"
            "    # GPU 1: 7g.80gb@0\n"
            "    - devices: [1]\n"
            "      mig-enabled: true\n"
            "      mig-devices:\n"
            "        \"7g.80gb\": 1\n"
            "    # GPU 2: MIG off\n"
            "    - devices: [2]\n"
            "      mig-enabled: false\n"
            "    # GPU 5: MIG on, no instances\n"
            "    - devices: [5]\n"
            "      mig-enabled: true\n"
            "      mig-devices: {}\n");
  // Round trip: each GPU's entry gives back its counts.
  const MigPartedConfig back = MustRead(*text, "written.yaml");
  ASSERT_EQ(back.configs.size(), 1u);
  EXPECT_EQ(back.configs[0].name, "tidal-plan");
  for (const auto& [gpu, layout] : gpus) {
    const MigPartedEntry* e = SelectEntry(back.configs[0], gpu, 0x233010DE);
    ASSERT_NE(e, nullptr) << gpu;
    EXPECT_EQ(e->mig_enabled, layout.has_value()) << gpu;
    auto l = LayoutForEntry(*e, g);
    ASSERT_TRUE(l) << l.error().message;
    EXPECT_EQ(Counts(g, *l), (layout ? Counts(g, *layout) : std::map<std::string, int>{})) << gpu;
  }
  EXPECT_EQ(SelectEntry(back.configs[0], 4, 0x233010DE), nullptr);
}

TEST(MigParted, WriterRefusesWhatItCannotWrite) {
  const Geometry& g = G("H100");
  const std::map<int, std::optional<Layout>> one = {{0, Layout{}}};
  for (const char* name : {"", "-a", "a b", "all-1g.10gb:", std::string(64, 'a').c_str()}) {
    auto r = WriteMigParted(name, one, g);
    ASSERT_FALSE(r) << name;
    EXPECT_NE(r.error().message.find("must be a Kubernetes label value"), std::string::npos) << r.error().message;
  }
  EXPECT_TRUE(WriteMigParted(std::string(63, 'a'), one, g));
  EXPECT_NE(WriteMigParted("a", {}, g).error().message.find("no GPUs to write"), std::string::npos);
  EXPECT_NE(WriteMigParted("a", {{-1, Layout{}}}, g).error().message.find("GPU index -1 is negative"), std::string::npos);
  const Layout overlap{{{g.FindProfile("3g.40gb"), 0}, {g.FindProfile("2g.20gb"), 2}}};
  auto bad = WriteMigParted("a", {{1, overlap}}, g);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "GPU 1: not a valid H100-80GB layout, not written: 2g.20gb@2 overlaps 3g.40gb@0: instances may not share a memory slice");
  const Layout alien{{{42, 0}}};
  EXPECT_FALSE(WriteMigParted("a", {{0, alien}}, g));
}

RC_GTEST_PROP(MigParted, WriteThenReadKeepsEveryGpusCounts, ()) {
  const Geometry& g = AllGeometries()[*rc::gen::inRange<size_t>(0, AllGeometries().size())];
  std::map<int, std::optional<Layout>> gpus;
  const int n = *rc::gen::inRange(1, 9);
  for (int gpu = 0; gpu < n; ++gpu) {
    if (*rc::gen::inRange(0, 6) == 0) {
      gpus[gpu * 2] = std::nullopt;
      continue;
    }
    Layout layout;  // random profiles, each at a random start that fits
    for (int tries = *rc::gen::inRange(0, 12); tries > 0; --tries) {
      const int p = *rc::gen::inRange(0, static_cast<int>(g.profiles.size()));
      const auto& starts = g.profile(p).starts;
      const Instance in{p, starts[*rc::gen::inRange<size_t>(0, starts.size())]};
      if (CanAdd(g, layout, in)) layout.instances.push_back(in);
    }
    gpus[gpu * 2] = layout;
  }
  auto text = WriteMigParted("rc", gpus, g);
  RC_ASSERT(text.has_value());
  auto back = ReadMigParted(*text, "rc.yaml");
  RC_ASSERT(back.has_value());
  for (const auto& [gpu, layout] : gpus) {
    const MigPartedEntry* e = SelectEntry(back->configs[0], gpu, 0x233010DE);
    RC_ASSERT(e != nullptr);
    RC_ASSERT(e->mig_enabled == layout.has_value());
    auto l = LayoutForEntry(*e, g);
    RC_ASSERT(l.has_value());
    RC_ASSERT(ValidateLayout(g, *l).has_value());
    RC_ASSERT(Counts(g, *l) == (layout ? Counts(g, *layout) : std::map<std::string, int>{}));
  }
}

}  // namespace
}  // namespace tidal::mig

#include "mig/nvidia_smi_mig.h"

#include <filesystem>

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "common/csv.h"
#include "mig/mig_fuzz.h"

namespace tidal::mig {
namespace {

const std::string kDir = std::string(TIDAL_SHARED_DIR) + "/fixtures/nvidia-smi-mig/";

std::string Slurp(const std::string& path) {
  auto text = ReadFileToString(path);
  return text ? *text : std::string();
}

std::string Fixture(const std::string& name) {
  auto text = ReadFileToString(kDir + name);
  EXPECT_TRUE(text) << text.error().message;
  return text ? *text : std::string();
}

const Geometry& G(std::string_view model) { return *FindGeometry(model); }

std::string Crlf(std::string_view text) {
  std::string out;
  for (char c : text) out += c == '\n' ? std::string("\r\n") : std::string(1, c);
  return out;
}

// `text` with the first `from` replaced by `to` (which must be there).
std::string Edit(std::string text, std::string_view from, std::string_view to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

std::string FirstLines(std::string_view text, int n) {
  size_t pos = 0;
  for (int i = 0; i < n && pos != std::string_view::npos; ++i) pos = text.find('\n', pos + (i > 0));
  return std::string(text.substr(0, pos == std::string_view::npos ? text.size() : pos + 1));
}

// An -lgi box holding `rows` ("0  MIG 3g.40gb   9   2   0:4").
std::string Lgi(const std::vector<std::string>& rows) {
  const std::string border = "+" + std::string(64, '-') + "+\n";
  auto line = [](std::string_view s) { return "| " + std::string(s) + std::string(s.size() < 62 ? 62 - s.size() : 0, ' ') + " |\n"; };
  std::string out = border + line("GPU instances:") + line("GPU   Name             Profile  Instance   Placement") +
                    line("                         ID       ID       Start:Size") + "|" + std::string(64, '=') + "|\n";
  for (const std::string& r : rows) out += line("  " + r) + border;
  return out;
}

TEST(NvidiaSmiMig, ReadsTheGuidesLgip) {
  auto rows = ReadLgip(Fixture("a100-sxm4-40gb-mig-lgip.txt"), "lgip.txt");
  ASSERT_TRUE(rows) << rows.error().message;
  ASSERT_EQ(rows->size(), 7u);
  const GiProfileRow& first = (*rows)[0];
  EXPECT_EQ(first.at, (SourceLine{"lgip.txt", 6}));
  EXPECT_EQ(first.gpu, 0);
  EXPECT_EQ(first.name, "1g.5gb");
  EXPECT_EQ(first.id, 19);
  EXPECT_EQ(first.free, 7);
  EXPECT_EQ(first.total, 7);
  EXPECT_DOUBLE_EQ(first.memory_gib, 4.75);
  EXPECT_FALSE(first.p2p);
  EXPECT_EQ(first.units, (std::map<std::string, int>{{"SM", 14}, {"DEC", 0}, {"ENC", 0}, {"CE", 1}, {"JPEG", 0}, {"OFA", 0}}));
  EXPECT_EQ((*rows)[1].name, "1g.5gb+me");
  EXPECT_EQ((*rows)[1].at.line, 9);
  const GiProfileRow& last = (*rows)[6];
  EXPECT_EQ(last.name, "7g.40gb");
  EXPECT_EQ(last.id, 0);
  EXPECT_DOUBLE_EQ(last.memory_gib, 39.25);
  EXPECT_EQ(last.units, (std::map<std::string, int>{{"SM", 98}, {"DEC", 5}, {"ENC", 0}, {"CE", 7}, {"JPEG", 1}, {"OFA", 1}}));
  std::vector<int> ids;
  for (const GiProfileRow& r : *rows) ids.push_back(r.id);
  EXPECT_EQ(ids, (std::vector<int>{19, 20, 15, 14, 9, 5, 0}));
}

TEST(NvidiaSmiMig, ReadsTheGuidesLgippBothSpellings) {
  auto rows = ReadLgipp(Fixture("a100-sxm4-40gb-mig-lgipp.txt"), "lgipp.txt");
  ASSERT_TRUE(rows) << rows.error().message;
  ASSERT_EQ(rows->size(), 7u);
  EXPECT_EQ((*rows)[0].profile_id, 19);
  EXPECT_EQ((*rows)[0].starts, (std::vector<int>{0, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ((*rows)[0].size, 1);
  EXPECT_EQ((*rows)[4].profile_id, 9);  // "Placements: {0,4}:4"
  EXPECT_EQ((*rows)[4].starts, (std::vector<int>{0, 4}));
  EXPECT_EQ((*rows)[5].profile_id, 5);  // "Placement : {0}:4"
  EXPECT_EQ((*rows)[5].starts, (std::vector<int>{0}));
  EXPECT_EQ((*rows)[5].size, 4);
  EXPECT_EQ((*rows)[5].at, (SourceLine{"lgipp.txt", 6}));
  EXPECT_EQ((*rows)[6].size, 8);
}

TEST(NvidiaSmiMig, ReadsTheGuidesLgiIntoALayout) {
  auto rows = ReadLgi(Fixture("a100-sxm4-40gb-mig-lgi-3-2-1-1.txt"), "lgi.txt");
  ASSERT_TRUE(rows) << rows.error().message;
  ASSERT_EQ(rows->size(), 4u);
  const GpuInstanceRow& r = (*rows)[2];
  EXPECT_EQ(r.at, (SourceLine{"lgi.txt", 10}));
  EXPECT_EQ(r.name, "2g.10gb");
  EXPECT_EQ(r.profile_id, 14);
  EXPECT_EQ(r.instance_id, 4);
  EXPECT_EQ(r.start, 2);
  EXPECT_EQ(r.size, 2);
  const Geometry& g = G("A100-SXM4-40GB");
  auto layouts = LayoutsFromLgi(*rows, g);
  ASSERT_TRUE(layouts) << layouts.error().message;
  ASSERT_EQ(layouts->size(), 1u);
  EXPECT_EQ(FormatLayout(g, layouts->at(0)), "1g.5gb@0,1g.5gb@1,2g.10gb@2,3g.20gb@4");
  // The same output read as an H100's: profile 19 is 1g.10gb there.
  auto h100 = LayoutsFromLgi(*rows, G("H100"));
  ASSERT_FALSE(h100);
  EXPECT_NE(h100.error().message.find("lgi.txt:6: GPU 0 instance 7: '1g.5gb' (ID 19, size 1) is not H100-80GB's profile 19, which is "
                                      "1g.10gb of size 1"),
            std::string::npos)
      << h100.error().message;
}

TEST(NvidiaSmiMig, CrlfAndOtherBoxWidthsReadTheSame) {
  const std::string lgip = Fixture("a100-sxm4-40gb-mig-lgip.txt");
  const std::string lgipp = Fixture("a100-sxm4-40gb-mig-lgipp.txt");
  const std::string lgi = Fixture("a100-sxm4-40gb-mig-lgi-3-2-1-1.txt");
  ASSERT_TRUE(ReadLgip(Crlf(lgip), "t") && ReadLgipp(Crlf(lgipp), "t") && ReadLgi(Crlf(lgi), "t"));
  EXPECT_EQ(*ReadLgip(Crlf(lgip), "t"), *ReadLgip(lgip, "t"));
  EXPECT_EQ(*ReadLgipp(Crlf(lgipp), "t"), *ReadLgipp(lgipp, "t"));
  EXPECT_EQ(*ReadLgi(Crlf(lgi), "t"), *ReadLgi(lgi, "t"));
  // Two GPUs in a box of another width (an H100 node in all-balanced).
  const std::string text = Lgi({"0  MIG 1g.10gb         19        9          2:1", "0  MIG 1g.10gb         19       10          3:1",
                                "0  MIG 2g.20gb         14        3          0:2", "0  MIG 3g.40gb          9        2          4:4",
                                "1  MIG 3g.40gb          9        1          4:4", "1  MIG 2g.20gb         14        5          0:2"});
  auto rows = ReadLgi(Crlf(text), "h100.txt");
  ASSERT_TRUE(rows) << rows.error().message;
  auto layouts = LayoutsFromLgi(*rows, G("H100"));
  ASSERT_TRUE(layouts) << layouts.error().message;
  EXPECT_EQ(FormatLayout(G("H100"), layouts->at(0)), "2g.20gb@0,1g.10gb@2,1g.10gb@3,3g.40gb@4");
  EXPECT_EQ(FormatLayout(G("H100"), layouts->at(1)), "2g.20gb@0,3g.40gb@4");
  auto none = ReadLgi("No GPU instances found: Not Found\n", "t");
  ASSERT_TRUE(none) << none.error().message;
  EXPECT_TRUE(none->empty());
}

struct BadInput {
  const char* what;
  std::string text;
  const char* error;  // a substring of the message, source:line first
};

template <typename Reader>
void ExpectErrors(Reader read, const std::vector<BadInput>& cases) {
  for (const BadInput& c : cases) {
    auto r = read(c.text, "t.txt");
    ASSERT_FALSE(r) << c.what;
    EXPECT_NE(r.error().message.find(c.error), std::string::npos) << c.what << "\n  got: " << r.error().message;
  }
}

TEST(NvidiaSmiMig, LgipBadInputTable) {
  const std::string ok = Fixture("a100-sxm4-40gb-mig-lgip.txt");
  ExpectErrors(ReadLgip, {
      {"empty", "", "t.txt:1: empty input; expected the output of `nvidia-smi mig -lgip`"},
      {"blank", "\n  \n", "t.txt:1: empty input"},
      {"MIG off", "No MIG-enabled devices found.\n", "t.txt:1: nvidia-smi says 'No MIG-enabled devices found.': MIG is off"},
      {"no permission", "Failed to display GPU instance profiles: Insufficient Permissions\n", "t.txt:1: nvidia-smi failed"},
      {"truncated after a row line", FirstLines(ok, 6), "t.txt:6: the box ends without its closing border '+---+'"},
      {"truncated in the header", FirstLines(ok, 3), "t.txt:3: the box ends without its closing border"},
      {"cut mid-line", FirstLines(ok, 5) + "|   0  MIG 1g.5gb        19     7/", "t.txt:6: '|   0  MIG 1g.5gb        19     7/' is not a box line"},
      {"missing column", Edit(ok, "4.75       No     14", "           No     14"),
       "t.txt:6: the row has 8 values but the header names 9 columns (GPU Name ID Free/Total Memory P2P SM DEC ENC)"},
      {"missing engine", Edit(ok, "1     0     0   |\n+", "1     0         |\n+"), "t.txt:7: the row has 2 values but the header names 3 columns (CE JPEG OFA)"},
      {"non-number ID", Edit(ok, "1g.5gb        19", "1g.5gb        1x"), "t.txt:6: ID '1x' is not a whole number"},
      {"negative GPU", Edit(ok, "|   0  MIG 1g.5gb  ", "|  -1  MIG 1g.5gb  "), "t.txt:6: GPU '-1' is not a whole number"},
      {"free > total", Edit(ok, "7/7", "8/7"), "t.txt:6: Instances Free/Total '8/7': 8 free of 7 is more than the total"},
      {"free/total not numbers", Edit(ok, "7/7", "7-7"), "t.txt:6: Instances Free/Total '7-7' is not two whole numbers"},
      {"memory", Edit(ok, "4.75 ", "4,75 "), "t.txt:6: Memory GiB '4,75' is not a number"},
      {"p2p", Edit(ok, "4.75       No", "4.75       Nope"), "t.txt:6: P2P 'Nope' is neither Yes nor No"},
      {"engine not a number", Edit(ok, "No     14", "No     1a"), "t.txt:6: SM '1a' is not a whole number"},
      {"one-line row", Edit(ok, "|                                                             1     0     0   |\n+", "+"),
       "t.txt:6: a -lgip row has 2 lines (values, then CE JPEG OFA); this one has 1"},
      {"-lgi given", Fixture("a100-sxm4-40gb-mig-lgi-3-2-1-1.txt"),
       "t.txt:2: this box is 'GPU instances:', not 'GPU instance profiles:': give this reader the output of `nvidia-smi mig -lgip`"},
      {"-lgipp given", Fixture("a100-sxm4-40gb-mig-lgipp.txt"), "t.txt:1: expected the top border '+---+' of the `nvidia-smi mig -lgip` box"},
      {"header changed", Edit(ok, "P2P    SM", "PtoP   SM"), "t.txt:3: header 'GPU   Name             ID    Instances   Memory     PtoP"},
      {"text after the box", ok + "\nhello\n", "t.txt:28: text after the box: 'hello'"},
  });
  const std::string twice = Edit(ok, "MIG 1g.5gb+me     20", "MIG 1g.5gb+me     19");
  auto r = ReadLgip(twice, "t.txt");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("t.txt:9: GPU 0 lists profile ID 19 twice"), std::string::npos) << r.error().message;
}

TEST(NvidiaSmiMig, LgippBadInputTable) {
  ExpectErrors(ReadLgipp, {
      {"empty", "", "t.txt:1: empty input; expected the output of `nvidia-smi mig -lgipp`"},
      {"MIG off", "No MIG-enabled devices found.\n", "t.txt:1: nvidia-smi says 'No MIG-enabled devices found.'"},
      {"truncated", "GPU  0 Profile ID 19 Placements: {0,1,2", "t.txt:1: no '}' closes the starts"},
      {"truncated size", "GPU  0 Profile ID 19 Placements: {0,1,2}:", "t.txt:1: the size after '}:' is not a number of memory slices 1-8"},
      {"missing ID", "GPU  0 Profile ID Placements: {0}:8", "t.txt:1: Profile ID 'Placements:' is not a whole number"},
      {"missing GPU", "GPU Profile ID 0 Placement : {0}:8", "t.txt:1: not a placement line"},
      {"non-number GPU", "GPU  x Profile ID 0 Placement : {0}:8", "t.txt:1: GPU 'x' is not a whole number"},
      {"non-number ID", "GPU  0 Profile ID 1a Placement : {0}:8", "t.txt:1: Profile ID '1a' is not a whole number"},
      {"no placements word", "GPU  0 Profile ID 0 Starts: {0}:8", "t.txt:1: no 'Placements:'"},
      {"past the slices", "GPU  0 Profile ID  9 Placements: {0,4}:5", "t.txt:1: placement 4:5 runs past the 8 memory slices"},
      {"start 8", "GPU  0 Profile ID 19 Placements: {8}:1", "t.txt:1: start '8' is not a memory slice 0-7"},
      {"empty start", "GPU  0 Profile ID 19 Placements: {0,,2}:1", "t.txt:1: start '' is not a memory slice 0-7"},
      {"start twice", "GPU  0 Profile ID 19 Placements: {0,0}:1", "t.txt:1: start 0 is listed twice"},
      {"size 0", "GPU  0 Profile ID 19 Placements: {0}:0", "t.txt:1: the size after '}:' is not a number"},
      {"profile twice", "GPU  0 Profile ID 19 Placements: {0}:1\r\n\r\nGPU  0 Profile ID 19 Placements: {1}:1\r\n",
       "t.txt:3: GPU 0 lists profile ID 19 twice"},
      {"a box", Fixture("a100-sxm4-40gb-mig-lgip.txt"), "t.txt:1: a box, not a -lgipp line (is this -lgip or -lgi output?)"},
  });
  auto rows = ReadLgipp("GPU  1 Profile ID  0 Placement : {0}:8\r\nGPU  1 Profile ID  9 Placements: {4,0}:4\r\n", "t.txt");
  ASSERT_TRUE(rows) << rows.error().message;
  EXPECT_EQ((*rows)[0].gpu, 1);
  EXPECT_EQ((*rows)[1].starts, (std::vector<int>{0, 4}));
}

TEST(NvidiaSmiMig, LgiBadInputTable) {
  const std::string ok = Fixture("a100-sxm4-40gb-mig-lgi-3-2-1-1.txt");
  ExpectErrors(ReadLgi, {
      {"empty", "", "t.txt:1: empty input; expected the output of `nvidia-smi mig -lgi`"},
      {"MIG off", "No MIG-enabled devices found.\n", "t.txt:1: nvidia-smi says 'No MIG-enabled devices found.': MIG is off on every GPU"},
      {"truncated", FirstLines(ok, 8), "t.txt:8: the box ends without its closing border '+---+': the output is truncated"},
      {"cut mid-line", FirstLines(ok, 7) + "|   0  MIG 1g.5gb  ", "t.txt:8: '|   0  MIG 1g.5gb' is not a box line"},
      {"missing column", Edit(ok, "19        7          0:1", "19                   0:1"),
       "t.txt:6: the row has 4 values but the header names 5 columns (GPU Name Profile ID Instance ID Placement Start:Size)"},
      {"non-number profile ID", Edit(ok, "MIG 2g.10gb      14", "MIG 2g.10gb      1g"), "t.txt:10: Profile ID '1g' is not a whole number"},
      {"non-number instance ID", Edit(ok, "14        4 ", "14        # "), "t.txt:10: Instance ID '#' is not a whole number"},
      {"placement", Edit(ok, "4:4", "4-4"), "t.txt:12: Placement Start:Size '4-4' is not two whole numbers like 4:4"},
      {"placement past the slices", Edit(ok, "4:4", "6:4"), "t.txt:12: Placement '6:4' is not within the 8 memory slices"},
      {"instance twice", Edit(ok, "19        8 ", "19        7 "), "t.txt:8: GPU 0 lists instance ID 7 twice"},
      {"missing border", Edit(ok, "0:1     |\n+----------------------------------------------------+\n|   0  MIG 1g.5gb       19        8",
                                   "0:1     |\n|   0  MIG 1g.5gb       19        8"),
       "t.txt:7: a -lgi row is one line; a border '+---+' is missing above this one"},
      {"-lgip given", Fixture("a100-sxm4-40gb-mig-lgip.txt"), "t.txt:2: this box is 'GPU instance profiles:', not 'GPU instances:'"},
      {"header", Edit(ok, "Start:Size", "Begin:Size"), "t.txt:4: header 'ID       ID       Begin:Size' is not that of `nvidia-smi mig -lgi` (it starts 'ID ID Start:Size')"},
  });
}

TEST(NvidiaSmiMig, LayoutsFromLgiBadInputTable) {
  const Geometry& g = G("H100");
  struct Case {
    std::vector<std::string> rows;
    const char* error;
  };
  const Case cases[] = {
      {{"0  MIG 1g.10gb   7   3   0:1"},
       "t.txt:6: GPU 0 instance 3: profile ID 7 is not a GPU instance profile of H100-80GB (it has 19 1g.10gb, 20 1g.10gb+me"},
      {{"0  MIG 3g.40gb   9   2   0:4", "0  MIG 2g.20gb  14   4   2:2"},
       "t.txt:8: GPU 0 instance 4: not a valid H100-80GB layout: 2g.20gb@2 overlaps 3g.40gb@0"},
      {{"0  MIG 2g.20gb  14   4   1:2"}, "t.txt:6: GPU 0 instance 4: not a valid H100-80GB layout: 2g.20gb@1: 2g.20gb may start only at memory slice 0, 2, 4"},
      {{"0  MIG 4g.40gb   5   1   0:4", "0  MIG 4g.40gb   5   2   4:4"}, "t.txt:8: GPU 0 instance 2: not a valid H100-80GB layout: 4g.40gb@4: 4g.40gb may start only at memory slice 0"},
      {{"0  MIG 3g.40gb   9   1   0:2"}, "t.txt:6: GPU 0 instance 1: '3g.40gb' (ID 9, size 2) is not H100-80GB's profile 9, which is 3g.40gb of size 4"},
      {{"1  MIG 1g.10gb+me 20  1  0:1", "1  MIG 1g.10gb+me 20  2  1:1"}, "t.txt:8: GPU 1 instance 2: not a valid H100-80GB layout: 1g.10gb+me@1: at most 1"},
  };
  for (const Case& c : cases) {
    auto rows = ReadLgi(Lgi(c.rows), "t.txt");
    ASSERT_TRUE(rows) << rows.error().message;
    auto layouts = LayoutsFromLgi(*rows, g);
    ASSERT_FALSE(layouts) << c.error;
    EXPECT_NE(layouts.error().message.find(c.error), std::string::npos) << layouts.error().message;
  }
  // 4g with 3g: valid from R510 on, refused for older drivers.
  auto rows = ReadLgi(Lgi({"0  MIG 4g.40gb   5   1   0:4", "0  MIG 3g.40gb   9   2   4:4"}), "t.txt");
  ASSERT_TRUE(rows);
  EXPECT_TRUE(LayoutsFromLgi(*rows, g));
  EXPECT_FALSE(LayoutsFromLgi(*rows, g, {.allow_4g_with_3g = false}));
}

TEST(NvidiaSmiMig, TheBuiltInGeometryAgreesWithTheGuidesA100) {
  auto lgip = ReadLgip(Fixture("a100-sxm4-40gb-mig-lgip.txt"), "lgip.txt");
  auto lgipp = ReadLgipp(Fixture("a100-sxm4-40gb-mig-lgipp.txt"), "lgipp.txt");
  ASSERT_TRUE(lgip && lgipp);
  const Geometry& g = G("A100-SXM4-40GB");
  EXPECT_TRUE(CheckGeometry(g, *lgip, *lgipp));
  EXPECT_TRUE(CheckGeometry(g, *lgip, {}));
  EXPECT_TRUE(CheckGeometry(g, {}, *lgipp));
  // The 80 GB part has other names, the same IDs and placements.
  auto other = CheckGeometry(G("A100-80GB"), *lgip, *lgipp);
  ASSERT_FALSE(other);
  EXPECT_NE(other.error().message.find("in 14 places"), std::string::npos) << other.error().message;
  EXPECT_NE(other.error().message.find("lgip.txt:6: GPU 0 has profile 1g.5gb (ID 19), which tidal's geometry lacks"), std::string::npos);
  EXPECT_NE(other.error().message.find("lgip.txt:6: GPU 0 does not list 7g.80gb (ID 0)"), std::string::npos);
  auto h200 = CheckGeometry(G("H200"), *lgip, {});
  ASSERT_FALSE(h200);
  EXPECT_NE(h200.error().message.find("in 14 places; none of the GPU's profiles is a H200-141GB profile: the output is from another GPU"),
            std::string::npos)
      << h200.error().message;
}

TEST(NvidiaSmiMig, CheckGeometryCatchesADriverThatMovesOrDropsProfiles) {
  auto lgip = ReadLgip(Fixture("a100-sxm4-40gb-mig-lgip.txt"), "lgip.txt");
  auto lgipp = ReadLgipp(Fixture("a100-sxm4-40gb-mig-lgipp.txt"), "lgipp.txt");
  ASSERT_TRUE(lgip && lgipp);
  Geometry moved = G("A100-SXM4-40GB");
  moved.profiles[static_cast<size_t>(moved.FindProfile("3g.20gb"))].starts = {0, 2};
  moved.profiles[static_cast<size_t>(moved.FindProfile("2g.10gb"))].max_instances = 2;
  auto st = CheckGeometry(moved, *lgip, *lgipp);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().message,
            "tidal's A100-SXM4-40GB MIG geometry (src/mig/geometry.cc) disagrees with what the GPU reports in 2 places; fix the geometry "
            "or check the GPU model:\n"
            "  lgip.txt:15: GPU 0 allows 3 2g.10gb instances, tidal's geometry 2\n"
            "  lgipp.txt:5: GPU 0 places 3g.20gb (ID 9) at {0,4}:4, tidal's geometry at {0,2}:4");
  // An older driver without the double-memory 1g (ID 15), on GPU 0 only.
  std::vector<GiProfileRow> old;
  for (const GiProfileRow& r : *lgip)
    if (r.id != 15) old.push_back(r);
  std::vector<PlacementRow> two = *lgipp;
  for (PlacementRow r : *lgipp) two.push_back((r.gpu = 1, r));
  auto dropped = CheckGeometry(G("A100-SXM4-40GB"), old, two);
  ASSERT_FALSE(dropped);
  EXPECT_NE(dropped.error().message.find("lgipp.txt:1: GPU 1 has placements but no profiles in the -lgip output"), std::string::npos)
      << dropped.error().message;
  EXPECT_NE(dropped.error().message.find("lgip.txt:6: GPU 0 does not list 1g.10gb (ID 15): the driver may be too old for it"),
            std::string::npos);
}

// --- the fuzz body, under g++ ----------------------------------------------------

TEST(MigFuzz, CorpusFixturesAndTheirCuts) {
  std::vector<std::string> inputs;
  for (const std::string& dir : {std::string(TIDAL_SOURCE_DIR) + "/src/mig/fuzz_corpus", kDir,
                                 std::string(TIDAL_SHARED_DIR) + "/fixtures/k8s-gpu-labels"}) {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec))
      if (e.is_regular_file() && e.path().extension() != ".md" && e.path().extension() != ".json") inputs.push_back(Slurp(e.path().string()));
  }
  ASSERT_GE(inputs.size(), 12u);
  for (const std::string& text : inputs) {
    FuzzMigReaders(text);
    FuzzMigReaders(Crlf(text));
    for (size_t cut = 0; cut < text.size(); cut += text.size() > 4000 ? 97 : 7) FuzzMigReaders(std::string_view(text).substr(0, cut));
  }
}

RC_GTEST_PROP(MigFuzz, BodyHoldsOnDamagedInputs, (const std::string& noise)) {
  static const std::vector<std::string> seeds = {
      Lgi({"0  MIG 1g.10gb   19   3   0:1", "0  MIG 3g.40gb  9  2  4:4"}), "GPU  0 Profile ID 9 Placements: {0,4}:4\n",
      "version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: true\n      mig-devices:\n        \"3g.40gb\": 1\n"};
  std::string text = seeds[*rc::gen::inRange<size_t>(0, seeds.size())];
  const size_t at = *rc::gen::inRange<size_t>(0, text.size());
  text.insert(at, noise);
  FuzzMigReaders(text);
}

}  // namespace
}  // namespace tidal::mig

// The extender wire format against upstream's own bytes: every JSON fixture
// in ../shared/fixtures/k8s-extender (kube-scheduler's TestCompatibility
// strings, before and after 1.34, and real answers captured by the
// kube-scheduler-simulator) parses, and encodes back to exactly its bytes.
// Then Go's escaping and number rules, Go's case-insensitive field
// matching, a bad-input table, and a fuzz body over mutated fixtures.
#include "adapters/k8s/extender_wire.h"

#include "adapters/k8s/extender_fuzz.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "adapters/k8s/k8s_test_util.h"

#include "common/rng.h"

namespace tidal::k8s {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const fs::path& kFixtures = testing::ExtenderFixtures();
using testing::Slurp;

// Parses `body` as the type its file name says and encodes it again.
Result<std::string> RoundTrip(const std::string& file, std::string_view body) {
  auto has = [&](std::string_view s) { return file.find(s) != std::string::npos; };
  if (has("filter-args")) {
    TIDAL_ASSIGN_OR_RETURN(auto v, ParseExtenderArgs(body));
    return Encode(v);
  }
  if (has("filter-result")) {
    TIDAL_ASSIGN_OR_RETURN(auto v, ParseExtenderFilterResult(body));
    return Encode(v);
  }
  if (has("host-priority")) {
    TIDAL_ASSIGN_OR_RETURN(auto v, ParseHostPriority(body));
    return Encode(v);
  }
  if (has("prioritize-result")) {
    TIDAL_ASSIGN_OR_RETURN(auto v, ParseHostPriorityList(body));
    return Encode(v);
  }
  if (has("binding-args")) {
    TIDAL_ASSIGN_OR_RETURN(auto v, ParseExtenderBindingArgs(body));
    return Encode(v);
  }
  if (has("binding-result")) {
    TIDAL_ASSIGN_OR_RETURN(auto v, ParseExtenderBindingResult(body));
    return Encode(v);
  }
  if (has("preemption-args")) {
    TIDAL_ASSIGN_OR_RETURN(auto v, ParseExtenderPreemptionArgs(body));
    return Encode(v);
  }
  if (has("preemption-result")) {
    TIDAL_ASSIGN_OR_RETURN(auto v, ParseExtenderPreemptionResult(body));
    return Encode(v);
  }
  return MakeError(ErrorCode::kNotFound, "no parser for {}", file);
}

std::vector<fs::path> JsonFixtures() {
  std::vector<fs::path> out;
  if (!fs::exists(kFixtures)) return out;
  for (const auto& e : fs::directory_iterator(kFixtures)) {
    if (e.path().extension() == ".json") out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(ExtenderWire, EveryUpstreamFixtureEncodesBackToItsBytes) {
  const auto files = JsonFixtures();
  if (files.empty()) GTEST_SKIP() << "no fixtures at " << kFixtures;
  EXPECT_EQ(files.size(), 17u) << "a fixture was added or removed: check it is covered";
  for (const fs::path& f : files) {
    SCOPED_TRACE(f.filename().string());
    const std::string body = Slurp(f);
    auto again = RoundTrip(f.filename().string(), body);
    ASSERT_TRUE(again) << again.error().message;
    EXPECT_EQ(*again, body);
  }
}

TEST(ExtenderWire, ReadsTheFieldsUpstreamSets) {
  if (JsonFixtures().empty()) GTEST_SKIP();
  auto args = ParseExtenderArgs(Slurp(kFixtures / "upstream-v1.34-filter-args.json"));
  ASSERT_TRUE(args);
  ASSERT_TRUE(args->pod);
  EXPECT_EQ((*args->pod)["metadata"]["name"], "podname");
  ASSERT_TRUE(args->node_names);
  EXPECT_THAT(*args->node_names, ::testing::ElementsAre("node1"));
  EXPECT_THAT(*NodeListNames(*args->nodes), ::testing::ElementsAre("nodename"));

  auto fr = ParseExtenderFilterResult(Slurp(kFixtures / "upstream-v1.34-filter-result.json"));
  ASSERT_TRUE(fr);
  EXPECT_EQ(fr->failed_nodes->at("foo"), "bar");
  EXPECT_EQ(fr->failed_and_unresolvable_nodes->at("baz"), "qux");
  EXPECT_EQ(fr->error, "myerror");

  auto sim = ParseExtenderFilterResult(Slurp(kFixtures / "simulator-2024-filter-result-nodecache-false.json"));
  ASSERT_TRUE(sim);
  EXPECT_FALSE(sim->node_names.has_value());
  EXPECT_TRUE(sim->failed_nodes.has_value() && sim->failed_nodes->empty());
  EXPECT_FALSE(sim->failed_and_unresolvable_nodes.has_value());

  auto b = ParseExtenderBindingArgs(Slurp(kFixtures / "upstream-v1.34-binding-args.json"));
  ASSERT_TRUE(b);
  EXPECT_EQ(b->pod_name, "mypodname");
  EXPECT_EQ(b->pod_namespace, "mypodnamespace");
  EXPECT_EQ(b->pod_uid, "mypoduid");
  EXPECT_EQ(b->node, "mynode");

  auto p = ParseExtenderPreemptionArgs(Slurp(kFixtures / "upstream-v1.34-preemption-args.json"));
  ASSERT_TRUE(p);
  ASSERT_TRUE(p->node_name_to_victims);
  EXPECT_EQ(p->node_name_to_victims->at("foo")->num_pdb_violations, 1);
  EXPECT_EQ(p->node_name_to_victims->at("foo")->pods->size(), 1u);
  EXPECT_EQ(p->node_name_to_meta_victims->at("foo")->pods->at(0).uid, "myuid");

  auto hp = ParseHostPriorityList(Slurp(kFixtures / "simulator-2023-prioritize-result.json"));
  ASSERT_TRUE(hp && *hp);
  EXPECT_EQ((**hp)[1], (HostPriority{"node-pwzdq", 0}));
}

TEST(ExtenderWire, NilIsNullAndMapsAreSorted) {
  EXPECT_EQ(Encode(ExtenderFilterResult{}), R"({"Nodes":null,"NodeNames":null,"FailedNodes":null,"FailedAndUnresolvableNodes":null,"Error":""})");
  ExtenderFilterResult r;
  r.node_names = std::vector<std::string>{};
  r.failed_nodes = FailedNodesMap{{"b", "2"}, {"a", "1"}, {"B", "0"}};
  EXPECT_EQ(Encode(r), R"({"Nodes":null,"NodeNames":[],"FailedNodes":{"B":"0","a":"1","b":"2"},"FailedAndUnresolvableNodes":null,"Error":""})");
  EXPECT_EQ(Encode(HostPriorityList{}), "null");
  EXPECT_EQ(Encode(HostPriorityList{std::vector<HostPriority>{}}), "[]");
  ExtenderPreemptionResult pr;
  pr.node_name_to_meta_victims.emplace();
  (*pr.node_name_to_meta_victims)["n2"] = MetaVictims{};
  (*pr.node_name_to_meta_victims)["n1"] = std::nullopt;
  EXPECT_EQ(Encode(pr), R"({"NodeNameToMetaVictims":{"n1":null,"n2":{"Pods":null,"NumPDBViolations":0}}})");
  EXPECT_EQ(Encode(ExtenderPreemptionArgs{}), R"({"Pod":null,"NodeNameToVictims":null,"NodeNameToMetaVictims":null})");
  // Several victims per node, in their order.
  const std::string two = R"({"NodeNameToMetaVictims":{"n":{"Pods":[{"UID":"a"},{"UID":"b"}],"NumPDBViolations":2}}})";
  auto parsed = ParseExtenderPreemptionResult(two);
  ASSERT_TRUE(parsed);
  ASSERT_EQ(parsed->node_name_to_meta_victims->at("n")->pods->size(), 2u);
  EXPECT_EQ(parsed->node_name_to_meta_victims->at("n")->pods->at(1).uid, "b");
  EXPECT_EQ(Encode(*parsed), two);
}

TEST(GoJson, EscapesStringsAsGoDoes) {
  struct Case {
    std::string in, out;
  } cases[] = {
      {"plain", R"("plain")"},
      {"a\"b\\c", R"("a\"b\\c")"},
      {"<script>&", R"("\u003cscript\u003e\u0026")"},
      {"\b\f\n\r\t", R"("\b\f\n\r\t")"},
      {std::string("\x01\x1f", 2), R"("\u0001\u001f")"},
      {std::string("nul\0x", 5), R"("nul\u0000x")"},
      {"\x7f", "\"\x7f\""},
      {"caf\xc3\xa9", "\"caf\xc3\xa9\""},
      {"\xe2\x80\xa8\xe2\x80\xa9", R"("\u2028\u2029")"},
      {"\xe2\x80\xa7", "\"\xe2\x80\xa7\""},
  };
  for (const Case& c : cases) {
    std::string out;
    AppendGoString(out, c.in);
    EXPECT_EQ(out, c.out) << c.in;
  }
  EXPECT_EQ(GoJson(ojson::parse(R"({"k<":"v>"})")), R"({"k\u003c":"v\u003e"})");
}

TEST(GoJson, WritesNumbersAsGoDoes) {
  struct Case {
    ojson in;
    std::string out;
  } cases[] = {
      {ojson(0), "0"},           {ojson(-7), "-7"},          {ojson(uint64_t{18446744073709551615u}), "18446744073709551615"},
      {ojson(3.0), "3"},         {ojson(0.5), "0.5"},        {ojson(1e20), "100000000000000000000"},
      {ojson(1e21), "1e+21"},    {ojson(1e-7), "1e-7"},      {ojson(1.5e-7), "1.5e-7"},
      {ojson(0.000001), "0.000001"}, {ojson(-2.5e-12), "-2.5e-12"}, {ojson(123456.789), "123456.789"},
      {ojson(true), "true"},     {ojson(nullptr), "null"},
  };
  for (const Case& c : cases) EXPECT_EQ(GoJson(c.in), c.out) << c.in.dump();
}

TEST(ExtenderWire, MatchesFieldNamesIgnoringCaseLastOneWins) {
  auto a = ParseExtenderArgs(R"({"pod":{"metadata":{"name":"p"}},"NODENAMES":["x"],"nodeNames":["y","z"],"Unknown":1})");
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ((*a->pod)["metadata"]["name"], "p");
  EXPECT_THAT(*a->node_names, ::testing::ElementsAre("y", "z"));
  auto b = ParseExtenderBindingArgs(R"({"podname":"p","podnamespace":"ns","poduid":"u","node":"n"})");
  ASSERT_TRUE(b);
  EXPECT_EQ(Encode(*b), R"({"PodName":"p","PodNamespace":"ns","PodUID":"u","Node":"n"})");
  // null is Go's zero value.
  auto n = ParseExtenderArgs("null");
  ASSERT_TRUE(n);
  EXPECT_FALSE(n->pod.has_value());
  auto z = ParseExtenderFilterResult(R"({"NodeNames":[null,"a"],"FailedNodes":{"x":null},"Error":null})");
  ASSERT_TRUE(z);
  EXPECT_THAT(*z->node_names, ::testing::ElementsAre("", "a"));
  EXPECT_EQ(z->failed_nodes->at("x"), "");
}

template <typename T>
Status Drop(const Result<T>& r) {
  if (!r) return std::unexpected(r.error());
  return Ok();
}

TEST(ExtenderWire, BadInputIsRefusedNamingTheField) {
  struct Case {
    const char* name;
    std::function<Status(std::string_view)> parse;
    std::string body, want;
  };
  auto args = [](std::string_view b) -> Status { return Drop(ParseExtenderArgs(b, "filter request")); };
  auto filt = [](std::string_view b) -> Status { return Drop(ParseExtenderFilterResult(b)); };
  auto prio = [](std::string_view b) -> Status { return Drop(ParseHostPriorityList(b)); };
  auto bind = [](std::string_view b) -> Status { return Drop(ParseExtenderBindingArgs(b)); };
  auto pre = [](std::string_view b) -> Status { return Drop(ParseExtenderPreemptionArgs(b)); };
  auto preres = [](std::string_view b) -> Status { return Drop(ParseExtenderPreemptionResult(b)); };
  const Case cases[] = {
      {"empty body", args, "", "filter request: not JSON"},
      {"truncated", args, R"({"Pod":{)", "filter request: not JSON"},
      {"array body", args, "[1]", "expected a JSON object, got an array"},
      {"pod a string", args, R"({"Pod":"p"})", "field Pod: expected an object (a v1.Pod) or null, got a string"},
      {"nodes an array", args, R"({"Nodes":[]})", "field Nodes: expected an object (a v1.NodeList)"},
      {"node name a number", args, R"({"NodeNames":["a",2]})", "field NodeNames[1]: expected a string, got a number"},
      {"node names an object", args, R"({"NodeNames":{}})", "field NodeNames: expected an array of strings"},
      {"failed reason a number", filt, R"({"FailedNodes":{"n1":3}})", R"(field FailedNodes["n1"]: expected a string)"},
      {"error a bool", filt, R"({"Error":true})", "field Error: expected a string, got a boolean"},
      {"score a fraction", prio, R"([{"Host":"a","Score":1.5}])", "field [0].Score: expected an integer within int64"},
      {"score too large", prio, R"([{"Host":"a","Score":18446744073709551615}])", "field [0].Score: expected an integer within int64"},
      {"priorities an object", prio, R"({"Host":"a"})", "expected an array"},
      {"priority entry a string", prio, R"(["a"])", "field [0]: expected an object"},
      {"uid a number", bind, R"({"PodUID":7})", "field PodUID: expected a string, got a number"},
      {"victims a list", pre, R"({"NodeNameToVictims":[]})", "field NodeNameToVictims: expected an object"},
      {"victim pods a string", pre, R"({"NodeNameToVictims":{"n":{"Pods":"x"}}})", R"(field NodeNameToVictims["n"].Pods: expected an array)"},
      {"victim a number", pre, R"({"NodeNameToVictims":{"n":{"Pods":[3]}}})", R"(field NodeNameToVictims["n"].Pods[0]: expected a v1.Pod object)"},
      {"pdb a string", pre, R"({"NodeNameToVictims":{"n":{"NumPDBViolations":"1"}}})", R"(NodeNameToVictims["n"].NumPDBViolations: expected an integer)"},
      {"meta victim a string", preres, R"({"NodeNameToMetaVictims":{"n":{"Pods":["u"]}}})", R"(field NodeNameToMetaVictims["n"].Pods[0]: expected an object {"UID": ...})"},
      {"meta uid a number", preres, R"({"NodeNameToMetaVictims":{"n":{"Pods":[{"UID":1}]}}})", R"(NodeNameToMetaVictims["n"].Pods[0].UID: expected a string)"},
      {"meta victims a number", preres, R"({"NodeNameToMetaVictims":{"n":5}})", R"(field NodeNameToMetaVictims["n"]: expected an object)"},
      {"meta map a string", preres, R"({"NodeNameToMetaVictims":"x"})", "field NodeNameToMetaVictims: expected an object"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Status s = c.parse(c.body);
    ASSERT_FALSE(s) << c.body;
    EXPECT_EQ(s.error().code, ErrorCode::kParse);
    EXPECT_THAT(s.error().message, HasSubstr(c.want));
  }
  auto names = NodeListNames(ojson::parse(R"({"items":[{"metadata":{"name":"a"}},{"metadata":{}}]})"));
  ASSERT_FALSE(names);
  EXPECT_THAT(names.error().message, HasSubstr("Nodes.items[1]: a node without metadata.name"));
  EXPECT_FALSE(NodeListNames(ojson::parse(R"({"items":{}})")));
}

// Fuzz body (extender_fuzz.h, also the libFuzzer target): byte mutations of
// every fixture never crash a reader; whatever parses encodes to bytes that
// parse back to the same encoding.
TEST(ExtenderWire, MutatedFixturesNeverCrashAndReencodeStably) {
  const auto files = JsonFixtures();
  if (files.empty()) GTEST_SKIP();
  Rng rng(20261202);
  int accepted = 0;
  for (const fs::path& f : files) {
    const std::string base = Slurp(f);
    accepted += FuzzExtender(base);
    for (int i = 0; i < 300; ++i) {
      std::string s = base;
      const int edits = 1 + static_cast<int>(rng.Uniform(3));
      for (int e = 0; e < edits && !s.empty(); ++e) {
        const size_t at = rng.Uniform(s.size());
        switch (rng.Uniform(4)) {
          case 0: s.erase(at, 1 + rng.Uniform(8)); break;
          case 1: s[at] = static_cast<char>(rng.Uniform(256)); break;
          case 2: s.insert(at, 1, "{}[]\",:0-.e\\nu"[rng.Uniform(14)]); break;
          default: s.insert(at, s.substr(rng.Uniform(s.size()), 1 + rng.Uniform(16))); break;
        }
      }
      accepted += FuzzExtender(s);
    }
  }
  EXPECT_GT(accepted, 100);
  // Pods and node lists with requests tidal reads.
  for (const char* s : {R"({"Pod":{"metadata":{"name":"p","uid":"u"},"spec":{"containers":[{"resources":{"limits":{"nvidia.com/gpu":"8"}}}]}},"Nodes":{"items":[{"metadata":{"name":"n"},"status":{"allocatable":{"cpu":"4","nvidia.com/gpu":"8"}}}]}})",
                        R"({"type":"ADDED","object":{"metadata":{"name":"a"}}})"
                        "\n{\"type\":1}\n"}) {
    FuzzExtender(s);
  }
}

}  // namespace
}  // namespace tidal::k8s

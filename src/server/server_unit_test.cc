// The daemon's pure parts, against tables: strict body parsing, the job
// submission's fields, what each role may do, token handling, metrics text.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "server/auth.h"
#include "server/job_request.h"
#include "server/json_body.h"
#include "server/metrics.h"
#include "server/request_fuzz.h"
#include "store/store.h"

namespace tidal::server {
namespace {

// --- Bodies: every bad input is refused with the right status and field. --
struct BadBody {
  std::string body;
  int status;
  std::string field;     // "" = no field
  std::string message;   // a substring of the message
};

TEST(SubmitBody, BadInputTable) {
  const std::string big(kMaxBodyBytes + 1, ' ');
  const std::vector<BadBody> table = {
      {"", 400, "", "empty"},
      {"   ", 400, "", "empty"},
      {"[1,2]", 400, "", "JSON object"},
      {"{\"gpus\": 1,", 400, "", "not valid JSON"},
      {"{\"gpus\": 1, \"gpus\": 2, \"estimated_runtime_s\": 5}", 400, "", "appears twice"},
      {"{\"a\":{\"b\":{\"c\":{\"d\":{\"e\":{\"f\":{\"g\":{\"h\":{\"i\":1}}}}}}}}}", 400, "", "deeper"},
      {big, 413, "", "bytes"},
      {"{\"gpus\": 1, \"estimated_runtime_s\": 60, \"colour\": \"red\"}", 400, "colour", "unknown field 'colour'"},
      {"{\"gpus\": \"1\", \"estimated_runtime_s\": 60}", 400, "gpus", "integer"},
      {"{\"gpus\": 1.5, \"estimated_runtime_s\": 60}", 400, "gpus", "integer"},
      {"{\"gpus\": 0, \"estimated_runtime_s\": 60}", 400, "gpus", "from 1 to 100000"},
      {"{\"gpus\": 100001, \"estimated_runtime_s\": 60}", 400, "gpus", "from 1 to 100000"},
      {"{\"gpus\": -1, \"estimated_runtime_s\": 60}", 400, "gpus", "from 1"},
      {"{\"gpus\": 99999999999999999999999, \"estimated_runtime_s\": 60}", 400, "gpus", "integer"},
      {"{\"gpus\": 18446744073709551615, \"estimated_runtime_s\": 60}", 400, "gpus", "integer"},
      {"{\"gpus\": 1e3, \"estimated_runtime_s\": 60}", 400, "gpus", "integer"},
      {"{\"gpus\": true, \"estimated_runtime_s\": 60}", 400, "gpus", "integer"},
      {"{\"estimated_runtime_s\": 60}", 400, "gpus", "required"},
      {"{\"gpus\": 2, \"gpu_milli\": 500, \"estimated_runtime_s\": 60}", 400, "gpu_milli", "not both"},
      {"{\"gpu_milli\": 1000, \"estimated_runtime_s\": 60}", 400, "gpu_milli", "from 1 to 999"},
      {"{\"gpus\": 1}", 400, "estimated_runtime_s", "required"},
      {"{\"gpus\": 1, \"estimated_runtime_s\": 31536001}", 400, "estimated_runtime_s", "31536000"},
      {"{\"gpus\": 1, \"estimated_runtime_s\": 60, \"runtime_s\": 61}", 400, "runtime_s", "exceeds"},
      {"{\"gpus\": 1, \"estimated_runtime_s\": 60, \"priority\": 1001}", 400, "priority", "-1000 to 1000"},
      {"{\"gpus\": 1, \"estimated_runtime_s\": 60, \"name\": 7}", 400, "name", "string"},
      {"{\"gpus\": 1, \"estimated_runtime_s\": 60, \"name\": \"a\\u0001b\"}", 400, "name", "control character"},
      {"{\"gpus\": 1, \"estimated_runtime_s\": 60, \"name\": \"" + std::string(129, 'x') + "\"}", 400, "name", "at most 128"},
      {"{\"gpus\": 1, \"estimated_runtime_s\": 60, \"gpu_model\": []}", 200, "", ""},
      {"{\"gpus\": 1, \"estimated_runtime_s\": 60, \"gpu_model\": [\"\"]}", 400, "gpu_model", "non-empty"},
      {"{\"gpus\": 1, \"estimated_runtime_s\": 60, \"gpu_model\": [1]}", 400, "gpu_model", "non-empty string"},
      {"{\"gpus\": 1, \"estimated_runtime_s\": 60, \"topology\": \"leaf\"}", 400, "topology", "object"},
      {"{\"gpus\": 1, \"estimated_runtime_s\": 60, \"topology\": {\"required\": \"rack2\"}}", 400, "topology.required", "give one of"},
      {"{\"gpus\": 1, \"estimated_runtime_s\": 60, \"topology\": {\"required\": \"gpu\"}}", 400, "topology.required", "give one of"},
      {"{\"gpus\": 1, \"estimated_runtime_s\": 60, \"topology\": {\"within\": \"leaf\"}}", 400, "topology.within", "unknown field"},
      {"{\"gpus\": 1, \"estimated_runtime_s\": 60, \"single_node\": \"yes\"}", 400, "single_node", "true or false"},
      {"{\"gpu_milli\": 500, \"estimated_runtime_s\": 60, \"single_node\": false}", 400, "single_node", "single-node"},
      {"{\"gpus\": 1, \"estimated_runtime_s\": 60, \"idempotency_key\": \"" + std::string(129, 'k') + "\"}", 400, "idempotency_key", "at most 128"},
  };
  for (const BadBody& row : table) {
    SCOPED_TRACE(row.body.substr(0, 120));
    auto r = ParseSubmitBody(row.body);
    if (row.status == 200) {
      EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().message);
      continue;
    }
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().status, row.status);
    EXPECT_EQ(r.error().field, row.field);
    EXPECT_NE(r.error().message.find(row.message), std::string::npos) << r.error().message;
  }
}

TEST(SubmitBody, ParsesEveryFieldAndCanonicalFormRoundTrips) {
  auto r = ParseSubmitBody(R"({"name": "sft", "tenant": "ads", "gpus": 16, "gpu_model": "H100", "priority": -3,
      "estimated_runtime_s": 7200, "runtime_s": 5400, "topology": {"required": "leaf", "preferred": "host"},
      "single_node": false, "idempotency_key": "k1"})");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->name, "sft");
  EXPECT_EQ(r->tenant, "ads");
  EXPECT_EQ(r->gpus, 16);
  EXPECT_EQ(r->gpu_model, std::vector<std::string>{"H100"});
  EXPECT_EQ(r->priority, -3);
  EXPECT_EQ(r->estimated_runtime_s, 7200);
  EXPECT_EQ(r->runtime_s, 5400);
  EXPECT_EQ(r->topo_required, topo::Level::kLeaf);
  EXPECT_EQ(r->topo_preferred, topo::Level::kNode);
  EXPECT_EQ(r->single_node, false);
  EXPECT_EQ(r->idempotency_key, "k1");
  // The canonical form parses back to the same request (the store keeps it).
  auto again = ParseSubmitBody(r->ToJson().dump());
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->ToJson(), r->ToJson());

  Job j = ToJob(*r, 42, 1000, 8);
  EXPECT_EQ(j.id, 42);
  EXPECT_EQ(j.num_gpu, 16);
  EXPECT_EQ(j.gpu_milli, 1000);
  EXPECT_EQ(j.group, "ads");
  EXPECT_EQ(j.estimate_s, 7200);
  EXPECT_EQ(j.duration_s, 5400);
  EXPECT_EQ(j.submit_time_s, 1000);
  EXPECT_FALSE(j.single_node);
  EXPECT_EQ(j.topo_required, topo::Level::kLeaf);
}

TEST(SubmitBody, DefaultsFollowTheCluster) {
  auto small = ParseSubmitBody(R"({"gpus": 8, "estimated_runtime_s": 60})");
  auto large = ParseSubmitBody(R"({"gpus": 9, "estimated_runtime_s": 60})");
  auto shared = ParseSubmitBody(R"({"gpu_milli": 250, "estimated_runtime_s": 60})");
  ASSERT_TRUE(small && large && shared);
  EXPECT_TRUE(ToJob(*small, 1, 0, 8).single_node);   // fits one 8-GPU host: a pod
  EXPECT_FALSE(ToJob(*large, 2, 0, 8).single_node);  // does not: a gang
  const Job s = ToJob(*shared, 3, 0, 8);
  EXPECT_EQ(s.num_gpu, 1);
  EXPECT_EQ(s.gpu_milli, 250);
  EXPECT_TRUE(s.single_node);
  EXPECT_EQ(s.duration_s, 60);  // no runtime_s: the estimate
  EXPECT_EQ(s.name, "job-3");
}

// --- Roles: the permission table of docs/server-api.md. ----------------
TEST(Roles, PermissionTable) {
  const Principal admin{.token_id = "a", .role = Role::kAdmin};
  const Principal op{.token_id = "o", .role = Role::kOperator};
  const Principal tadmin{.token_id = "t", .role = Role::kTenantAdmin, .tenant = "ads"};
  const Principal member{.token_id = "m", .role = Role::kMember, .tenant = "ads"};
  const Principal viewer{.token_id = "v", .role = Role::kViewer, .tenant = "ads"};
  const Principal global_viewer{.token_id = "g", .role = Role::kViewer};
  struct Row {
    const Principal* p;
    bool read_own, read_other, act_own, act_other, cancel_any, audit, operate, quota;
  };
  const std::vector<Row> table = {
      {&admin, true, true, true, true, true, true, true, true},
      {&op, true, true, false, false, true, false, true, false},
      {&tadmin, true, false, true, false, false, false, false, false},
      {&member, true, false, true, false, false, false, false, false},
      {&viewer, true, false, false, false, false, false, false, false},
      {&global_viewer, true, true, false, false, false, false, false, false},
  };
  for (const Row& r : table) {
    SCOPED_TRACE(RoleName(r.p->role) + std::string(" ") + r.p->tenant);
    EXPECT_EQ(CanRead(*r.p, "ads"), r.read_own);
    EXPECT_EQ(CanRead(*r.p, "search"), r.read_other);
    EXPECT_EQ(CanActFor(*r.p, "ads"), r.act_own);
    EXPECT_EQ(CanActFor(*r.p, "search"), r.act_other);
    EXPECT_EQ(CanCancelAny(*r.p), r.cancel_any);
    EXPECT_EQ(CanReadAudit(*r.p), r.audit);
    EXPECT_EQ(CanOperate(*r.p), r.operate);
    EXPECT_EQ(CanSetQuota(*r.p), r.quota);
  }
  // Tokens: a tenant-admin makes member and viewer tokens of its own tenant only.
  EXPECT_TRUE(CanCreateToken(tadmin, Role::kMember, "ads"));
  EXPECT_TRUE(CanCreateToken(tadmin, Role::kViewer, "ads"));
  EXPECT_FALSE(CanCreateToken(tadmin, Role::kTenantAdmin, "ads"));
  EXPECT_FALSE(CanCreateToken(tadmin, Role::kMember, "search"));
  EXPECT_FALSE(CanCreateToken(tadmin, Role::kAdmin, ""));
  EXPECT_FALSE(CanCreateToken(member, Role::kMember, "ads"));
  EXPECT_FALSE(CanCreateToken(op, Role::kViewer, ""));
  EXPECT_TRUE(CanCreateToken(admin, Role::kOperator, ""));
  const Principal other_member{.token_id = "x", .role = Role::kMember, .tenant = "search"};
  const Principal own_member{.token_id = "y", .role = Role::kMember, .tenant = "ads"};
  EXPECT_TRUE(CanManageToken(tadmin, own_member));
  EXPECT_FALSE(CanManageToken(tadmin, other_member));
  EXPECT_FALSE(CanManageToken(tadmin, admin));
  EXPECT_TRUE(CanManageToken(member, member));  // its own
  EXPECT_FALSE(CanManageToken(member, own_member));
  EXPECT_TRUE(CanManageToken(admin, other_member));
  for (const char* name : {"admin", "operator", "tenant-admin", "member", "viewer"}) {
    auto r = ParseRole(name);
    ASSERT_TRUE(r);
    EXPECT_STREQ(RoleName(*r), name);
  }
  EXPECT_FALSE(ParseRole("root"));
}

TEST(Tokens, CreateAuthenticateRevokeAndOnlyHashesStored) {
  auto st = store::OpenStore("sqlite::memory:");
  ASSERT_TRUE(st) << st.error().message;
  TokenStore tokens(**st);
  EXPECT_EQ(tokens.Count().value(), 0);
  auto t = tokens.Create(Role::kMember, "ads", "ci", "cli", 100);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_TRUE(t->token.starts_with("tidal_" + t->principal.token_id + "_"));
  EXPECT_EQ(t->token.size(), 6u + 8 + 1 + 32);
  auto p = tokens.Authenticate(t->token, 100);
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ(p->role, Role::kMember);
  EXPECT_EQ(p->tenant, "ads");
  EXPECT_EQ(p->token_id, t->principal.token_id);
  // The store holds the hash, never the secret.
  Status s = (*st)->Read([&](store::Tx& tx) -> Status {
    TIDAL_ASSIGN_OR_RETURN(store::Rows rows, tx.Query("SELECT hash FROM api_tokens"));
    EXPECT_EQ(rows.rows.size(), 1u);
    EXPECT_EQ(store::AsText(rows.rows[0], 0).value(), Sha256Hex(t->token));
    return Ok();
  });
  ASSERT_TRUE(s);
  // One changed character, a wrong shape, the id alone: all refused.
  std::string wrong = t->token;
  wrong.back() = wrong.back() == 'a' ? 'b' : 'a';
  EXPECT_FALSE(tokens.Authenticate(wrong, 100));
  auto short_one = tokens.Authenticate("tidal_" + t->principal.token_id, 100);
  ASSERT_FALSE(short_one);
  EXPECT_NE(short_one.error().message.find("malformed"), std::string::npos) << short_one.error().message;
  auto long_one = tokens.Authenticate(t->token + "x", 100);
  ASSERT_FALSE(long_one);
  EXPECT_NE(long_one.error().message.find("malformed"), std::string::npos) << long_one.error().message;
  auto other_prefix = tokens.Authenticate("tidel_" + t->token.substr(6), 100);
  ASSERT_FALSE(other_prefix);
  EXPECT_NE(other_prefix.error().message.find("malformed"), std::string::npos);
  EXPECT_FALSE(tokens.Authenticate("", 100));
  EXPECT_FALSE(tokens.Authenticate(std::string(47, 'x'), 100));
  ASSERT_TRUE(tokens.Revoke(t->principal.token_id, 101));
  EXPECT_FALSE(tokens.Authenticate(t->token, 101));  // at once in this process, though cached
  EXPECT_FALSE(tokens.Revoke(t->principal.token_id, 102));  // already revoked
  // Bound roles need a tenant; global ones refuse one.
  EXPECT_FALSE(tokens.Create(Role::kMember, "", "", "cli", 1));
  EXPECT_FALSE(tokens.Create(Role::kTenantAdmin, "", "", "cli", 1));
  EXPECT_FALSE(tokens.Create(Role::kAdmin, "ads", "", "cli", 1));
  EXPECT_FALSE(tokens.Create(Role::kOperator, "ads", "", "cli", 1));
  EXPECT_TRUE(tokens.Create(Role::kViewer, "", "", "cli", 1));
  EXPECT_TRUE(tokens.Create(Role::kViewer, "ads", "", "cli", 1));
  EXPECT_EQ(tokens.Count().value(), 3);
}

TEST(Tokens, Sha256KnownAnswer) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Metrics, LabelEscapingAndHistogram) {
  EXPECT_EQ(EscapeLabel("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  Histogram h({1, 10});
  h.Observe(0.5);
  h.Observe(1);
  h.Observe(5);
  h.Observe(50);
  std::string out;
  h.Render(out, "x");
  EXPECT_NE(out.find("x_bucket{le=\"1\"} 2\n"), std::string::npos) << out;
  EXPECT_NE(out.find("x_bucket{le=\"10\"} 3\n"), std::string::npos) << out;
  EXPECT_NE(out.find("x_bucket{le=\"+Inf\"} 4\n"), std::string::npos) << out;
  EXPECT_NE(out.find("x_sum 56.5\n"), std::string::npos) << out;
  EXPECT_NE(out.find("x_count 4\n"), std::string::npos) << out;
}

// The fuzz target's checks over the seed corpus and tricky inputs (so they
// run under g++ in CI; libFuzzer runs them on millions more, docs/server.md).
TEST(RequestFuzz, CorpusAndTrickyInputsHoldTheChecks) {
  std::vector<std::string> inputs = {
      "", "{", "}", "[]", "null", "0", "\"x\"", "{}", "{\"submit\": null}", "{\"submit\": [1, 2]}",
      "{\"submit\": [{\"gpus\": 1, \"estimated_runtime_s\": 1}]}", "{\"gpus\": 1, \"estimated_runtime_s\": 1}",
      "{\"gpus\": 100000, \"estimated_runtime_s\": 31536000, \"runtime_s\": 31536000}",
      "{\"gpu_milli\": 999, \"estimated_runtime_s\": 5, \"gpu_model\": [\"a\",\"b\"]}",
      "{\"gpus\": 1, \"estimated_runtime_s\": 1, \"topology\": {}}", std::string("{\"gpus\":\0 1}", 12),
      "{\"gpus\": 1, \"estimated_runtime_s\": 1, \"name\": \"\\ud800\"}", std::string(70000, '['),
      "{\"a\":" + std::string(5000, '[') + std::string(5000, ']') + "}", "{\"gpus\": -0, \"estimated_runtime_s\": 1}",
  };
  for (const char* f : {"submit-full.json", "submit-shared.json", "simulate.json", "dup.json"}) {
    std::ifstream in(std::string(TIDAL_SOURCE_DIR) + "/src/server/fuzz_corpus/" + f);
    ASSERT_TRUE(in) << f;
    inputs.emplace_back((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  for (const std::string& s : inputs) FuzzRequest(s);
}

}  // namespace
}  // namespace tidal::server

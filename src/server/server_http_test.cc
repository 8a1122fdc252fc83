// The API over real HTTP on loopback: every endpoint refuses a missing
// token; every endpoint is tried across tenants (a member of one tenant can
// never see, cancel or charge another's); the error shape and statuses of
// bad requests; the audit log; the OpenAPI document matches the routes; the
// metrics pass Prometheus' own parser (promtool check metrics). On SQLite,
// and on PostgreSQL as server_http_test_postgresql.
#include <gtest/gtest.h>
#include <httplib.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "server/daemon.h"
#include "market/ledger.h"
#include "server/http_server.h"
#include "server/server_test_util.h"
#include "store/store_testing.h"
#include "tenancy/tenants_file.h"

namespace tidal::server {
namespace {

using json = nlohmann::json;

DaemonConfig SmallConfig() { return testing::SmallDaemonConfig("http-test"); }

class HttpTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::filesystem::temp_directory_path() / ("tidal-http-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    // The same suite on PostgreSQL when ctest runs it as
    // server_http_test_postgresql (TIDAL_HTTP_TEST_BACKEND=postgresql).
    const char* backend = std::getenv("TIDAL_HTTP_TEST_BACKEND");
    if (backend != nullptr && std::string_view(backend) == "postgresql") {
      auto db = store::testing::FreshStore(store::testing::Backend::kPostgres);
      if (!db) {
        skipped_ = db.error().message;
        return;
      }
      pg_ = std::move(*db);
      store_ = &pg_->store();
    } else {
      auto st = store::OpenStore("sqlite:" + (dir_ / "t.db").string());
      ASSERT_TRUE(st) << st.error().message;
      sqlite_ = std::move(*st);
      store_ = sqlite_.get();
    }
    auto d = Daemon::Open(SmallConfig(), *store_, SystemWallClock());
    ASSERT_TRUE(d) << d.error().message;
    daemon_ = std::move(*d);
    tokens_ = std::make_unique<TokenStore>(*store_);
    auto mk = [](Role r, std::string tenant, std::string name) -> std::string {
      auto t = tokens_->Create(r, std::move(tenant), std::move(name), "test", 1);
      if (!t) {
        ADD_FAILURE() << "cannot create a token: " << t.error().message;
        return "";
      }
      return t->token;
    };
    admin_ = mk(Role::kAdmin, "", "admin");
    operator_ = mk(Role::kOperator, "", "op");
    ads_admin_ = mk(Role::kTenantAdmin, "ads", "ads-admin");
    ads_ = mk(Role::kMember, "ads", "ads-member");
    ads_viewer_ = mk(Role::kViewer, "ads", "ads-viewer");
    search_ = mk(Role::kMember, "search", "search-member");
    server_ = std::make_unique<HttpServer>(*daemon_, *tokens_, HttpOptions{.port = 0, .threads = 8});
    ASSERT_TRUE(server_->Listen());
    daemon_->Start();
    serving_ = std::thread([] { server_->Serve(); });
  }
  static void TearDownTestSuite() {
    if (server_) server_->Stop();
    if (serving_.joinable()) serving_.join();
    if (daemon_) daemon_->Stop();
    server_.reset();
    daemon_.reset();
    tokens_.reset();
    sqlite_.reset();
    pg_.reset();
    store_ = nullptr;
    std::filesystem::remove_all(dir_);
  }

  void SetUp() override {
    if (!skipped_.empty()) GTEST_SKIP() << skipped_;
    ASSERT_TRUE(server_ && !admin_.empty()) << "the suite's daemon did not start";
  }

  struct Answer {
    int status = 0;
    json body;
    std::string text;
  };
  static Answer Call(const std::string& method, const std::string& path, const std::string& token, const std::string& body = "",
                     const std::string& type = "application/json") {
    httplib::Client c("127.0.0.1", server_->port());
    httplib::Headers h;
    if (!token.empty()) h.emplace("Authorization", "Bearer " + token);
    httplib::Result r = method == "GET"    ? c.Get(path, h)
                        : method == "POST" ? c.Post(path, h, body, type)
                        : method == "PUT"  ? c.Put(path, h, body, type)
                                           : c.Delete(path, h);
    Answer a;
    if (!r) return a;
    a.status = r->status;
    a.text = r->body;
    a.body = json::parse(r->body, nullptr, false);
    return a;
  }
  // A job of `token`'s tenant, submitted through the API.
  static int64_t SubmitJob(const std::string& token, int gpus = 1) {
    Answer a = Call("POST", "/v1/jobs", token, json{{"gpus", gpus}, {"estimated_runtime_s", 100000}}.dump());
    EXPECT_EQ(a.status, 201) << a.text;
    return a.body.value("id", int64_t{0});
  }
  static void ExpectError(const Answer& a, int status, const std::string& code) {
    EXPECT_EQ(a.status, status) << a.text;
    ASSERT_TRUE(a.body.is_object()) << a.text;
    ASSERT_TRUE(a.body.contains("error")) << a.text;
    EXPECT_EQ(a.body["error"]["code"], code) << a.text;
    EXPECT_TRUE(a.body["error"]["message"].is_string());
  }

  static inline std::filesystem::path dir_;
  static inline std::unique_ptr<store::Store> sqlite_;
  static inline std::unique_ptr<store::testing::TestStore> pg_;
  static inline store::Store* store_ = nullptr;
  static inline std::string skipped_;  // why the suite's backend is not there
  static inline std::unique_ptr<Daemon> daemon_;
  static inline std::unique_ptr<TokenStore> tokens_;
  static inline std::unique_ptr<HttpServer> server_;
  static inline std::thread serving_;
  static inline std::string admin_, operator_, ads_admin_, ads_, ads_viewer_, search_;
};

// Every path of the OpenAPI document, its parameters filled in.
std::vector<std::pair<std::string, std::string>> DocumentedCalls(int64_t job) {
  std::vector<std::pair<std::string, std::string>> out;
  const json doc = json::parse(OpenApiDocument());
  for (const auto& [path, ops] : doc["paths"].items()) {
    for (const auto& [method, op] : ops.items()) {
      std::string p = path;
      auto sub = [&](const std::string& from, const std::string& to) {
        if (auto i = p.find(from); i != std::string::npos) p.replace(i, from.size(), to);
      };
      sub("{id}", path.starts_with("/v1/tokens") ? "AAAAAAAA" : std::to_string(job));
      sub("{name}", "ads");
      std::string m = method;
      for (char& ch : m) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
      out.push_back({m, p});
    }
  }
  return out;
}

TEST_F(HttpTest, EveryEndpointButTheOpenOnesNeedsAToken) {
  const int64_t job = SubmitJob(ads_);
  const std::set<std::string> open = {"/healthz", "/metrics", "/v1/openapi.json"};
  int checked = 0;
  for (const auto& [method, path] : DocumentedCalls(job)) {
    SCOPED_TRACE(method + " " + path);
    Answer none = Call(method, path, "", "{}");
    Answer bad = Call(method, path, "tidal_AAAAAAAA_" + std::string(32, 'A'), "{}");
    if (open.contains(path)) {
      EXPECT_EQ(none.status, 200);
      continue;
    }
    ExpectError(none, 401, "unauthenticated");
    ExpectError(bad, 401, "unauthenticated");
    // And the route exists: with a token it is not "no such endpoint".
    Answer ok = Call(method, path, admin_, "{}");
    EXPECT_FALSE(ok.status == 404 && ok.text.find("no such endpoint") != std::string::npos) << ok.text;
    ++checked;
  }
  EXPECT_GE(checked, 20);
  Answer basic = Call("GET", "/v1/cluster", "");
  EXPECT_EQ(basic.status, 401);
}

TEST_F(HttpTest, NoTenantSeesOrTouchesAnothersJobsOrAccount) {
  const int64_t ads_job = SubmitJob(ads_);
  const int64_t search_job = SubmitJob(search_);
  const std::string a = std::to_string(ads_job);
  // As a member of search, every way at ads' job and account:
  ExpectError(Call("GET", "/v1/jobs/" + a, search_), 404, "not_found");
  ExpectError(Call("GET", "/v1/jobs/" + a + "/explain", search_), 404, "not_found");
  ExpectError(Call("POST", "/v1/jobs/" + a + "/cancel", search_), 404, "not_found");
  ExpectError(Call("DELETE", "/v1/jobs/" + a, search_), 404, "not_found");
  ExpectError(Call("GET", "/v1/jobs?tenant=ads", search_), 404, "not_found");
  ExpectError(Call("GET", "/v1/tenants/ads", search_), 404, "not_found");
  ExpectError(Call("GET", "/v1/tenants/ads/statement", search_), 404, "not_found");
  ExpectError(Call("POST", "/v1/jobs", search_, R"({"tenant": "ads", "gpus": 1, "estimated_runtime_s": 60})"), 404, "not_found");
  ExpectError(Call("POST", "/v1/simulate", search_, R"({"submit": [{"tenant": "ads", "gpus": 1, "estimated_runtime_s": 60}]})"),
              404, "not_found");
  ExpectError(Call("POST", "/v1/tokens", search_, R"({"role": "member", "tenant": "ads"})"), 403, "permission_denied");
  ExpectError(Call("GET", "/v1/audit", search_), 403, "permission_denied");
  ExpectError(Call("GET", "/v1/tenants/ads/holds", search_), 404, "not_found");
  ExpectError(Call("GET", "/v1/tenants/search/holds", search_), 403, "permission_denied");  // members: not even their own
  {
    // A hold of ads' credits (as a job's metering opens one), and one of search's.
    auto ledger = market::Ledger::Open(*store_);
    ASSERT_TRUE(ledger) << ledger.error().message;
    for (const char* t : {"ads", "search"}) {
      (void)ledger->CreateAccount({.name = t});
      auto g = ledger->CreateTransfer({.id = std::string("g-") + t, .debit = std::string(market::kTreasury), .credit = t,
                                       .amount = 100'000'000, .code = std::string(market::kCodeGrant)});
      ASSERT_TRUE(g) << g.error().message;
      auto h = ledger->CreateTransfer({.id = std::string("h-") + t, .debit = t, .credit = std::string(market::kRevenue),
                                       .amount = 5'000'000, .flags = market::transfer_flags::kPending, .code = "hold"});
      ASSERT_TRUE(h && h->succeeded()) << (h ? h->name() : h.error().message);
    }
  }
  Answer holds = Call("GET", "/v1/tenants/ads/holds", ads_admin_);
  ASSERT_EQ(holds.status, 200) << holds.text;
  ASSERT_EQ(holds.body["holds"].size(), 1u) << holds.text;  // its own only
  EXPECT_EQ(holds.body["holds"][0]["id"], "h-ads");
  EXPECT_EQ(holds.body["holds"][0]["amount"], "5.000000");
  EXPECT_EQ(holds.body["holds"][0]["remaining"], "5.000000");
  EXPECT_EQ(holds.body["holds"][0]["state"], "pending");
  // What it does see is its own.
  for (const char* q : {"/v1/jobs", "/v1/jobs?state=pending", "/v1/jobs?state=running", "/v1/jobs?state=succeeded"}) {
    Answer l = Call("GET", q, search_);
    ASSERT_EQ(l.status, 200) << l.text;
    for (const json& j : l.body["jobs"]) EXPECT_EQ(j["tenant"], "search") << q;
  }
  Answer t = Call("GET", "/v1/tenants", search_);
  ASSERT_EQ(t.status, 200);
  ASSERT_EQ(t.body["tenants"].size(), 1u);
  EXPECT_EQ(t.body["tenants"][0]["name"], "search");
  Answer w = Call("POST", "/v1/simulate", search_, R"({"submit": [{"gpus": 1, "estimated_runtime_s": 60}]})");
  ASSERT_EQ(w.status, 200) << w.text;
  for (const json& j : w.body["jobs"]) EXPECT_EQ(j["tenant"], "search");
  Answer toks = Call("GET", "/v1/tokens", search_);
  ASSERT_EQ(toks.status, 200);
  ASSERT_EQ(toks.body["tokens"].size(), 1u);  // its own only
  EXPECT_EQ(toks.body["tokens"][0]["name"], "search-member");
  // It cannot revoke ads' tokens, even knowing the id.
  Answer all = Call("GET", "/v1/tokens", admin_);
  for (const json& tk : all.body["tokens"]) {
    if (tk["tenant"] != "ads") continue;
    ExpectError(Call("DELETE", "/v1/tokens/" + tk["id"].get<std::string>(), search_), 404, "not_found");
  }
  // ads' job is untouched, and its own tenant may act on it.
  Answer still = Call("GET", "/v1/jobs/" + a, ads_);
  ASSERT_EQ(still.status, 200);
  EXPECT_FALSE(still.body["cancel_requested"].get<bool>());
  // A viewer of ads sees but does not act; an operator cancels anyone's.
  EXPECT_EQ(Call("GET", "/v1/jobs/" + a, ads_viewer_).status, 200);
  ExpectError(Call("POST", "/v1/jobs/" + a + "/cancel", ads_viewer_), 403, "permission_denied");
  ExpectError(Call("POST", "/v1/jobs", ads_viewer_, R"({"gpus": 1, "estimated_runtime_s": 60})"), 403, "permission_denied");
  ExpectError(Call("POST", "/v1/jobs", operator_, R"({"tenant": "ads", "gpus": 1, "estimated_runtime_s": 60})"), 403,
              "permission_denied");
  EXPECT_EQ(Call("POST", "/v1/jobs/" + std::to_string(search_job) + "/cancel", operator_).status, 202);
  ExpectError(Call("GET", "/v1/audit", operator_), 403, "permission_denied");
  // A tenant-admin makes member tokens of its own tenant only.
  Answer made = Call("POST", "/v1/tokens", ads_admin_, R"({"role": "member", "name": "ci"})");
  ASSERT_EQ(made.status, 201) << made.text;
  EXPECT_EQ(made.body["tenant"], "ads");
  EXPECT_EQ(Call("GET", "/v1/whoami", made.body["token"].get<std::string>()).body["tenant"], "ads");
  ExpectError(Call("POST", "/v1/tokens", ads_admin_, R"({"role": "admin"})"), 403, "permission_denied");
  ExpectError(Call("POST", "/v1/tokens", ads_admin_, R"({"role": "member", "tenant": "search"})"), 403, "permission_denied");
  // Revoked: 401 from then on.
  const std::string id = made.body["id"];
  EXPECT_EQ(Call("DELETE", "/v1/tokens/" + id, ads_admin_).status, 200);
  ExpectError(Call("GET", "/v1/whoami", made.body["token"].get<std::string>()), 401, "unauthenticated");
}

TEST_F(HttpTest, BadRequestsGetTheErrorShapeAndChangeNothing) {
  const int64_t before = Call("GET", "/v1/jobs?limit=1000", admin_).body["jobs"].size();
  ExpectError(Call("POST", "/v1/jobs", ads_, "{\"gpus\": "), 400, "invalid_argument");
  ExpectError(Call("POST", "/v1/jobs", ads_, R"({"gpus": 1, "estimated_runtime_s": 60, "colour": 1})"), 400, "invalid_argument");
  Answer field = Call("POST", "/v1/jobs", ads_, R"({"gpus": "one", "estimated_runtime_s": 60})");
  ExpectError(field, 400, "invalid_argument");
  EXPECT_EQ(field.body["error"]["field"], "gpus");
  ExpectError(Call("POST", "/v1/jobs", ads_, R"({"gpus": 1e400, "estimated_runtime_s": 60})"), 400, "invalid_argument");
  ExpectError(Call("POST", "/v1/jobs", ads_, R"({"gpus": 1, "estimated_runtime_s": 60})", "text/plain"), 415,
              "unsupported_media_type");
  ExpectError(Call("POST", "/v1/jobs", ads_, std::string(100 * 1024, ' ')), 413, "payload_too_large");
  ExpectError(Call("POST", "/v1/jobs", ads_, std::string(1024 * 1024, ' ')), 413, "payload_too_large");
  ExpectError(Call("GET", "/v1/nothing-here", ads_), 404, "not_found");
  ExpectError(Call("GET", "/v1/jobs?limit=0", ads_), 400, "invalid_argument");
  ExpectError(Call("GET", "/v1/jobs?limit=abc", ads_), 400, "invalid_argument");
  ExpectError(Call("GET", "/v1/jobs?sort=name", ads_), 400, "invalid_argument");
  ExpectError(Call("GET", "/v1/jobs?page_token=zzz", ads_), 400, "invalid_argument");
  ExpectError(Call("GET", "/v1/jobs/999999999", ads_), 404, "not_found");
  ExpectError(Call("POST", "/v1/simulate", ads_, R"({"submit": []})"), 400, "invalid_argument");
  ExpectError(Call("POST", "/v1/tokens", admin_, R"({"role": "root"})"), 400, "invalid_argument");
  ExpectError(Call("GET", "/v1/quote", ads_), 400, "invalid_argument");  // no GPU model
  ExpectError(Call("GET", "/v1/quote?gpu_model=H100&gpus=0", ads_), 400, "invalid_argument");
  ExpectError(Call("GET", "/v1/quote?gpu_model=H100&tier=gold", ads_), 400, "invalid_argument");
  ExpectError(Call("GET", "/v1/quote?gpu_model=H100", ads_), 404, "not_found");  // this daemon has no market
  EXPECT_EQ(Call("GET", "/v1/jobs?limit=1000", admin_).body["jobs"].size(), before);
}

TEST_F(HttpTest, SubmitGetListCancelAndTheAuditLog) {
  Answer s = Call("POST", "/v1/jobs", ads_, R"({"name": "sft", "gpus": 4, "estimated_runtime_s": 3600, "idempotency_key": "x1"})");
  ASSERT_EQ(s.status, 201) << s.text;
  const int64_t id = s.body["id"];
  EXPECT_EQ(s.body["tenant"], "ads");
  Answer again = Call("POST", "/v1/jobs", ads_, R"({"name": "sft", "gpus": 4, "estimated_runtime_s": 3600, "idempotency_key": "x1"})");
  EXPECT_EQ(again.status, 200);
  EXPECT_EQ(again.body["id"], id);
  // Within a few cycles it runs; explain answers for it.
  std::string state;
  for (int i = 0; i < 100 && state != "running"; ++i) {
    state = Call("GET", "/v1/jobs/" + std::to_string(id), ads_).body.value("state", "");
    if (state != "running") std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(state, "running");
  EXPECT_EQ(Call("GET", "/v1/jobs/" + std::to_string(id) + "/explain", ads_).status, 200);
  Answer c = Call("POST", "/v1/jobs/" + std::to_string(id) + "/cancel", ads_);
  EXPECT_EQ(c.status, 202);
  EXPECT_TRUE(c.body["cancel_requested"].get<bool>());
  Answer cluster = Call("GET", "/v1/cluster", ads_viewer_);
  ASSERT_EQ(cluster.status, 200);
  EXPECT_EQ(cluster.body["gpus"], 32);
  EXPECT_EQ(Call("GET", "/v1/cluster/nodes", ads_viewer_).body["nodes"].size(), 4u);
  // The audit log names who did what.
  Answer audit = Call("GET", "/v1/audit?limit=1000", admin_);
  ASSERT_EQ(audit.status, 200) << audit.text;
  bool submit_seen = false, cancel_seen = false;
  for (const json& e : audit.body["entries"]) {
    if (e["object"] == "job/" + std::to_string(id) && e["method"] == "POST" && e["status"] == 201) submit_seen = true;
    if (e["object"] == "job/" + std::to_string(id) && e["status"] == 202) cancel_seen = true;
  }
  EXPECT_TRUE(submit_seen) << audit.text;
  EXPECT_TRUE(cancel_seen) << audit.text;
}

TEST_F(HttpTest, DrainResumeAndQuotaChangesAreForOperatorsAndAdminsAndAudited) {
  // Who may: members, viewers and tenant-admins of any tenant may not drain,
  // resume or change quotas; operators drain but do not change quotas.
  for (const std::string* t : {&ads_, &ads_viewer_, &ads_admin_, &search_}) {
    ExpectError(Call("POST", "/v1/nodes/h1/drain", *t), 403, "permission_denied");
    ExpectError(Call("POST", "/v1/nodes/h1/resume", *t), 403, "permission_denied");
    ExpectError(Call("PUT", "/v1/tenants/ads/quota", *t, R"({"nominal": 20})"), 403, "permission_denied");
    ExpectError(Call("PUT", "/v1/tenants/search/quota", *t, R"({"nominal": 20})"), 403, "permission_denied");
    ExpectError(Call("POST", "/v1/simulate", *t, R"({"drain": ["h1"]})"), 403, "permission_denied");
  }
  ExpectError(Call("PUT", "/v1/tenants/ads/quota", operator_, R"({"nominal": 20})"), 403, "permission_denied");
  // Bad bodies: 400 with the field.
  Answer unknown_field = Call("PUT", "/v1/tenants/ads/quota", admin_, R"({"nominal": 8, "floor": 8})");
  ExpectError(unknown_field, 400, "invalid_argument");
  Answer negative = Call("PUT", "/v1/tenants/ads/quota", admin_, R"({"nominal": -1})");
  ExpectError(negative, 400, "invalid_argument");
  EXPECT_EQ(negative.body["error"]["field"], "nominal");
  ExpectError(Call("PUT", "/v1/tenants/ads/quota", admin_, R"({"nominal": 8, "resource": "tpu"})"), 400, "invalid_argument");
  ExpectError(Call("PUT", "/v1/tenants/ads/quota", admin_, R"({"resource": "gpu"})"), 400, "invalid_argument");
  ExpectError(Call("PUT", "/v1/tenants/nobody/quota", admin_, R"({"nominal": 8})"), 404, "not_found");
  ExpectError(Call("POST", "/v1/nodes/h1/drain", operator_, R"({"reason": 7})"), 400, "invalid_argument");
  ExpectError(Call("POST", "/v1/nodes/h9/drain", operator_), 404, "not_found");
  ExpectError(Call("POST", "/v1/nodes/h1/resume", operator_), 409, "conflict");
  ExpectError(Call("POST", "/v1/simulate", admin_, R"({"drain": ["h9"]})"), 404, "not_found");
  // An operator drains and resumes; an admin changes a quota; each is audited.
  Answer d = Call("POST", "/v1/nodes/h1/drain", operator_, R"({"reason": "firmware"})");
  ASSERT_EQ(d.status, 200) << d.text;
  EXPECT_EQ(d.body["drained"], true);
  Answer nodes = Call("GET", "/v1/cluster/nodes", ads_viewer_);
  bool seen = false;
  for (const json& n : nodes.body["nodes"]) {
    if (n["name"] != "h1") continue;
    seen = true;
    EXPECT_EQ(n["drained"], true);
    EXPECT_EQ(n["drain_reason"], "firmware");
  }
  EXPECT_TRUE(seen) << nodes.text;
  ExpectError(Call("POST", "/v1/nodes/h1/drain", operator_), 409, "conflict");
  Answer w = Call("POST", "/v1/simulate", operator_, R"({"drain": ["h2"]})");
  EXPECT_EQ(w.status, 200) << w.text;
  EXPECT_EQ(Call("POST", "/v1/nodes/h1/resume", operator_).status, 200);
  Answer q = Call("PUT", "/v1/tenants/ads/quota", admin_, R"({"resource": "gpu", "nominal": 12, "borrowing_limit": 4})");
  ASSERT_EQ(q.status, 200) << q.text;
  EXPECT_EQ(q.body["nominal"], 12000);
  EXPECT_EQ(q.body["borrowing_limit"], 4000);
  EXPECT_TRUE(q.body["lending_limit"].is_null());
  EXPECT_DOUBLE_EQ(Call("GET", "/v1/tenants/ads", admin_).body["floor_gpus"].get<double>(), 12);
  ExpectError(Call("PUT", "/v1/tenants/search/quota", admin_, R"({"nominal": 24})"), 409, "conflict");  // 12 + 24 > 32
  ASSERT_EQ(Call("PUT", "/v1/tenants/ads/quota", admin_, R"({"nominal": 16})").status, 200);
  Answer audit = Call("GET", "/v1/audit?limit=1000", admin_);
  int drains = 0, resumes = 0, quotas = 0, refused = 0;
  for (const json& e : audit.body["entries"]) {
    if (e["path"] == "/v1/nodes/h1/drain" && e["status"] == 200 && e["object"] == "node/h1") ++drains;
    if (e["path"] == "/v1/nodes/h1/resume" && e["status"] == 200) ++resumes;
    if (e["path"] == "/v1/tenants/ads/quota" && e["status"] == 200 && e["object"] == "tenant/ads") ++quotas;
    if (e["path"] == "/v1/tenants/ads/quota" && e["status"] == 403) ++refused;
  }
  EXPECT_EQ(drains, 1);
  EXPECT_EQ(resumes, 1);
  EXPECT_EQ(quotas, 2);
  EXPECT_GE(refused, 5);
}

TEST_F(HttpTest, OpenApiAndHealthAndMetricsPassPromtool) {
  Answer doc = Call("GET", "/v1/openapi.json", "");
  ASSERT_EQ(doc.status, 200);
  EXPECT_EQ(doc.body["openapi"], "3.0.3");
  EXPECT_EQ(Call("GET", "/healthz", "").body["status"], "ok");
  SubmitJob(ads_);
  httplib::Client c("127.0.0.1", server_->port());
  auto m = c.Get("/metrics");
  ASSERT_TRUE(m);
  ASSERT_EQ(m->status, 200);
  for (const char* name : {"tidal_schedule_attempts_total{result=\"scheduled\"}", "tidal_scheduling_cycle_duration_seconds_bucket",
                           "tidal_admission_wait_time_seconds_count", "tidal_tenant_gpus{tenant=\"ads\",state=\"floor\"}",
                           "tidal_preemptions_total{reason=\"reclaim\"}", "tidal_gpu_allocation_ratio", "tidal_gpu_fragmentation_ratio",
                           "tidal_build_info{version=", "tidal_http_requests_total"})
    EXPECT_NE(m->body.find(name), std::string::npos) << name;
  if (std::system("command -v promtool > /dev/null 2>&1") != 0) GTEST_SKIP() << "promtool (Debian's prometheus package) is not installed";
  const auto file = dir_ / "metrics.txt";
  std::ofstream(file) << m->body;
  const std::string cmd = "promtool check metrics < " + file.string() + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  const int rc = ::pclose(p);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(out, "") << "promtool's lint findings:\n" << out;
}

}  // namespace
}  // namespace tidal::server

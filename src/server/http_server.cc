#include "server/http_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <thread>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "market/ledger.h"
#include "market/market_config.h"
#include "server/job_rows.h"

namespace tidal::server {
namespace {

using httplib::Request;
using httplib::Response;
using json = nlohmann::json;
using Args = std::vector<std::string>;
using Route = std::function<void(const Request&, Response&, const Args&)>;

void Reply(Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(), "application/json");
}

void Fail(Response& res, const ApiError& e) {
  res.status = e.status;
  if (e.status == 401) res.set_header("WWW-Authenticate", "Bearer realm=\"tidal\"");
  res.set_content(ErrorBody(e), "application/json");
}

const char* DefaultCode(int status) {
  switch (status) {
    case 400: return "invalid_argument";
    case 401: return "unauthenticated";
    case 403: return "permission_denied";
    case 404: return "not_found";
    case 405: return "method_not_allowed";
    case 409: return "conflict";
    case 413: return "payload_too_large";
    case 415: return "unsupported_media_type";
    case 503: return "unavailable";
    default: return status >= 500 ? "internal" : "invalid_argument";
  }
}

// Query parameters: only `known` ones, each at most once.
ApiResult<void> OnlyParams(const Request& req, std::initializer_list<std::string_view> known) {
  std::set<std::string> seen;
  for (const auto& [k, v] : req.params) {
    bool ok = false;
    for (std::string_view n : known) ok = ok || n == k;
    if (!ok) return std::unexpected(BadRequest(fmt::format("unknown query parameter '{}'", k), k));
    if (!seen.insert(k).second) return std::unexpected(BadRequest(fmt::format("query parameter '{}' is given twice", k), k));
  }
  return {};
}

ApiResult<int64_t> IntParam(const Request& req, const std::string& name, int64_t dflt, int64_t min, int64_t max) {
  if (!req.has_param(name)) return dflt;
  const std::string v = req.get_param_value(name);
  int64_t out = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || p != v.data() + v.size() || out < min || out > max) {
    return std::unexpected(BadRequest(fmt::format("query parameter '{}' must be an integer from {} to {}", name, min, max), name));
  }
  return out;
}

// The page token of a list: "b<submitted_at>.<id>" (the page after that job).
ApiResult<std::optional<JobCursor>> PageToken(const Request& req) {
  if (!req.has_param("page_token")) return std::optional<JobCursor>();
  const std::string v = req.get_param_value("page_token");
  JobCursor c;
  const char* end = v.data() + v.size();
  const char* dot = std::find(v.data(), end, '.');
  bool ok = v.size() >= 4 && v[0] == 'b' && dot != end;
  if (ok) {
    auto [p1, e1] = std::from_chars(v.data() + 1, dot, c.submitted_at);
    auto [p2, e2] = std::from_chars(dot + 1, end, c.id);
    ok = e1 == std::errc() && p1 == dot && e2 == std::errc() && p2 == end && c.id > 0;
  }
  if (!ok) return std::unexpected(BadRequest("page_token is not one this server gave out; start again without it", "page_token"));
  return std::optional<JobCursor>(c);
}

std::string Credits(market::Micros m) { return market::FormatCredits(m); }

}  // namespace

struct HttpServer::Impl {
  Daemon& d;
  TokenStore& tokens;
  HttpOptions o;
  httplib::Server svr;
  int port = 0;
  int listen_fd = -1;
  std::atomic<bool> serving{false};
  std::optional<market::Ledger> ledger;

  Impl(Daemon& daemon, TokenStore& t, HttpOptions options) : d(daemon), tokens(t), o(std::move(options)) {}

  int64_t Wall() const { return static_cast<int64_t>(std::time(nullptr)); }

  ApiResult<Principal> Auth(const Request& req) {
    const std::string h = req.get_header_value("Authorization");
    if (h.empty()) return std::unexpected(Unauthenticated("this endpoint needs 'Authorization: Bearer <token>'"));
    if (!h.starts_with("Bearer ")) return std::unexpected(Unauthenticated("the Authorization header must read 'Bearer <token>'"));
    auto p = tokens.Authenticate(std::string_view(h).substr(7), Wall());
    if (!p) {
      if (p.error().code == ErrorCode::kNotFound) return std::unexpected(Unauthenticated("the token is unknown, revoked or malformed"));
      return std::unexpected(FromError(p.error()));
    }
    return *p;
  }

  // A handler that needs a token; exceptions become 500s.
  using Handler = std::function<void(const Request&, Response&, const Principal&, const Args&)>;
  Route Authed(Handler h) {
    return [this, h = std::move(h)](const Request& req, Response& res, const Args& args) {
      try {
        auto p = Auth(req);
        if (!p) return Fail(res, p.error());
        h(req, res, *p, args);
        if (res.status >= 400 && req.method != "GET") {
          // Refused state-changing calls are audited too (accepted ones in
          // their own transaction).
          Status s = d.store().Write([&](store::Tx& tx) {
            return AppendAudit(tx, d.Now(), p->token_id, RoleName(p->role), req.method, req.path, res.status, "");
          });
          if (!s) spdlog::warn("serve: audit write failed: {}", s.error().message);
        }
      } catch (const std::exception& e) {
        Fail(res, {500, "internal", fmt::format("internal error: {}", e.what()), ""});
      }
    };
  }

  ApiResult<json> Body(const Request& req) {
    const std::string ct = req.get_header_value("Content-Type");
    if (!ct.starts_with("application/json")) {
      return std::unexpected(ApiError{415, "unsupported_media_type", "send the body as Content-Type: application/json", ""});
    }
    return ParseObject(req.body);
  }

  // The router. cpp-httplib matches each route's std::regex in turn on every
  // request (tens of microseconds across 25 routes), so the API has its own
  // table — exact paths in a hash map, the few with parameters by segment —
  // behind one httplib route per method.
  struct Pattern {
    std::vector<std::string> segments;  // "{id}" digits (1-18), "{name}" 1-128 bytes, "{token}" 1-16 alphanumerics, "{*}" the rest
    Route fn;
  };
  std::unordered_map<std::string, Route> exact_;                // "METHOD path"
  std::unordered_map<std::string, std::vector<Pattern>> patterns_;  // by method
  std::set<std::string> known_paths_;                              // for 405 vs 404

  void Add(const std::string& method, const std::string& pattern, Route fn);
  void Dispatch(const Request& req, Response& res);
  void Routes();
};

namespace {
std::vector<std::string> Segments(std::string_view path) {
  std::vector<std::string> out;
  size_t i = 1;
  while (i <= path.size()) {
    const size_t j = std::min(path.find('/', i), path.size());
    out.emplace_back(path.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

bool SegmentMatches(const std::string& pattern, const std::string& seg) {
  auto all = [&](auto pred) {
    for (char c : seg)
      if (!pred(static_cast<unsigned char>(c))) return false;
    return true;
  };
  if (pattern == "{id}") return !seg.empty() && seg.size() <= 18 && all([](unsigned char c) { return std::isdigit(c) != 0; });
  if (pattern == "{name}") return !seg.empty() && seg.size() <= 128;
  if (pattern == "{token}") return !seg.empty() && seg.size() <= 16 && all([](unsigned char c) { return std::isalnum(c) != 0; });
  return pattern == seg;
}
}  // namespace

void HttpServer::Impl::Add(const std::string& method, const std::string& pattern, Route fn) {
  if (pattern.find('{') == std::string::npos) {
    exact_[method + " " + pattern] = std::move(fn);
    known_paths_.insert(pattern);
    return;
  }
  patterns_[method].push_back({Segments(pattern), std::move(fn)});
}

void HttpServer::Impl::Dispatch(const Request& req, Response& res) {
  if (auto it = exact_.find(req.method + " " + req.path); it != exact_.end()) return it->second(req, res, {});
  const std::vector<std::string> segs = Segments(req.path);
  if (auto pm = patterns_.find(req.method); pm != patterns_.end()) {
    for (const Pattern& p : pm->second) {
      Args args;
      bool ok = true;
      size_t i = 0;
      for (; ok && i < p.segments.size(); ++i) {
        if (p.segments[i] == "{*}") {
          std::string rest;
          for (size_t k = i; k < segs.size(); ++k) rest += (k > i ? "/" : "") + segs[k];
          ok = !rest.empty();
          args.push_back(rest);
          i = segs.size();
          break;
        }
        if (i >= segs.size() || !SegmentMatches(p.segments[i], segs[i])) ok = false;
        else if (p.segments[i].front() == '{') args.push_back(segs[i]);
      }
      if (ok && i == segs.size()) return p.fn(req, res, args);
    }
  }
  if (known_paths_.contains(req.path)) {
    return Fail(res, {405, "method_not_allowed", fmt::format("{} is not allowed on {} (see /v1/openapi.json)", req.method, req.path), ""});
  }
  Fail(res, NotFound(fmt::format("no such endpoint: {} {} (see /v1/openapi.json)", req.method, req.path)));
}

void HttpServer::Impl::Routes() {
  svr.Get("/healthz", [this](const Request&, Response& res) {
    const std::string err = d.last_error();
    auto s = d.snapshot();
    Reply(res, err.empty() ? 200 : 503,
          {{"status", err.empty() ? "ok" : "degraded"}, {"error", err}, {"schema_version", d.store().schema_version()},
           {"now", s ? s->now : 0}});
  });
  svr.Get("/metrics", [this](const Request&, Response& res) {
    auto s = d.snapshot();
    res.set_content(d.metrics().Render(s ? *s : Snapshot{}, s ? s->prices : std::vector<Price>{}, d.reconciled()),
                    "text/plain; version=0.0.4; charset=utf-8");
  });
  Add("GET", "/v1/openapi.json", [](const Request&, Response& res, const Args&) { res.set_content(OpenApiDocument(), "application/json"); });

  Add("GET", "/v1/whoami", Authed([](const Request&, Response& res, const Principal& p, const Args&) {
            Reply(res, 200, {{"id", p.token_id}, {"role", RoleName(p.role)}, {"tenant", p.tenant}, {"name", p.name}});
          }));

  // --- Jobs ---
  Add("POST", "/v1/jobs", Authed([this](const Request& req, Response& res, const Principal& p, const Args&) {
             auto body = Body(req);
             if (!body) return Fail(res, body.error());
             auto r = ParseSubmit(Fields(*body));
             if (!r) return Fail(res, r.error());
             const std::string header = req.get_header_value("Idempotency-Key");
             if (!header.empty()) {
               if (header.size() > 128) return Fail(res, BadRequest("the Idempotency-Key header has at most 128 bytes", "Idempotency-Key"));
               if (!r->idempotency_key.empty() && r->idempotency_key != header) {
                 return Fail(res, BadRequest("the Idempotency-Key header and the body's idempotency_key differ", "idempotency_key"));
               }
               r->idempotency_key = header;
             }
             auto s = d.Submit(std::move(*r), p, {.method = req.method, .path = req.path});
             if (!s) return Fail(res, s.error());
             res.set_header("Location", fmt::format("/v1/jobs/{}", s->job.id));
             Reply(res, s->created ? 201 : 200, s->job.ToJson());
           }));
  Add("GET", "/v1/jobs", Authed([this](const Request& req, Response& res, const Principal& p, const Args&) {
            if (auto ok = OnlyParams(req, {"tenant", "state", "limit", "page_token"}); !ok) return Fail(res, ok.error());
            auto limit = IntParam(req, "limit", 100, 1, 1000);
            if (!limit) return Fail(res, limit.error());
            auto before = PageToken(req);
            if (!before) return Fail(res, before.error());
            JobFilter f{.tenant = req.get_param_value("tenant"), .state = req.get_param_value("state"), .limit = *limit, .before = *before};
            auto page = d.ListJobs(f, p);
            if (!page) return Fail(res, page.error());
            const std::string next = page->next ? fmt::format("b{}.{}", page->next->submitted_at, page->next->id) : "";
            if (page->json.size() == page->jobs.size() && !page->jobs.empty()) {
              // Live lists: the snapshot's serialised jobs, joined.
              std::string body = "{\"jobs\":[";
              for (size_t i = 0; i < page->json.size(); ++i) (body += i ? "," : "") += page->json[i];
              body += "],\"next_page_token\":" + json(next).dump() + "}";
              res.status = 200;
              return res.set_content(body, "application/json");
            }
            json jobs = json::array();
            for (const JobView& v : page->jobs) jobs.push_back(v.ToJson());
            Reply(res, 200, {{"jobs", jobs}, {"next_page_token", next}});
          }));
  Add("GET", "/v1/jobs/{id}", Authed([this](const Request&, Response& res, const Principal& p, const Args& args) {
            auto v = d.GetJob(std::stoll(args[0]), p);
            if (!v) return Fail(res, v.error());
            Reply(res, 200, v->ToJson());
          }));
  auto cancel = [this](const Request& req, Response& res, const Principal& p, const Args& args) {
    auto v = d.Cancel(std::stoll(args[0]), p, {.method = req.method, .path = req.path});
    if (!v) return Fail(res, v.error());
    Reply(res, 202, v->ToJson());
  };
  Add("POST", "/v1/jobs/{id}/cancel", Authed(cancel));
  Add("DELETE", "/v1/jobs/{id}", Authed(cancel));
  Add("GET", "/v1/jobs/{id}/explain", Authed([this](const Request&, Response& res, const Principal& p, const Args& args) {
            auto e = d.Explain(std::stoll(args[0]), p);
            if (!e) return Fail(res, e.error());
            Reply(res, 200, *e);
          }));
  Add("POST", "/v1/simulate", Authed([this](const Request& req, Response& res, const Principal& p, const Args&) {
             auto body = Body(req);
             if (!body) return Fail(res, body.error());
             Fields f(*body);
             if (auto ok = f.OnlyKnown({"submit", "drain", "quota"}); !ok) return Fail(res, ok.error());
             Daemon::WhatIf change;
             auto list = f.ObjectList("submit", 64);
             if (!list) return Fail(res, list.error());
             for (const Fields& one : *list) {
               auto r = ParseSubmit(one);
               if (!r) return Fail(res, r.error());
               change.submit.push_back(std::move(*r));
             }
             auto drain = f.TextList("drain", 1024, 128);
             if (!drain) return Fail(res, drain.error());
             if (*drain) change.drain = **drain;
             auto quotas = f.ObjectList("quota", 64);
             if (!quotas) return Fail(res, quotas.error());
             for (const Fields& one : *quotas) {
               auto q = ParseQuota(one, "");
               if (!q) return Fail(res, q.error());
               change.quota.push_back(std::move(*q));
             }
             if (change.submit.empty() && change.drain.empty() && change.quota.empty()) {
               return Fail(res, BadRequest("give at least one change: jobs in 'submit', nodes in 'drain' or quotas in 'quota'", "submit"));
             }
             auto out = d.Simulate(change, p);
             if (!out) return Fail(res, out.error());
             Reply(res, 200, *out);
           }));

  // --- Tenants and the market ---
  auto tenant_json = [](const TenantView& t) { return t.ToJson(); };
  Add("GET", "/v1/tenants", Authed([this, tenant_json](const Request& req, Response& res, const Principal& p, const Args&) {
            if (auto ok = OnlyParams(req, {}); !ok) return Fail(res, ok.error());
            auto ts = d.Tenants(p);
            if (!ts) return Fail(res, ts.error());
            json out = json::array();
            for (const TenantView& t : *ts) out.push_back(tenant_json(t));
            Reply(res, 200, {{"tenants", out}});
          }));
  Add("GET", "/v1/tenants/{name}", Authed([this, tenant_json](const Request&, Response& res, const Principal& p, const Args& args) {
            auto ts = d.Tenants(p);
            if (!ts) return Fail(res, ts.error());
            for (const TenantView& t : *ts)
              if (t.name == args[0]) return Reply(res, 200, tenant_json(t));
            Fail(res, NotFound(fmt::format("no tenant '{}'", args[0])));
          }));
  Add("GET", "/v1/tenants/{name}/statement", Authed([this](const Request& req, Response& res, const Principal& p, const Args& args) {
            const std::string name = args[0];
            if (!CanRead(p, name)) return Fail(res, NotFound(fmt::format("no tenant '{}'", name)));
            if (p.role == Role::kMember || (p.role == Role::kViewer && !p.tenant.empty())) {
              return Fail(res, Forbidden("a tenant's statement is for its tenant-admin, operators and admins"));
            }
            auto limit = IntParam(req, "limit", 100, 1, 1000);
            if (!limit) return Fail(res, limit.error());
            json entries = json::array();
            if (ledger) {
              auto lines = ledger->Statement(name);
              if (!lines) return Fail(res, FromError(lines.error()));
              const size_t from = lines->size() > static_cast<size_t>(*limit) ? lines->size() - static_cast<size_t>(*limit) : 0;
              for (size_t i = from; i < lines->size(); ++i) {
                const market::StatementLine& l = (*lines)[i];
                const market::Transfer& t = l.record.transfer;
                entries.push_back({{"id", t.id},
                                   {"seq", l.record.seq},
                                   {"at", t.at_us / 1000000},
                                   {"amount", Credits(l.delta < 0 ? -l.delta : l.delta)},
                                   {"direction", l.delta < 0 ? "debit" : "credit"},
                                   {"balance_after", Credits(l.balance)},
                                   {"kind", t.code},
                                   {"counterparty", t.debit == name ? t.credit : t.debit},
                                   {"memo", t.reference}});
              }
            }
            Reply(res, 200, {{"tenant", name}, {"entries", entries}});
          }));
  Add("GET", "/v1/tenants/{name}/holds", Authed([this](const Request& req, Response& res, const Principal& p, const Args& args) {
            const std::string name = args[0];
            if (!CanRead(p, name)) return Fail(res, NotFound(fmt::format("no tenant '{}'", name)));
            if (p.role == Role::kMember || (p.role == Role::kViewer && !p.tenant.empty())) {
              return Fail(res, Forbidden("a tenant's holds are for its tenant-admin, operators and admins"));
            }
            if (auto ok = OnlyParams(req, {}); !ok) return Fail(res, ok.error());
            json holds = json::array();
            if (ledger) {
              auto open = ledger->OpenHolds();
              if (!open) return Fail(res, FromError(open.error()));
              for (const market::Hold& h : *open) {
                if (h.debit != name) continue;
                holds.push_back({{"id", h.id},
                                 {"credit", h.credit},
                                 {"amount", Credits(h.amount)},
                                 {"remaining", Credits(h.remaining)},
                                 {"state", market::HoldStateName(h.state)},
                                 {"expires_at", h.expires_us == 0 ? json() : json(h.expires_us / 1000000)}});
              }
            }
            Reply(res, 200, {{"tenant", name}, {"holds", holds}});
          }));
  Add("GET", "/v1/quote", Authed([this](const Request& req, Response& res, const Principal&, const Args&) {
            if (auto ok = OnlyParams(req, {"gpu_model", "tier", "gpus", "duration_s"}); !ok) return Fail(res, ok.error());
            const std::string model = req.get_param_value("gpu_model");
            if (model.empty()) return Fail(res, BadRequest("give the GPU model: ?gpu_model=H100", "gpu_model"));
            const std::string tier = req.has_param("tier") ? req.get_param_value("tier") : "standard";
            auto gpus = IntParam(req, "gpus", 1, 1, kMaxGpus);
            if (!gpus) return Fail(res, gpus.error());
            auto duration = IntParam(req, "duration_s", 3600, 1, kMaxRuntimeS);
            if (!duration) return Fail(res, duration.error());
            auto q = d.Quote(model, tier, *gpus, *duration);
            if (!q) return Fail(res, q.error());
            Reply(res, 200, *q);
          }));
  Add("GET", "/v1/prices", Authed([this](const Request&, Response& res, const Principal&, const Args&) {
            auto s = d.snapshot();
            json out = json::array();
            if (s)
              for (const Price& pr : s->prices)
                out.push_back({{"gpu_model", pr.gpu_model}, {"tier", pr.tier}, {"per_gpu_hour", pr.per_gpu_hour_text}});
            Reply(res, 200, {{"prices", out}});
          }));
  Add("GET", "/v1/prices/history", Authed([this](const Request& req, Response& res, const Principal&, const Args&) {
            if (auto ok = OnlyParams(req, {"gpu_model", "tier"}); !ok) return Fail(res, ok.error());
            auto tier = market::ParseTier(req.has_param("tier") ? req.get_param_value("tier") : "standard");
            if (!tier) return Fail(res, BadRequest(tier.error().message, "tier"));
            auto s = d.snapshot();
            const std::string model = req.get_param_value("gpu_model");
            json points = json::array();
            bool found = false;
            if (s) {
              for (const market::PriceHistory& h : s->price_history) {
                if (!model.empty() && h.model != model) continue;
                found = true;
                for (const market::Announcement& a : h.entries)
                  points.push_back({{"at", a.effective_from_s}, {"per_gpu_hour", Credits(a.Price(*tier))}, {"gpu_model", h.model}});
                break;
              }
            }
            if (!found && s && !s->price_history.empty()) return Fail(res, NotFound(fmt::format("no price pool for GPU model '{}'", model)));
            Reply(res, 200, {{"points", points}});
          }));

  // --- Cluster ---
  Add("GET", "/v1/cluster", Authed([this](const Request&, Response& res, const Principal&, const Args&) {
            auto s = d.snapshot();
            if (!s) return Fail(res, {503, "unavailable", "the daemon has not finished starting", ""});
            Reply(res, 200,
                  {{"now", s->now}, {"speed", s->speed}, {"nodes", s->nodes}, {"gpus", s->gpus}, {"gpus_allocated", s->gpus_allocated},
                   {"allocation_ratio", s->allocation_ratio}, {"fragmentation_ratio", s->fragmentation_ratio},
                   {"pending_jobs", s->pending}, {"running_jobs", s->running}, {"cycles", s->batches}});
          }));
  Add("GET", "/v1/cluster/nodes", Authed([this](const Request&, Response& res, const Principal&, const Args&) {
            auto s = d.snapshot();
            json out = json::array();
            if (s)
              for (const NodeView& n : s->node_views)
                out.push_back({{"name", n.name}, {"gpu_model", n.gpu_model}, {"gpus", n.gpus}, {"gpus_free", n.gpus_free},
                               {"gpus_allocated", n.gpus_allocated}, {"domains", n.domains},
                               {"drained", n.drained}, {"drain_reason", n.drained ? json(n.drain_reason) : json()}});
            Reply(res, 200, {{"nodes", out}});
          }));
  Add("GET", "/v1/cluster/topology", Authed([this](const Request&, Response& res, const Principal&, const Args&) {
            auto s = d.snapshot();
            json out = json::array();
            if (s)
              for (const DomainView& v : s->domains)
                out.push_back({{"id", v.id}, {"parent", v.parent}, {"name", v.name}, {"level", v.level}, {"gpus", v.gpus},
                               {"gpus_allocated", v.gpus_allocated}, {"gpus_fragmented", v.gpus_fragmented}});
            Reply(res, 200, {{"levels", s ? s->levels : std::vector<std::string>{}}, {"domains", out}});
          }));

  // --- Operators: drains and quotas ---
  Add("POST", "/v1/nodes/{name}/drain", Authed([this](const Request& req, Response& res, const Principal& p, const Args& args) {
             std::string reason;
             if (!req.body.empty()) {
               auto body = Body(req);
               if (!body) return Fail(res, body.error());
               auto r = ParseDrainReason(Fields(*body));
               if (!r) return Fail(res, r.error());
               reason = std::move(*r);
             }
             auto out = d.Drain(args[0], reason, p, {.method = req.method, .path = req.path});
             if (!out) return Fail(res, out.error());
             Reply(res, 200, *out);
           }));
  Add("POST", "/v1/nodes/{name}/resume", Authed([this](const Request& req, Response& res, const Principal& p, const Args& args) {
             auto out = d.Resume(args[0], p, {.method = req.method, .path = req.path});
             if (!out) return Fail(res, out.error());
             Reply(res, 200, *out);
           }));
  Add("PUT", "/v1/tenants/{name}/quota", Authed([this](const Request& req, Response& res, const Principal& p, const Args& args) {
            auto body = Body(req);
            if (!body) return Fail(res, body.error());
            auto q = ParseQuota(Fields(*body), args[0]);
            if (!q) return Fail(res, q.error());
            auto out = d.SetQuota(*q, p, {.method = req.method, .path = req.path});
            if (!out) return Fail(res, out.error());
            Reply(res, 200, *out);
          }));

  // --- Tokens and audit ---
  Add("POST", "/v1/tokens", Authed([this](const Request& req, Response& res, const Principal& p, const Args&) {
             auto body = Body(req);
             if (!body) return Fail(res, body.error());
             Fields f(*body);
             if (auto ok = f.OnlyKnown({"role", "tenant", "name"}); !ok) return Fail(res, ok.error());
             auto role_s = f.Text("role", 32);
             auto tenant = f.Text("tenant", 128);
             auto name = f.Text("name", 128);
             if (!role_s) return Fail(res, role_s.error());
             if (!tenant) return Fail(res, tenant.error());
             if (!name) return Fail(res, name.error());
             if (!*role_s) return Fail(res, BadRequest("field 'role' is required", "role"));
             auto role = ParseRole(**role_s);
             if (!role) return Fail(res, BadRequest(role.error().message, "role"));
             std::string t = tenant->value_or(p.role == Role::kTenantAdmin ? p.tenant : "");
             if (!CanCreateToken(p, *role, t)) return Fail(res, Forbidden(fmt::format("a {} token may not create {} tokens for '{}'", RoleName(p.role), RoleName(*role), t)));
             auto issued = tokens.Create(*role, t, name->value_or(""), p.token_id, Wall());
             if (!issued) return Fail(res, FromError(issued.error()));
             Status s = d.store().Write([&](store::Tx& tx) {
               return AppendAudit(tx, d.Now(), p.token_id, RoleName(p.role), req.method, req.path, 201, "token/" + issued->principal.token_id);
             });
             if (!s) spdlog::warn("serve: audit write failed: {}", s.error().message);
             Reply(res, 201, {{"id", issued->principal.token_id}, {"token", issued->token}, {"role", RoleName(*role)},
                              {"tenant", issued->principal.tenant}, {"name", issued->principal.name}});
           }));
  Add("GET", "/v1/tokens", Authed([this](const Request&, Response& res, const Principal& p, const Args&) {
            auto all = tokens.List();
            if (!all) return Fail(res, FromError(all.error()));
            json out = json::array();
            for (const TokenInfo& t : *all) {
              if (!CanManageToken(p, t.principal)) continue;
              out.push_back({{"id", t.principal.token_id}, {"role", RoleName(t.principal.role)}, {"tenant", t.principal.tenant},
                             {"name", t.principal.name}, {"created_at", t.created_at}, {"created_by", t.created_by},
                             {"revoked_at", t.revoked_at ? json(*t.revoked_at) : json()}});
            }
            Reply(res, 200, {{"tokens", out}});
          }));
  Add("DELETE", "/v1/tokens/{token}", Authed([this](const Request& req, Response& res, const Principal& p, const Args& args) {
               auto t = tokens.Get(args[0]);
               if (!t || !CanManageToken(p, t->principal)) return Fail(res, NotFound(fmt::format("no token '{}'", args[0])));
               if (Status s = tokens.Revoke(t->principal.token_id, Wall()); !s) return Fail(res, FromError(s.error()));
               Status s = d.store().Write([&](store::Tx& tx) {
                 return AppendAudit(tx, d.Now(), p.token_id, RoleName(p.role), req.method, req.path, 200, "token/" + t->principal.token_id);
               });
               if (!s) spdlog::warn("serve: audit write failed: {}", s.error().message);
               Reply(res, 200, {{"id", t->principal.token_id}, {"revoked", true}});
             }));
  Add("GET", "/v1/audit", Authed([this](const Request& req, Response& res, const Principal& p, const Args&) {
            if (!CanReadAudit(p)) return Fail(res, Forbidden("the audit log is for admins"));
            auto limit = IntParam(req, "limit", 100, 1, 1000);
            if (!limit) return Fail(res, limit.error());
            json out = json::array();
            Status s = d.store().Read([&](store::Tx& tx) -> Status {
              TIDAL_ASSIGN_OR_RETURN(store::Rows rows, tx.Query(fmt::format("SELECT seq, at, token, role, method, path, status, object "
                                                                            "FROM audit_log ORDER BY seq DESC LIMIT {}", *limit)));
              for (const store::Row& r : rows.rows) {
                json e;
                const char* names[] = {"seq", "at", "token", "role", "method", "path", "status", "object"};
                for (size_t i = 0; i < 8; ++i) {
                  if (auto v = store::AsInt(r, i)) e[names[i]] = *v;
                  else if (auto t = store::AsText(r, i)) e[names[i]] = *t;
                }
                out.push_back(std::move(e));
              }
              return Ok();
            });
            if (!s) return Fail(res, FromError(s.error()));
            Reply(res, 200, {{"entries", out}});
          }));

  // --- Reports ---
  Add("GET", "/v1/reports", Authed([this](const Request&, Response& res, const Principal&, const Args&) {
            json out = json::array();
            const std::string dir = d.config().reports_dir;
            std::error_code ec;
            if (!dir.empty() && std::filesystem::is_directory(dir, ec)) {
              std::vector<std::string> names;
              for (const auto& e : std::filesystem::directory_iterator(dir, ec))
                if (std::filesystem::exists(e.path() / "report.html", ec)) names.push_back(e.path().filename().string());
              std::sort(names.begin(), names.end());
              for (const std::string& n : names) out.push_back({{"name", n}, {"url", "/reports/" + n + "/report.html"}});
            }
            Reply(res, 200, {{"reports", out}});
          }));
  Add("GET", "/reports/{*}", Authed([this](const Request&, Response& res, const Principal&, const Args& args) {
            const std::string dir = d.config().reports_dir;
            std::error_code ec;
            if (dir.empty()) return Fail(res, NotFound("this daemon serves no reports"));
            const auto root = std::filesystem::weakly_canonical(dir, ec);
            const auto file = std::filesystem::weakly_canonical(root / args[0], ec);
            const std::string rs = root.string() + "/";
            if (ec || !file.string().starts_with(rs) || !std::filesystem::is_regular_file(file, ec)) {
              return Fail(res, NotFound(fmt::format("no report file '{}'", args[0])));
            }
            std::ifstream in(file, std::ios::binary);
            std::ostringstream ss;
            ss << in.rdbuf();
            const std::string ext = file.extension().string();
            const char* type = ext == ".html" ? "text/html; charset=utf-8"
                               : ext == ".json" ? "application/json"
                               : ext == ".svg"  ? "image/svg+xml"
                               : ext == ".png"  ? "image/png"
                                                : "text/plain; charset=utf-8";
            res.set_content(ss.str(), type);
          }));

  {
    auto d = [this](const Request& req, Response& res) { Dispatch(req, res); };
    svr.Get(R"(/v1/.*)", d);
    svr.Get(R"(/reports/.*)", d);
    svr.Post(R"(/v1/.*)", d);
    svr.Put(R"(/v1/.*)", d);
    svr.Delete(R"(/v1/.*)", d);
  }

  // --- The dashboard ---
  std::error_code ec;
  if (!o.dashboard_dir.empty() && std::filesystem::exists(std::filesystem::path(o.dashboard_dir) / "index.html", ec)) {
    svr.set_mount_point("/", o.dashboard_dir);
  } else {
    svr.Get("/", [](const Request&, Response& res) {
      res.set_content("<!doctype html><title>tidal</title><h1>tidal serve</h1><p>The dashboard is not built: run <code>npm ci "
                      "&amp;&amp; npm run build</code> in <code>web/</code> (scripts/run.sh does). The API is at <a "
                      "href=\"/v1/openapi.json\">/v1/openapi.json</a>.</p>",
                      "text/html; charset=utf-8");
    });
  }

  svr.set_error_handler([](const Request& req, Response& res) {
    if (!res.body.empty()) return;
    std::string msg = fmt::format("{} {} answers {}", req.method, req.path, res.status);
    if (res.status == 404) msg = fmt::format("no such endpoint: {} {} (see /v1/openapi.json)", req.method, req.path);
    if (res.status == 413) msg = fmt::format("the body is larger than the {} bytes accepted", kMaxBodyBytes);
    Fail(res, {res.status, DefaultCode(res.status), msg, ""});
  });
  svr.set_exception_handler([](const Request&, Response& res, std::exception_ptr ep) {
    std::string what = "unknown";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    Fail(res, {500, "internal", "internal error: " + what, ""});
  });
  svr.set_logger([this](const Request& req, const Response& res) { d.metrics().CountRequest(req.method, res.status); });
}

HttpServer::HttpServer(Daemon& daemon, TokenStore& tokens, HttpOptions options)
    : impl_(std::make_unique<Impl>(daemon, tokens, std::move(options))) {
  const int threads = std::max(4, impl_->o.threads);
  impl_->svr.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  impl_->svr.set_payload_max_length(4 * kMaxBodyBytes);
  impl_->svr.set_keep_alive_max_count(100000);
  // Headers and body go out in separate writes: without TCP_NODELAY, Nagle
  // and the client's delayed ACK add ~40 ms to every keep-alive response.
  impl_->svr.set_tcp_nodelay(true);
  // The library listens with a backlog of 5: a burst of connections (64
  // clients at once) overflows it, and each dropped SYN costs its client a
  // 1 s retransmission. Keep the listening socket to listen() on it again
  // with a real backlog once it is bound.
  impl_->svr.set_socket_options([this](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    impl_->listen_fd = sock;
  });
  impl_->svr.set_read_timeout(10, 0);
  if (auto l = market::Ledger::Open(daemon.store()); l) impl_->ledger.emplace(std::move(*l));
  impl_->Routes();
}

HttpServer::~HttpServer() { Stop(); }

Status HttpServer::Listen() {
  if (impl_->o.port == 0) {
    impl_->port = impl_->svr.bind_to_any_port(impl_->o.host);
    if (impl_->port <= 0) return MakeError(ErrorCode::kIo, "cannot listen on {} (any port)", impl_->o.host);
  } else {
    if (!impl_->svr.bind_to_port(impl_->o.host, impl_->o.port)) {
      return MakeError(ErrorCode::kIo, "cannot listen on {}:{}: the port is taken or the address is not local; pick another "
                                       "with --listen HOST:PORT", impl_->o.host, impl_->o.port);
    }
    impl_->port = impl_->o.port;
  }
  if (impl_->listen_fd >= 0) ::listen(impl_->listen_fd, 4096);
  return Ok();
}

void HttpServer::Serve() {
  impl_->serving = true;
  impl_->svr.listen_after_bind();
}
void HttpServer::Stop() {
  if (!impl_) return;
  // A Stop racing a Serve that has not reached its accept loop yet would be
  // lost (the loop would then run for ever): wait for it to run first.
  for (int i = 0; i < 400 && impl_->serving && !impl_->svr.is_running(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  impl_->svr.stop();
}
int HttpServer::port() const { return impl_->port; }

}  // namespace tidal::server

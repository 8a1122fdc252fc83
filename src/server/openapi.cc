// The OpenAPI 3 document of /v1, served at /v1/openapi.json. Built here
// from the same field lists the parsers use, so a field the server refuses
// is not one the document offers (server_http_test checks every path in it
// is routed).
#include <nlohmann/json.hpp>

#include "server/http_server.h"
#include "server/job_request.h"

namespace tidal::server {
namespace {

using json = nlohmann::json;

json Ref(const char* name) { return {{"$ref", std::string("#/components/schemas/") + name}}; }

json Op(const char* summary, const char* tag, json responses, json extra = json::object()) {
  json op = {{"summary", summary}, {"tags", {tag}}, {"responses", std::move(responses)}};
  op["responses"]["default"] = {{"description", "an error"},
                                {"content", {{"application/json", {{"schema", Ref("Error")}}}}}};
  for (auto& [k, v] : extra.items()) op[k] = v;
  return op;
}

json Ok(const char* schema, const char* code = "200") {
  return {{code, {{"description", "success"}, {"content", {{"application/json", {{"schema", Ref(schema)}}}}}}}};
}

json Body(const char* schema) {
  return {{"requestBody", {{"required", true}, {"content", {{"application/json", {{"schema", Ref(schema)}}}}}}}};
}

json Params(std::initializer_list<std::pair<const char*, const char*>> ps, const char* in = "query") {
  json out = json::array();
  for (auto [name, type] : ps)
    out.push_back({{"name", name}, {"in", in}, {"required", std::string(in) == "path"}, {"schema", {{"type", type}}}});
  return {{"parameters", out}};
}

json Build() {
  json d;
  d["openapi"] = "3.0.3";
  d["info"] = {{"title", "tidal"}, {"version", TIDAL_VERSION_STRING},
               {"description", "The tidal GPU-cluster scheduler's control plane (docs/server-api.md)."}};
  d["components"]["securitySchemes"]["bearer"] = {{"type", "http"}, {"scheme", "bearer"}, {"bearerFormat", "tidal_<id>_<secret>"}};
  d["security"] = json::array({{{"bearer", json::array()}}});
  auto& s = d["components"]["schemas"];
  s["Error"] = {{"type", "object"},
                {"required", {"error"}},
                {"properties",
                 {{"error",
                   {{"type", "object"},
                    {"required", {"code", "message"}},
                    {"properties", {{"code", {{"type", "string"}}}, {"message", {{"type", "string"}}}, {"field", {{"type", "string"}}}}}}}}}};
  s["SubmitRequest"] = {
      {"type", "object"},
      {"additionalProperties", false},
      {"required", {"estimated_runtime_s"}},
      {"properties",
       {{"name", {{"type", "string"}, {"maxLength", 128}}},
        {"tenant", {{"type", "string"}, {"maxLength", 128}}},
        {"gpus", {{"type", "integer"}, {"minimum", 1}, {"maximum", kMaxGpus}}},
        {"gpu_milli", {{"type", "integer"}, {"minimum", 1}, {"maximum", 999}}},
        {"gpu_model", {{"oneOf", {{{"type", "string"}}, {{"type", "array"}, {"items", {{"type", "string"}}}, {"maxItems", 16}}}}}},
        {"priority", {{"type", "integer"}, {"minimum", -1000}, {"maximum", 1000}}},
        {"estimated_runtime_s", {{"type", "integer"}, {"minimum", 1}, {"maximum", kMaxRuntimeS}}},
        {"runtime_s", {{"type", "integer"}, {"minimum", 1}, {"maximum", kMaxRuntimeS}}},
        {"topology",
         {{"type", "object"},
          {"additionalProperties", false},
          {"properties", {{"required", {{"type", "string"}}}, {"preferred", {{"type", "string"}}}}}}},
        {"single_node", {{"type", "boolean"}}},
        {"idempotency_key", {{"type", "string"}, {"maxLength", 128}}}}}};
  s["Job"] = {{"type", "object"},
              {"properties",
               {{"id", {{"type", "integer"}}},
                {"name", {{"type", "string"}}},
                {"tenant", {{"type", "string"}}},
                {"source", {{"type", "string"}, {"enum", {"api", "trace"}}}},
                {"state", {{"type", "string"}, {"enum", {"accepted", "pending", "running", "succeeded", "cancelled", "failed"}}}},
                {"gpus", {{"type", "integer"}}},
                {"gpu_milli", {{"type", "integer"}}},
                {"gpu_model", {{"type", "array"}, {"items", {{"type", "string"}}}}},
                {"tier", {{"type", "string"}}},
                {"priority", {{"type", "integer"}}},
                {"estimated_runtime_s", {{"type", "integer"}}},
                {"submitted_at", {{"type", "integer"}}},
                {"started_at", {{"type", "integer"}, {"nullable", true}}},
                {"ended_at", {{"type", "integer"}, {"nullable", true}}},
                {"placement", {{"type", "array"}, {"items", {{"type", "object"}}}}},
                {"preemptions", {{"type", "integer"}}},
                {"cancel_requested", {{"type", "boolean"}}},
                {"reason", {{"type", "string"}}}}}};
  s["JobList"] = {{"type", "object"},
                  {"properties", {{"jobs", {{"type", "array"}, {"items", Ref("Job")}}}, {"next_page_token", {{"type", "string"}}}}}};
  s["Explain"] = {{"type", "object"},
                  {"properties",
                   {{"job_id", {{"type", "integer"}}},
                    {"state", {{"type", "string"}}},
                    {"now", {{"type", "integer"}}},
                    {"causes", {{"type", "array"}, {"items", {{"type", "object"}}}}},
                    {"start_estimate", {{"type", "object"}, {"nullable", true}}}}}};
  auto quota = [](bool with_tenant) {
    json props = {{"resource", {{"type", "string"}, {"default", "gpu"}, {"description", "gpu, gpu/<MODEL>, cpu or memory"}}},
                  {"nominal", {{"type", "integer"}, {"minimum", 0}, {"description", "GPUs, CPU cores or MiB"}}},
                  {"borrowing_limit", {{"type", "integer"}, {"minimum", 0}, {"nullable", true}}},
                  {"lending_limit", {{"type", "integer"}, {"minimum", 0}, {"nullable", true}}}};
    json required = {"nominal"};
    if (with_tenant) {
      props["tenant"] = {{"type", "string"}, {"maxLength", 128}};
      required.push_back("tenant");
    }
    return json{{"type", "object"}, {"additionalProperties", false}, {"required", required}, {"properties", props}};
  };
  s["QuotaRequest"] = quota(false);
  s["SimulateRequest"] = {{"type", "object"},
                          {"additionalProperties", false},
                          {"properties",
                           {{"submit", {{"type", "array"}, {"items", Ref("SubmitRequest")}, {"maxItems", 64}}},
                            {"drain", {{"type", "array"}, {"items", {{"type", "string"}}}, {"maxItems", 1024}}},
                            {"quota", {{"type", "array"}, {"items", quota(true)}, {"maxItems", 64}}}}}};
  s["DrainRequest"] = {{"type", "object"},
                       {"additionalProperties", false},
                       {"properties", {{"reason", {{"type", "string"}, {"maxLength", 256}}}}}};
  for (const char* generic : {"Simulate", "TenantList", "Tenant", "Statement", "Prices", "PriceHistory", "Cluster", "Nodes",
                              "Topology", "Token", "TokenRequest", "TokenList", "Revoked", "Audit", "Reports", "WhoAmI", "Health", "Quota", "NodeState", "Holds", "Quote"})
    s[generic] = {{"type", "object"}};
  s["TokenRequest"] = {{"type", "object"},
                       {"additionalProperties", false},
                       {"required", {"role"}},
                       {"properties",
                        {{"role", {{"type", "string"}, {"enum", {"admin", "operator", "tenant-admin", "member", "viewer"}}}},
                         {"tenant", {{"type", "string"}}},
                         {"name", {{"type", "string"}}}}}};

  json& p = d["paths"];
  const json open = {{"security", json::array()}};
  p["/healthz"]["get"] = Op("Liveness and the last write's health", "ops", Ok("Health"), open);
  p["/metrics"]["get"] = Op("Prometheus metrics (text exposition)", "ops", {{"200", {{"description", "text/plain; version=0.0.4"}}}}, open);
  p["/v1/openapi.json"]["get"] = Op("This document", "ops", {{"200", {{"description", "OpenAPI 3"}}}}, open);
  p["/v1/whoami"]["get"] = Op("The token's principal", "auth", Ok("WhoAmI"));
  p["/v1/jobs"]["post"] = Op("Submit a job", "jobs", Ok("Job", "201"), Body("SubmitRequest"));
  p["/v1/jobs"]["get"] = Op("List jobs, newest first", "jobs", Ok("JobList"),
                            Params({{"tenant", "string"}, {"state", "string"}, {"limit", "integer"}, {"page_token", "string"}}));
  p["/v1/jobs/{id}"]["get"] = Op("One job", "jobs", Ok("Job"), Params({{"id", "integer"}}, "path"));
  p["/v1/jobs/{id}"]["delete"] = Op("Cancel a job", "jobs", Ok("Job", "202"), Params({{"id", "integer"}}, "path"));
  p["/v1/jobs/{id}/cancel"]["post"] = Op("Cancel a job", "jobs", Ok("Job", "202"), Params({{"id", "integer"}}, "path"));
  p["/v1/jobs/{id}/explain"]["get"] = Op("Why it waits, and its P50/P90 start estimate", "jobs", Ok("Explain"),
                                         Params({{"id", "integer"}}, "path"));
  p["/v1/simulate"]["post"] = Op("What-if: every waiting job's start with and without new jobs, drained nodes or quota changes", "jobs",
                                 Ok("Simulate"), Body("SimulateRequest"));
  p["/v1/tenants"]["get"] = Op("Tenants: floor, in use, borrowed, lent, balance", "tenants", Ok("TenantList"));
  p["/v1/tenants/{name}"]["get"] = Op("One tenant", "tenants", Ok("Tenant"), Params({{"name", "string"}}, "path"));
  p["/v1/tenants/{name}/statement"]["get"] = Op("A tenant's ledger entries", "tenants", Ok("Statement"),
                                                Params({{"name", "string"}}, "path"));
  json quota_op = Params({{"name", "string"}}, "path");
  quota_op.update(Body("QuotaRequest"));
  p["/v1/tenants/{name}/quota"]["put"] = Op("Replace a tenant's quota on one resource (admins)", "tenants", Ok("Quota"), quota_op);
  json drain_op = Params({{"name", "string"}}, "path");
  drain_op["requestBody"] = {{"required", false}, {"content", {{"application/json", {{"schema", Ref("DrainRequest")}}}}}};
  p["/v1/nodes/{name}/drain"]["post"] = Op("Drain a node: no new work, running jobs run on (operators)", "cluster", Ok("NodeState"), drain_op);
  p["/v1/nodes/{name}/resume"]["post"] = Op("Return a drained node to service (operators)", "cluster", Ok("NodeState"),
                                           Params({{"name", "string"}}, "path"));
  p["/v1/tenants/{name}/holds"]["get"] = Op("A tenant's open holds (credits reserved for running jobs)", "tenants", Ok("Holds"),
                                            Params({{"name", "string"}}, "path"));
  p["/v1/quote"]["get"] = Op("What a job would cost from now: exact where prices are announced, with an upper bound", "market", Ok("Quote"),
                             Params({{"gpu_model", "string"}, {"tier", "string"}, {"gpus", "integer"}, {"duration_s", "integer"}}));
  p["/v1/prices"]["get"] = Op("Prices in force, by GPU model and tier", "market", Ok("Prices"));
  p["/v1/prices/history"]["get"] = Op("Announced prices of one pool", "market", Ok("PriceHistory"),
                                      Params({{"gpu_model", "string"}, {"tier", "string"}}));
  p["/v1/cluster"]["get"] = Op("Allocation, fragmentation and the queue now", "cluster", Ok("Cluster"));
  p["/v1/cluster/nodes"]["get"] = Op("Nodes and their free GPUs", "cluster", Ok("Nodes"));
  p["/v1/cluster/topology"]["get"] = Op("The switch tree with occupancy", "cluster", Ok("Topology"));
  p["/v1/tokens"]["post"] = Op("Create a token (the secret is shown once)", "auth", Ok("Token", "201"), Body("TokenRequest"));
  p["/v1/tokens"]["get"] = Op("Tokens the caller may manage", "auth", Ok("TokenList"));
  p["/v1/tokens/{id}"]["delete"] = Op("Revoke a token", "auth", Ok("Revoked"), Params({{"id", "string"}}, "path"));
  p["/v1/audit"]["get"] = Op("The audit log (admins)", "auth", Ok("Audit"), Params({{"limit", "integer"}}));
  p["/v1/reports"]["get"] = Op("Simulation reports served under /reports", "reports", Ok("Reports"));
  return d;
}

}  // namespace

const std::string& OpenApiDocument() {
  static const std::string doc = Build().dump(2);
  return doc;
}

}  // namespace tidal::server

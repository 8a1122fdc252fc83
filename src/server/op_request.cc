#include "server/op_request.h"

#include <fmt/format.h>

#include "workload/job.h"

namespace tidal::server {

namespace {

nlohmann::json OptionalJson(const std::optional<int64_t>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); }

// The API's unit of a resource in its internal unit; 0 for an unknown name.
int64_t UnitOf(const std::string& resource) {
  if (resource == "gpu" || resource.starts_with("gpu/")) return kMilliPerGpu;
  if (resource == "cpu") return 1000;
  if (resource == "memory") return 1;
  return 0;
}

}  // namespace

nlohmann::json QuotaChange::ToJson() const {
  return {{"tenant", tenant},
          {"resource", resource},
          {"nominal", nominal},
          {"borrowing_limit", OptionalJson(borrowing_limit)},
          {"lending_limit", OptionalJson(lending_limit)}};
}

Result<QuotaChange> QuotaChange::FromJson(const nlohmann::json& j) {
  QuotaChange q;
  try {
    q.tenant = j.at("tenant").get<std::string>();
    q.resource = j.at("resource").get<std::string>();
    q.nominal = j.at("nominal").get<int64_t>();
    if (!j.at("borrowing_limit").is_null()) q.borrowing_limit = j.at("borrowing_limit").get<int64_t>();
    if (!j.at("lending_limit").is_null()) q.lending_limit = j.at("lending_limit").get<int64_t>();
  } catch (const nlohmann::json::exception& e) {
    return MakeError(ErrorCode::kParse, "a stored quota change is malformed ({}): {}", e.what(), j.dump());
  }
  return q;
}

ApiResult<QuotaChange> ParseQuota(const Fields& f, const std::string& tenant) {
  if (tenant.empty()) {
    if (auto ok = f.OnlyKnown({"tenant", "resource", "nominal", "borrowing_limit", "lending_limit"}); !ok) return std::unexpected(ok.error());
  } else {
    if (auto ok = f.OnlyKnown({"resource", "nominal", "borrowing_limit", "lending_limit"}); !ok) return std::unexpected(ok.error());
  }
  QuotaChange q;
  q.tenant = tenant;
  if (tenant.empty()) {
    auto t = f.Text("tenant", 128);
    if (!t) return std::unexpected(t.error());
    if (!*t || (*t)->empty()) return std::unexpected(BadRequest(fmt::format("field '{}' is required", f.Name("tenant")), f.Name("tenant")));
    q.tenant = **t;
  }
  auto r = f.Text("resource", 128);
  if (!r) return std::unexpected(r.error());
  q.resource = r->value_or("gpu");
  const int64_t unit = UnitOf(q.resource);
  if (unit == 0) {
    return std::unexpected(BadRequest(fmt::format("field '{}': resource '{}' is not a quota resource; give gpu, gpu/<MODEL>, cpu or memory",
                                                  f.Name("resource"), q.resource),
                                      f.Name("resource")));
  }
  // Whole API units, below 2^50 internal units (the tenant tree's bound).
  const int64_t most = ((int64_t{1} << 50) - 1) / unit;
  auto nominal = f.Int("nominal", 0, most);
  if (!nominal) return std::unexpected(nominal.error());
  if (!*nominal) return std::unexpected(BadRequest(fmt::format("field '{}' is required", f.Name("nominal")), f.Name("nominal")));
  q.nominal = **nominal * unit;
  auto borrowing = f.Int("borrowing_limit", 0, most);
  if (!borrowing) return std::unexpected(borrowing.error());
  if (*borrowing) q.borrowing_limit = **borrowing * unit;
  auto lending = f.Int("lending_limit", 0, most);
  if (!lending) return std::unexpected(lending.error());
  if (*lending) q.lending_limit = **lending * unit;
  return q;
}

ApiResult<std::string> ParseDrainReason(const Fields& f) {
  if (auto ok = f.OnlyKnown({"reason"}); !ok) return std::unexpected(ok.error());
  auto r = f.Text("reason", 256);
  if (!r) return std::unexpected(r.error());
  return r->value_or("");
}

}  // namespace tidal::server

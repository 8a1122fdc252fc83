// Operators' and admins' request bodies besides jobs: a quota change
// (PUT /v1/tenants/{name}/quota and POST /v1/simulate's "quota") and a drain
// (POST /v1/nodes/{name}/drain). Parsed strictly like a submission (unknown
// fields, wrong types and out-of-range numbers are 400s naming the field).
// Network-facing: covered by request_fuzz.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "server/api_error.h"
#include "server/json_body.h"

namespace tidal::server {

// A tenant's quota on one resource, in the resource's internal unit
// (milli-GPU for "gpu" and "gpu/<MODEL>", milli-CPU for "cpu", MiB for
// "memory"). The whole quota is replaced: a limit left out means none.
struct QuotaChange {
  std::string tenant, resource;
  int64_t nominal = 0;
  std::optional<int64_t> borrowing_limit, lending_limit;
  // The canonical form (what daemon_inputs keeps), and back.
  nlohmann::json ToJson() const;
  static Result<QuotaChange> FromJson(const nlohmann::json& j);
};

// {"resource": "gpu", "nominal": 96, "borrowing_limit": 32, "lending_limit": 8}
// with amounts in the API's units: GPUs for GPU resources, CPU cores for
// "cpu", MiB for "memory" (whole numbers). `tenant` comes from the path, or,
// when empty, from a "tenant" field (the what-if's list).
ApiResult<QuotaChange> ParseQuota(const Fields& f, const std::string& tenant);

// The drain body: {"reason": "..."} (optional; at most 256 bytes).
ApiResult<std::string> ParseDrainReason(const Fields& f);

}  // namespace tidal::server

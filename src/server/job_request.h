// A job submission as the API takes it (POST /v1/jobs, and each entry of
// POST /v1/simulate's "submit"): parsed strictly, checked field by field,
// and turned into the scheduler's Job. The canonical JSON of a request is
// what the store keeps and what an idempotency key is compared on.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/json_body.h"
#include "topology/level.h"
#include "workload/job.h"

namespace tidal::server {

struct SubmitRequest {
  std::string name;
  std::string tenant;        // "" = the token's own tenant
  int32_t gpus = 0;          // whole GPUs (0 with gpu_milli set)
  int32_t gpu_milli = 0;     // one shared GPU's share, 1..999 (0 = whole GPUs)
  std::vector<std::string> gpu_model;  // allowed models, empty = any
  int32_t priority = 0;
  int64_t estimated_runtime_s = 0;
  int64_t runtime_s = 0;     // the simulated cluster's true run time (0 = the estimate)
  std::optional<topo::Level> topo_required, topo_preferred;
  std::optional<bool> single_node;
  std::string idempotency_key;

  // Canonical JSON: every field, in a fixed order, tenant resolved.
  nlohmann::json ToJson() const;
};

inline constexpr int64_t kMaxGpus = 100000;
inline constexpr int64_t kMaxRuntimeS = 365 * 86400;

// Parses one submission object. Unknown fields, wrong types and values out
// of range are errors naming the field.
ApiResult<SubmitRequest> ParseSubmit(const Fields& f);
// The same from a body (POST /v1/jobs).
ApiResult<SubmitRequest> ParseSubmitBody(std::string_view body);

// The scheduler's job: `id`, submitted at `submit_s`, with `largest_host_gpus`
// deciding single_node when the request leaves it open (a request that fits
// one host is a pod; a larger one a gang).
Job ToJob(const SubmitRequest& r, JobId id, int64_t submit_s, int32_t largest_host_gpus);

}  // namespace tidal::server

#include "server/job_request.h"

#include <fmt/format.h>

namespace tidal::server {
namespace {

ApiResult<std::optional<topo::Level>> LevelField(const Fields& f, std::string_view key) {
  auto t = f.Text(key, 32);
  if (!t) return std::unexpected(t.error());
  if (!*t) return std::optional<topo::Level>();
  auto l = topo::ParseLevel(**t);
  const std::string name = f.Name(key);
  if (!l || *l == topo::Level::kGpu) {
    return std::unexpected(BadRequest(
        fmt::format("field '{}' is '{}'; give one of nvlink, host, block, leaf, spine, core, zone", name, **t), name));
  }
  return std::optional<topo::Level>(*l);
}

}  // namespace

nlohmann::json SubmitRequest::ToJson() const {
  nlohmann::json j = nlohmann::json::object();
  j["name"] = name;
  j["tenant"] = tenant;
  // Only the fields that are set, so the form parses back (ParseSubmit).
  if (gpu_milli > 0) j["gpu_milli"] = gpu_milli;
  else j["gpus"] = gpus;
  j["gpu_model"] = gpu_model;
  j["priority"] = priority;
  j["estimated_runtime_s"] = estimated_runtime_s;
  j["runtime_s"] = runtime_s > 0 ? nlohmann::json(runtime_s) : nlohmann::json();
  nlohmann::json t = nlohmann::json::object();
  if (topo_required) t["required"] = std::string(topo::LevelName(*topo_required));
  if (topo_preferred) t["preferred"] = std::string(topo::LevelName(*topo_preferred));
  j["topology"] = t;
  j["single_node"] = single_node ? nlohmann::json(*single_node) : nlohmann::json();
  j["idempotency_key"] = idempotency_key;
  return j;
}

ApiResult<SubmitRequest> ParseSubmit(const Fields& f) {
#define TIDAL_API_TRY(var, expr)                      \
  auto var = (expr);                                  \
  if (!var) return std::unexpected(var.error());
  TIDAL_API_TRY(known, f.OnlyKnown({"name", "tenant", "gpus", "gpu_milli", "gpu_model", "priority", "estimated_runtime_s",
                                    "runtime_s", "topology", "single_node", "idempotency_key"}));
  SubmitRequest r;
  TIDAL_API_TRY(name, f.Text("name", 128));
  TIDAL_API_TRY(tenant, f.Text("tenant", 128));
  TIDAL_API_TRY(gpus, f.Int("gpus", 1, kMaxGpus));
  TIDAL_API_TRY(milli, f.Int("gpu_milli", 1, kMilliPerGpu - 1));
  TIDAL_API_TRY(models, f.TextList("gpu_model", 16, 64));
  TIDAL_API_TRY(priority, f.Int("priority", -1000, 1000));
  TIDAL_API_TRY(estimate, f.Int("estimated_runtime_s", 1, kMaxRuntimeS));
  TIDAL_API_TRY(runtime, f.Int("runtime_s", 1, kMaxRuntimeS));
  TIDAL_API_TRY(topology, f.Object("topology"));
  TIDAL_API_TRY(single, f.Bool("single_node"));
  TIDAL_API_TRY(key, f.Text("idempotency_key", 128));
  if (*gpus && *milli) {
    return std::unexpected(BadRequest("give either 'gpus' (whole GPUs) or 'gpu_milli' (a share of one GPU), not both", "gpu_milli"));
  }
  if (!*gpus && !*milli) {
    return std::unexpected(BadRequest("field 'gpus' is required: the number of whole GPUs (or 'gpu_milli' for a share of one)", "gpus"));
  }
  if (!*estimate) {
    return std::unexpected(BadRequest("field 'estimated_runtime_s' is required: how long the job may run, in seconds", "estimated_runtime_s"));
  }
  if (*runtime && **runtime > **estimate) {
    return std::unexpected(BadRequest(
        fmt::format("field 'runtime_s' ({}) exceeds 'estimated_runtime_s' ({}); the estimate is the job's time limit", **runtime, **estimate),
        "runtime_s"));
  }
  r.name = name->value_or("");
  r.tenant = tenant->value_or("");
  r.gpus = static_cast<int32_t>(gpus->value_or(0));
  r.gpu_milli = static_cast<int32_t>(milli->value_or(0));
  r.gpu_model = models->value_or(std::vector<std::string>{});
  r.priority = static_cast<int32_t>(priority->value_or(0));
  r.estimated_runtime_s = **estimate;
  r.runtime_s = runtime->value_or(0);
  if (*topology) {
    TIDAL_API_TRY(tk, (*topology)->OnlyKnown({"required", "preferred"}));
    TIDAL_API_TRY(req, LevelField(**topology, "required"));
    TIDAL_API_TRY(pref, LevelField(**topology, "preferred"));
    r.topo_required = *req;
    r.topo_preferred = *pref;
  }
  r.single_node = *single;
  if (r.gpu_milli > 0 && r.single_node == false) {
    return std::unexpected(BadRequest("a job on a share of one GPU ('gpu_milli') is a single-node job; drop 'single_node'", "single_node"));
  }
  r.idempotency_key = key->value_or("");
#undef TIDAL_API_TRY
  return r;
}

ApiResult<SubmitRequest> ParseSubmitBody(std::string_view body) {
  auto j = ParseObject(body);
  if (!j) return std::unexpected(j.error());
  return ParseSubmit(Fields(*j));
}

Job ToJob(const SubmitRequest& r, JobId id, int64_t submit_s, int32_t largest_host_gpus) {
  Job j;
  j.id = id;
  j.name = r.name.empty() ? fmt::format("job-{}", id) : r.name;
  j.group = r.tenant;
  j.num_gpu = r.gpu_milli > 0 ? 1 : r.gpus;
  j.gpu_milli = r.gpu_milli > 0 ? r.gpu_milli : kMilliPerGpu;
  j.gpu_spec = r.gpu_model;
  j.priority = r.priority;
  j.submit_time_s = submit_s;
  j.estimate_s = r.estimated_runtime_s;
  j.duration_s = r.runtime_s > 0 ? r.runtime_s : r.estimated_runtime_s;
  j.single_node = r.single_node.value_or(j.num_gpu <= largest_host_gpus);
  j.topo_required = r.topo_required;
  j.topo_preferred = r.topo_preferred;
  j.source = fmt::format("api job {}", id);
  return j;
}

}  // namespace tidal::server

// The body of the request-parser fuzz target (request_fuzz.cc, libFuzzer),
// shared with a unit test that runs it over tricky inputs under g++ in CI.
// One input is tried as the body of POST /v1/jobs, POST /v1/simulate (its
// jobs and its quota changes), PUT /v1/tenants/{name}/quota and POST
// /v1/nodes/{name}/drain.
// Checks: parsing never crashes; every refusal is a 4xx with a message; an
// accepted submission is in range and its canonical form parses back to
// itself (what a restart relies on).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "server/job_request.h"
#include "server/json_body.h"
#include "server/op_request.h"

namespace tidal::server {

inline void RequestFuzzCheck(bool ok, const char* what, std::string_view input) {
  if (ok) return;
  std::fprintf(stderr, "request fuzz: %s fails for input of %zu bytes: '%.*s'\n", what, input.size(),
               static_cast<int>(input.size() > 400 ? 400 : input.size()), input.data());
  std::abort();
}

inline void CheckSubmission(const ApiResult<SubmitRequest>& r, std::string_view input) {
  if (!r) {
    RequestFuzzCheck(r.error().status >= 400 && r.error().status < 500, "refusals are 4xx", input);
    RequestFuzzCheck(!r.error().message.empty(), "refusals have a message", input);
    return;
  }
  RequestFuzzCheck((r->gpus >= 1 && r->gpus <= kMaxGpus && r->gpu_milli == 0) || (r->gpus == 0 && r->gpu_milli >= 1 && r->gpu_milli < 1000),
                   "GPUs in range", input);
  RequestFuzzCheck(r->estimated_runtime_s >= 1 && r->estimated_runtime_s <= kMaxRuntimeS, "estimate in range", input);
  RequestFuzzCheck(r->runtime_s >= 0 && r->runtime_s <= r->estimated_runtime_s, "run time within the estimate", input);
  auto again = ParseSubmitBody(r->ToJson().dump());
  RequestFuzzCheck(again.has_value(), "the canonical form parses", input);
  RequestFuzzCheck(again->ToJson() == r->ToJson(), "the canonical form parses back to itself", input);
}

inline void CheckQuota(const ApiResult<QuotaChange>& q, std::string_view input) {
  if (!q) {
    RequestFuzzCheck(q.error().status >= 400 && q.error().status < 500, "refusals are 4xx", input);
    RequestFuzzCheck(!q.error().message.empty(), "refusals have a message", input);
    return;
  }
  constexpr int64_t kMax = int64_t{1} << 50;
  RequestFuzzCheck(!q->tenant.empty(), "a quota change names its tenant", input);
  RequestFuzzCheck(q->nominal >= 0 && q->nominal < kMax, "nominal in range", input);
  RequestFuzzCheck(!q->borrowing_limit || (*q->borrowing_limit >= 0 && *q->borrowing_limit < kMax), "borrowing limit in range", input);
  RequestFuzzCheck(!q->lending_limit || (*q->lending_limit >= 0 && *q->lending_limit < kMax), "lending limit in range", input);
  auto again = QuotaChange::FromJson(q->ToJson());
  RequestFuzzCheck(again.has_value(), "the canonical quota parses", input);
  RequestFuzzCheck(again->ToJson() == q->ToJson(), "the canonical quota parses back to itself", input);
}

inline void FuzzRequest(std::string_view input) {
  CheckSubmission(ParseSubmitBody(input), input);
  auto body = ParseObject(input);
  if (!body) {
    RequestFuzzCheck(body.error().status >= 400 && body.error().status < 500, "refusals are 4xx", input);
    return;
  }
  Fields f(*body);
  CheckQuota(ParseQuota(f, "t"), input);
  if (auto reason = ParseDrainReason(f); !reason) {
    RequestFuzzCheck(reason.error().status >= 400 && reason.error().status < 500, "refusals are 4xx", input);
  } else {
    RequestFuzzCheck(reason->size() <= 256, "a drain reason within 256 bytes", input);
  }
  if (auto quotas = f.ObjectList("quota", 64); quotas) {
    for (const Fields& one : *quotas) CheckQuota(ParseQuota(one, ""), input);
  }
  auto list = f.ObjectList("submit", 64);
  if (!list) return;
  for (const Fields& one : *list) CheckSubmission(ParseSubmit(one), input);
}

}  // namespace tidal::server

-- wrk script: durable job submissions (POST /v1/jobs), 1 GPU, 10 min estimate,
-- to the tenant in $TIDAL_TENANT with the token in $TIDAL_TOKEN.
wrk.method = "POST"
wrk.path = "/v1/jobs"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("TIDAL_TOKEN")
wrk.body = '{"tenant": "' .. os.getenv("TIDAL_TENANT") .. '", "gpus": 1, "estimated_runtime_s": 600}'
local statuses = {}
response = function(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
end
done = function(summary, latency, requests)
  io.write("statuses:")
  for s, n in pairs(statuses) do io.write(string.format(" %d=%d", s, n)) end
  io.write("\n")
end

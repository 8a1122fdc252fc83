-- wrk script: API reads with the token in $TIDAL_TOKEN, cycling over the paths
-- a dashboard and a CLI call most (the cluster summary, one job, the pending
-- list's first page, the tenants).
wrk.headers["Authorization"] = "Bearer " .. os.getenv("TIDAL_TOKEN")
local paths = {"/v1/cluster", "/v1/jobs/" .. os.getenv("TIDAL_JOB"), "/v1/tenants", "/v1/jobs?state=running&limit=20"}
local i = 0
request = function()
  i = i + 1
  return wrk.format("GET", paths[(i % #paths) + 1])
end
-- $TIDAL_DELAY_MS > 0 paces each connection (a pause before each request,
-- not counted in the latency): 64 connections at 4 ms give ~11k requests/s,
-- the load the target names, instead of as many as the machine can take.
local pause = tonumber(os.getenv("TIDAL_DELAY_MS") or "0")
if pause > 0 then
  delay = function() return pause end
end
local bad = 0
response = function(status, headers, body)
  if status ~= 200 then bad = bad + 1 end
end
done = function(summary, latency, requests)
  io.write(string.format("non-200: %d\n", bad))
end

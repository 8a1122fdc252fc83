#include "watch/gpu_watch.h"

#include <httplib.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "telemetry/mfu.h"

namespace tidal::watch {
namespace {


std::string WorkloadKey(const telemetry::DcgmSample& s) {
  auto pod = s.labels.find("pod");
  if (pod != s.labels.end() && !pod->second.empty()) {
    auto ns = s.labels.find("namespace");
    return (ns != s.labels.end() ? ns->second : std::string("default")) + "/" + pod->second;
  }
  return s.GpuKey();
}

double Max(double a, double b) {
  if (std::isnan(a)) return b;
  if (std::isnan(b)) return a;
  return std::max(a, b);
}

}  // namespace

std::vector<WorkloadActivity> Workloads(const std::vector<telemetry::DcgmSample>& samples) {
  std::map<std::string, std::vector<telemetry::DcgmSample>> by_key;
  for (const telemetry::DcgmSample& s : samples) by_key[WorkloadKey(s)].push_back(s);
  std::vector<WorkloadActivity> out;
  for (auto& [key, mine] : by_key) {
    WorkloadActivity w;
    w.key = key;
    std::map<std::string, bool> devices;
    for (const telemetry::DcgmSample& s : mine) {
      devices[s.GpuKey()] = true;
      if (w.model.empty()) {
        if (auto m = s.labels.find("modelName"); m != s.labels.end()) w.model = m->second;
      }
      if (!s.value) continue;
      const double v = *s.value;
      if (s.metric == "DCGM_FI_PROF_GR_ENGINE_ACTIVE") w.busiest.gr_engine_active = Max(w.busiest.gr_engine_active, v);
      if (s.metric == "DCGM_FI_DEV_GPU_UTIL") w.busiest.gpu_util = Max(w.busiest.gpu_util, v / 100.0);
      if (s.metric == "DCGM_FI_DEV_POWER_USAGE") w.busiest.power_w = Max(w.busiest.power_w, v);
    }
    w.devices = static_cast<int>(devices.size());
    if (auto t = telemetry::Summarize(mine, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE")) w.tensor_active = t->mean;
    telemetry::MfuInputs in;
    in.dcgm = mine;
    in.gpus = w.devices;
    if (auto r = telemetry::EstimateMfu(in); r && r->mfu) w.mfu = r->mfu->value;
    out.push_back(std::move(w));
  }
  return out;
}

Result<std::vector<WatchEvent>> GpuWatch::Observe(int64_t now_s, const std::vector<telemetry::DcgmSample>& samples) {
  std::vector<WatchEvent> events;
  for (const WorkloadActivity& w : Workloads(samples)) {
    auto it = detectors_.find(w.key);
    if (it == detectors_.end()) {
      TIDAL_ASSIGN_OR_RETURN(market::ZombieDetector d, market::ZombieDetector::Make(config_, int64_t{1000} * std::max(w.devices, 1)));
      it = detectors_.emplace(w.key, std::move(d)).first;
    }
    if (it->second.state() == market::ZombieState::kReclaimed) continue;
    auto actions = it->second.Sample(now_s, w.busiest);
    if (!actions) return MakeError(actions.error().code, "workload {}: {}", w.key, actions.error().message);
    for (const market::HoardAction& a : *actions) {
      events.push_back({.workload = w.key, .action = a, .state = it->second.state()});
    }
  }
  return events;
}

Result<std::string> Scrape(const std::string& url, int timeout_s) {
  const std::string scheme = "http://";
  if (url.rfind(scheme, 0) != 0) {
    return MakeError(ErrorCode::kInvalidArgument, "DCGM exporter '{}': give its http:// URL (e.g. http://node:9400/metrics)", url);
  }
  const auto slash = url.find('/', scheme.size());
  const std::string base = url.substr(0, slash);
  const std::string path = slash == std::string::npos ? "/metrics" : url.substr(slash);
  httplib::Client c(base);
  c.set_connection_timeout(timeout_s, 0);
  c.set_read_timeout(timeout_s, 0);
  auto r = c.Get(path.c_str());
  if (!r) return MakeError(ErrorCode::kIo, "scraping {}: {}", url, httplib::to_string(r.error()));
  if (r->status != 200) return MakeError(ErrorCode::kIo, "scraping {}: HTTP {}", url, r->status);
  return r->body;
}

}  // namespace tidal::watch

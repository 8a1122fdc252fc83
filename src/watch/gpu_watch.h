// Live GPU activity per workload from DCGM-exporter scrapes, fed to the
// market's hoarding ("zombie") detector and to the MFU estimator.
//
// A workload is what the exporter's Kubernetes labels name (namespace/pod,
// with its containers' GPUs together), else one device (host/gpu[/MIG id]).
// For each scrape a workload's activity is its busiest device's (one busy
// GPU means the allocation is in use: market/hoarding.h): the largest
// GR_ENGINE_ACTIVE, GPU_UTIL and power. Each workload gets a ZombieDetector
// the first time it is seen; its notify / fee / reclaim / recovered actions
// come out as events. The MFU estimate of a workload comes from its own
// devices' samples (telemetry/mfu.h: tensor-pipe activity times the GPU's
// peak, when the model name gives one).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "market/hoarding.h"
#include "telemetry/dcgm.h"

namespace tidal::watch {

struct WorkloadActivity {
  std::string key;       // "namespace/pod", or "host/gpu" for a device no pod holds
  int devices = 0;
  std::string model;     // the exporter's modelName
  market::ActivitySample busiest;  // max over devices (NaN where no device reports)
  std::optional<double> tensor_active;  // mean over devices, 0..1
  std::optional<double> mfu;            // estimated, where the GPU's peak is known
};

// Groups one scrape's samples by workload, keys in order.
std::vector<WorkloadActivity> Workloads(const std::vector<telemetry::DcgmSample>& samples);

struct WatchEvent {
  std::string workload;
  market::HoardAction action;  // its kind and the time of the sample that produced it
  market::ZombieState state = market::ZombieState::kActive;  // the detector's state after it
};

class GpuWatch {
 public:
  explicit GpuWatch(market::HoardingConfig config) : config_(config) {}
  // One scrape at `now_s` (not before the previous one). Workloads missing
  // from a scrape get no sample (a gap: market/hoarding.h's rules apply).
  Result<std::vector<WatchEvent>> Observe(int64_t now_s, const std::vector<telemetry::DcgmSample>& samples);
  const std::map<std::string, market::ZombieDetector>& detectors() const { return detectors_; }

 private:
  market::HoardingConfig config_;
  std::map<std::string, market::ZombieDetector> detectors_;
};

// GET `url` (http://host:port/metrics) and return the body; errors name the URL.
Result<std::string> Scrape(const std::string& url, int timeout_s = 10);

}  // namespace tidal::watch

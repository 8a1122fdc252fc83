// Inference services: what a fleet serves (model, replica shape, demand trace,
// headroom, SLO) and how many replicas a demand needs. Read from a services
// YAML file that names the goodput table to resolve each service's goodput:
//
//   version: 1
//   goodput: data/inference/goodput.yaml        # relative to base_dir
//   services:
//     - name: code
//       model: llama-3.1-8b
//       shape: gpu
//       trace: {format: azure2024, path: traces/inference/azure-llm-2024-week/azure2024_code_1week_per_minute.csv,
//               scale_to_peak_rps: 120}         # optional; the trace's own rates otherwise
//       headroom: 0.1                           # optional, default 0.1
//       min_replicas: 1                         # optional, default 1
//       slo: "p90 TTFT 2 s, p90 TPOT 100 ms"
//       goodput_rps: 25                         # optional: overrides the table's row
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "inference/demand.h"

namespace tidal::inference {

struct Service {
  std::string name;
  std::string model;
  std::string shape;
  double goodput_rps = 0;        // one replica, within the SLO
  double gpus_per_replica = 1;   // the shape's GPU cost (MIG: compute slices / 7)
  double headroom = 0.1;
  int min_replicas = 1;
  std::string slo;               // e.g. "p90 TTFT 2 s, p90 TPOT 100 ms"
  std::string goodput_source;    // where goodput_rps came from
  DemandSeries demand;
};

// ceil(demand x (1 + headroom) / goodput), at least min_replicas. A quotient
// within 1e-9 (relative) of a whole number counts as that number, so an exact
// multiple is not rounded up by floating-point noise. A demand that is not
// positive (or NaN) needs min_replicas; a goodput that is not positive can
// serve nothing and returns INT_MAX, as does a need beyond INT_MAX.
int ReplicasNeeded(double demand_rps, double goodput_rps, double headroom, int min_replicas = 0);

// Replicas a service needs for a demand.
inline int ReplicasNeeded(const Service& s, double demand_rps) {
  return ReplicasNeeded(demand_rps, s.goodput_rps, s.headroom, s.min_replicas);
}

// Reads the services file; trace and goodput paths that are not absolute are
// relative to base_dir.
Result<std::vector<Service>> ReadServicesFile(const std::string& path, const std::string& base_dir);
Result<std::vector<Service>> ParseServicesYaml(const std::string& text, const std::string& source,
                                               const std::string& base_dir);

}  // namespace tidal::inference

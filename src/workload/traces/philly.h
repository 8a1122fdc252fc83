// Readers for Microsoft Philly (Jeon et al., ATC'19) as preprocessed by Pollux
// (OSDI'21): jobs "timestamp,duration,num_gpus,gpu_time,cluster" with
// timestamps "YYYY-MM-DD HH:MM:SS" (UTC), and the machine list
// "machineId, number of GPUs, single GPU mem".
// Submit times are made relative to the earliest job so replays start at 0.
#pragma once

#include <string>
#include <vector>

#include "cluster/cluster_state.h"
#include "common/result.h"
#include "workload/job.h"

namespace tidal::traces {

struct PhillyJobs {
  std::vector<Job> jobs;     // in file order; submit_time_s relative to epoch_s
  int64_t epoch_s = 0;       // Unix time of the earliest submission
};

Result<PhillyJobs> ReadPhillyJobs(const std::string& path);
// Machines become nodes with `gpu_model` (Philly's are 12 GB and 24 GB cards
// of undisclosed model; the reader names them "P100-12GB"/"P40-24GB"-style by
// memory: "GPU-<mem>"). CPU and memory are not in the file and are left 0,
// which jobs that ask for none satisfy.
Result<std::vector<NodeSpec>> ReadPhillyMachines(const std::string& path);

// Parses "YYYY-MM-DD HH:MM:SS" as UTC seconds since the Unix epoch.
Result<int64_t> ParseUtcTimestamp(std::string_view text);

}  // namespace tidal::traces

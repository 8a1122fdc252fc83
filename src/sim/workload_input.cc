#include "sim/workload_input.h"

#include <algorithm>
#include <cmath>
#include <fstream>

#include "workload/traces/openb.h"
#include "workload/traces/philly.h"

namespace tidal::sim {

Result<std::string> DetectJobFormat(const std::string& path) {
  std::ifstream in(path);
  if (!in) return MakeError(ErrorCode::kIo, "cannot open job file '{}'; check the path", path);
  std::string header;
  std::getline(in, header);
  if (header.find("timestamp") != std::string::npos && header.find("num_gpus") != std::string::npos)
    return std::string("philly");
  if (header.find("cpu_milli") != std::string::npos && header.find("gpu_milli") != std::string::npos) {
    if (header.find("creation_time") == std::string::npos || header.find("deletion_time") == std::string::npos) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "{}:1: this openb pod list has no creation_time/deletion_time columns (the multigpu* "
                       "lists have none), so jobs have no arrival or run time; use a time-stamped list such "
                       "as openb_pod_list_default.csv",
                       path);
    }
    return std::string("openb");
  }
  return MakeError(ErrorCode::kInvalidArgument,
                   "{}:1: cannot tell the trace format from the header '{}'; pass --format philly or --format openb",
                   path, header);
}

Result<std::vector<NodeSpec>> NodesFromTopology(const topo::Topology& t) {
  std::vector<NodeSpec> nodes;
  nodes.reserve(static_cast<size_t>(t.num_hosts()));
  for (int32_t h = 0; h < t.num_hosts(); ++h) {
    const topo::HostLayout& L = t.layout(h);
    const std::string& name = t.domain(t.host(h)).name;
    if (L.gpus < 0) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "{}: host '{}' has no GPU count in the topology, so it cannot stand in for a node list; pass "
                       "--nodes",
                       t.source(), name);
    }
    NodeSpec n;
    n.name = name;
    n.gpu_count = L.gpus;
    n.gpu_model = L.gpus > 0 ? (L.gpu_model.empty() ? std::string("gpu") : L.gpu_model) : std::string();
    nodes.push_back(std::move(n));
  }
  return nodes;
}

Result<Workload> LoadWorkload(const std::string& nodes_path, const std::string& jobs_path, std::string format,
                              const topo::Topology* topology) {
  if (format == "auto") {
    TIDAL_ASSIGN_OR_RETURN(format, DetectJobFormat(jobs_path));
  }
  Workload w;
  w.format = format;
  if (format == "philly") {
    if (!nodes_path.empty()) {
      TIDAL_ASSIGN_OR_RETURN(w.nodes, traces::ReadPhillyMachines(nodes_path));
    }
    TIDAL_ASSIGN_OR_RETURN(auto p, traces::ReadPhillyJobs(jobs_path));
    w.jobs = std::move(p.jobs);
  } else if (format == "openb") {
    if (!nodes_path.empty()) {
      TIDAL_ASSIGN_OR_RETURN(w.nodes, traces::ReadOpenbNodes(nodes_path));
    }
    TIDAL_ASSIGN_OR_RETURN(w.jobs, traces::ReadOpenbPods(jobs_path));
  } else {
    return MakeError(ErrorCode::kInvalidArgument, "unknown --format '{}'; use philly, openb or auto", format);
  }
  if (nodes_path.empty()) {
    if (topology == nullptr) return MakeError(ErrorCode::kInvalidArgument, "no node list: give --nodes FILE (or a --topology with GPU counts)");
    TIDAL_ASSIGN_OR_RETURN(w.nodes, NodesFromTopology(*topology));
  }
  return w;
}

Result<ArrivalScale> ScaleArrivals(std::vector<Job>& jobs, int64_t total_gpus, double load, double time_scale) {
  if (load > 0 && time_scale > 0 && time_scale != 1) return MakeError(ErrorCode::kInvalidArgument, "give --load or --time-scale, not both");
  if (load < 0 || load > 100 || time_scale < 0 || time_scale > 1e6)
    return MakeError(ErrorCode::kInvalidArgument, "--load must be in (0, 100] and --time-scale in (0, 1e6]");
  ArrivalScale r;
  if (jobs.empty() || total_gpus <= 0) return r;
  const int64_t t0 = *jobs.front().submit_time_s;
  int64_t t1 = t0;
  double gpu_seconds = 0;
  for (const Job& j : jobs) {
    t1 = std::max(t1, *j.submit_time_s);
    gpu_seconds += static_cast<double>(j.TotalGpuMilli()) / kMilliPerGpu * static_cast<double>(*j.duration_s);
  }
  const double span = static_cast<double>(std::max<int64_t>(1, t1 - t0));
  r.native_load = gpu_seconds / (static_cast<double>(total_gpus) * span);
  double k = time_scale > 0 ? time_scale : 1;
  if (load > 0) {
    if (r.native_load <= 0) return MakeError(ErrorCode::kInvalidArgument, "--load: the workload asks for no GPU time");
    k = load / r.native_load;
  }
  r.factor = k;
  if (k != 1) {
    for (Job& j : jobs) j.submit_time_s = t0 + static_cast<int64_t>(std::floor(static_cast<double>(*j.submit_time_s - t0) / k));
  }
  r.offered_load = r.native_load * k;
  return r;
}

}  // namespace tidal::sim

#include "server/metrics.h"

#include <algorithm>

#include <fmt/format.h>

namespace tidal::server {
namespace {

std::string Num(double v) { return fmt::format("{}", v); }

void Header(std::string& out, const char* name, const char* type, const char* help) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

}  // namespace

std::string EscapeLabel(const std::string& v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

void Histogram::Observe(double v) {
  std::lock_guard lock(mu_);
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i]) ++i;
  ++counts_[i];
  sum_ += v;
  ++count_;
}

void Histogram::Render(std::string& out, const std::string& name) const {
  std::lock_guard lock(mu_);
  uint64_t cum = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cum += counts_[i];
    out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, Num(bounds_[i]), cum);
  }
  cum += counts_.back();
  out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n{}_sum {}\n{}_count {}\n", name, cum, name, Num(sum_), name, count_);
}

Metrics::Metrics()
    : cycle_seconds({0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}),
      admission_wait_seconds({60, 300, 900, 1800, 3600, 7200, 14400, 28800, 86400, 172800, 604800}) {}

namespace {
constexpr const char* kMethodNames[] = {"GET", "POST", "DELETE", "other"};
}

void Metrics::CountRequest(const std::string& method, int status) {
  const int m = method == "GET" ? 0 : method == "POST" ? 1 : method == "DELETE" ? 2 : 3;
  const int s = std::clamp(status, 100, 599) - 100;
  requests_[static_cast<size_t>(m * kStatuses + s)].fetch_add(1, std::memory_order_relaxed);
}

std::string Metrics::Render(const Snapshot& s, const std::vector<Price>& prices, int64_t reconciled) const {
  std::string out;
  out.reserve(8192);
  Header(out, "tidal_build_info", "gauge", "Build of the running daemon (always 1).");
  out += fmt::format("tidal_build_info{{version=\"{}\"}} 1\n", TIDAL_VERSION);

  Header(out, "tidal_schedule_attempts_total", "counter",
         "Scheduling attempts by result: scheduled (a job started), unschedulable (a job still waiting after a pass), error "
         "(a job that can never run).");
  out += fmt::format("tidal_schedule_attempts_total{{result=\"scheduled\"}} {}\n", scheduled.load());
  out += fmt::format("tidal_schedule_attempts_total{{result=\"unschedulable\"}} {}\n", unschedulable.load());
  out += fmt::format("tidal_schedule_attempts_total{{result=\"error\"}} {}\n", errors.load());

  Header(out, "tidal_scheduling_cycle_duration_seconds", "histogram", "Wall time of one scheduling batch (finishes, arrivals, one pass).");
  cycle_seconds.Render(out, "tidal_scheduling_cycle_duration_seconds");

  Header(out, "tidal_admission_wait_time_seconds", "histogram",
         "Daemon-clock seconds from submission to first start, per started job.");
  admission_wait_seconds.Render(out, "tidal_admission_wait_time_seconds");

  Header(out, "tidal_pending_jobs", "gauge", "Waiting jobs by tenant and first blocking cause.");
  for (const auto& [key, n] : s.pending_by_reason)
    out += fmt::format("tidal_pending_jobs{{tenant=\"{}\",reason=\"{}\"}} {}\n", EscapeLabel(key.first), EscapeLabel(key.second), n);

  Header(out, "tidal_tenant_gpus", "gauge", "GPUs per tenant: its floor, in use, borrowed beyond its floor, lent to others.");
  for (const TenantView& t : s.tenants) {
    const std::string n = EscapeLabel(t.name);
    out += fmt::format("tidal_tenant_gpus{{tenant=\"{}\",state=\"floor\"}} {}\n", n, Num(t.floor_gpus));
    out += fmt::format("tidal_tenant_gpus{{tenant=\"{}\",state=\"in_use\"}} {}\n", n, Num(t.in_use_gpus));
    out += fmt::format("tidal_tenant_gpus{{tenant=\"{}\",state=\"borrowed\"}} {}\n", n, Num(t.borrowed_gpus));
    out += fmt::format("tidal_tenant_gpus{{tenant=\"{}\",state=\"lent\"}} {}\n", n, Num(t.lent_gpus));
  }

  Header(out, "tidal_preemptions_total", "counter",
         "Preempted runs by reason: reclaim (the victim ran on borrowed quota), spot (a spot-tier victim), priority (others).");
  out += fmt::format("tidal_preemptions_total{{reason=\"reclaim\"}} {}\n", preempted_reclaim.load());
  out += fmt::format("tidal_preemptions_total{{reason=\"priority\"}} {}\n", preempted_priority.load());
  out += fmt::format("tidal_preemptions_total{{reason=\"spot\"}} {}\n", preempted_spot.load());

  Header(out, "tidal_jobs_submitted_total", "counter", "Jobs accepted through the API.");
  out += fmt::format("tidal_jobs_submitted_total {}\n", submitted.load());
  Header(out, "tidal_jobs_cancelled_total", "counter", "Cancellations accepted through the API.");
  out += fmt::format("tidal_jobs_cancelled_total {}\n", cancelled.load());

  Header(out, "tidal_gpu_allocation_ratio", "gauge", "Allocated GPU capacity over all GPU capacity.");
  out += fmt::format("tidal_gpu_allocation_ratio {}\n", Num(s.allocation_ratio));
  Header(out, "tidal_gpu_fragmentation_ratio", "gauge",
         "Idle GPU capacity that no waiting job can use (stranded) over all GPU capacity.");
  out += fmt::format("tidal_gpu_fragmentation_ratio {}\n", Num(s.fragmentation_ratio));
  Header(out, "tidal_gpus", "gauge", "GPUs in the cluster.");
  out += fmt::format("tidal_gpus {}\n", s.gpus);
  Header(out, "tidal_running_jobs", "gauge", "Running jobs.");
  out += fmt::format("tidal_running_jobs {}\n", s.running);

  Header(out, "tidal_price_per_gpu_hour", "gauge", "The announced price of one GPU-hour, in credits, by GPU model and tier.");
  for (const Price& p : prices)
    out += fmt::format("tidal_price_per_gpu_hour{{gpu_model=\"{}\",tier=\"{}\"}} {}\n", EscapeLabel(p.gpu_model), EscapeLabel(p.tier),
                       Num(p.per_gpu_hour));

  Header(out, "tidal_restart_reconciled_jobs", "gauge", "Jobs whose stored state the last start's replay corrected.");
  out += fmt::format("tidal_restart_reconciled_jobs {}\n", reconciled);
  Header(out, "tidal_scheduling_batches_total", "counter", "Scheduling batches run since the daemon's epoch.");
  out += fmt::format("tidal_scheduling_batches_total {}\n", s.batches);

  Header(out, "tidal_http_requests_total", "counter", "HTTP requests answered, by method and status code.");
  for (int m = 0; m < kMethods; ++m) {
    for (int st = 0; st < kStatuses; ++st) {
      const int64_t n = requests_[static_cast<size_t>(m * kStatuses + st)].load(std::memory_order_relaxed);
      if (n > 0) out += fmt::format("tidal_http_requests_total{{method=\"{}\",code=\"{}\"}} {}\n", kMethodNames[m], st + 100, n);
    }
  }
  return out;
}

}  // namespace tidal::server

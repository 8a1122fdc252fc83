#include "sim/queue_report.h"

#include <algorithm>
#include <cmath>
#include <fstream>

#include <fmt/format.h>

#include "sim/svg.h"

namespace tidal::sim {
namespace {

constexpr int kTimelinePoints = 400;  // enough for a smooth plot, small enough for a light page

// Cumulative distribution of `values` as (log10(1+v), fraction <= v) points,
// sampled at up to 500 quantiles.
std::vector<std::pair<double, double>> LogCdf(std::vector<int64_t> values) {
  std::vector<std::pair<double, double>> pts;
  if (values.empty()) return pts;
  std::sort(values.begin(), values.end());
  const double n = static_cast<double>(values.size());
  constexpr size_t kSamples = 500;
  for (size_t k = 0; k <= kSamples; ++k) {
    const int64_t v = values[k * (values.size() - 1) / kSamples];
    const auto upto = std::upper_bound(values.begin(), values.end(), v) - values.begin();
    pts.emplace_back(std::log10(1.0 + static_cast<double>(v)), static_cast<double>(upto) / n);
  }
  return pts;
}

}  // namespace

std::string QueueReportHtml(const QueueSimResult& r) {
  // GPUs in use and jobs waiting, sampled on a regular grid over the run,
  // rebuilt from the job records (sweep over start/finish and submit/start).
  struct Ev {
    int64_t t;
    int64_t gpu_milli_delta;
    int64_t waiting_delta;
  };
  std::vector<Ev> ev;
  std::vector<int64_t> delays, jcts;
  for (const QueueJobRecord& j : r.jobs) {
    if (j.outcome != JobOutcome::kFinished) continue;
    const int64_t milli = int64_t{j.num_gpu} * j.gpu_milli;
    ev.push_back({j.start_s, milli, 0});
    ev.push_back({j.finish_s, -milli, 0});
    if (j.start_s > j.submit_s) {
      ev.push_back({j.submit_s, 0, +1});
      ev.push_back({j.start_s, 0, -1});
    }
    delays.push_back(j.start_s - j.submit_s);
    jcts.push_back(j.finish_s - j.submit_s);
  }
  std::sort(ev.begin(), ev.end(), [](const Ev& a, const Ev& b) { return a.t < b.t; });
  const double t0 = static_cast<double>(r.start_s), t1 = static_cast<double>(std::max(r.end_s, r.start_s + 1));
  const double day = 86400.0;
  std::vector<std::pair<double, double>> gpus, waiting;
  int64_t milli = 0, wait = 0, peak_wait = 0;
  size_t e = 0;
  for (int i = 0; i <= kTimelinePoints; ++i) {
    const double t = t0 + (t1 - t0) * i / kTimelinePoints;
    while (e < ev.size() && static_cast<double>(ev[e].t) <= t) {
      milli += ev[e].gpu_milli_delta;
      wait += ev[e].waiting_delta;
      ++e;
    }
    peak_wait = std::max(peak_wait, wait);
    gpus.emplace_back((t - t0) / day, static_cast<double>(milli) / 1000.0);
    waiting.emplace_back((t - t0) / day, static_cast<double>(wait));
  }
  const double days = (t1 - t0) / day;
  const double gpu_max = std::max<double>(1.0, static_cast<double>(r.total_gpus));

  std::string html = R"~(<!DOCTYPE html><html><head><meta charset="utf-8"><title>tidal queue experiment</title>
<style>body{font-family:sans-serif;max-width:980px;margin:2em auto;color:#222}table{border-collapse:collapse}
td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}th{background:#f4f4f4}td:first-child{text-align:left}
.note{color:#555;font-size:90%}</style></head><body>)~";
  html += fmt::format("<h1>Queue experiment — {} / {}</h1>", HtmlEscape(r.queue), HtmlEscape(r.policy));
  html += fmt::format("<p class=note>{} nodes, {} GPUs; {} jobs, {} finished, {} unresolvable, {} backfilled; seed {}</p>",
                      r.nodes, r.total_gpus, r.jobs_total, r.jobs_finished, r.jobs_unresolvable, r.backfilled, r.seed);
  html += "<table><tr><th>metric</th><th>mean</th><th>p50</th><th>p95</th><th>p99</th></tr>";
  html += fmt::format("<tr><td>queueing delay (s)</td><td>{:.1f}</td><td>{:.1f}</td><td>{:.1f}</td><td>{:.1f}</td></tr>",
                      r.queue_delay_s.mean, r.queue_delay_s.p50, r.queue_delay_s.p95, r.queue_delay_s.p99);
  html += fmt::format("<tr><td>JCT (s)</td><td>{:.1f}</td><td>{:.1f}</td><td>{:.1f}</td><td>{:.1f}</td></tr></table>",
                      r.jct_s.mean, r.jct_s.p50, r.jct_s.p95, r.jct_s.p99);
  html += fmt::format("<p>GPU allocation rate {:.2f}%, stranded GPU share {:.3f}% (while jobs wait, idle GPU no waiting job can use), "
                      "at least one job waiting {:.1f}% of the time; makespan {:.1f} days.</p>",
                      100 * r.allocation_rate, 100 * r.stranded_gpu_share, 100 * r.waiting_time_share, days);
  html += SvgLineChart({"GPUs in use", "days since the first submission", "GPUs", 0, days, 0, gpu_max, 10, 5, ""},
                       {{"allocated GPUs", gpus, 0, false, true}});
  html += SvgLineChart({"Jobs waiting", "days since the first submission", "jobs", 0, days, 0,
                        std::max<double>(1.0, static_cast<double>(peak_wait)), 10, 5, ""},
                       {{"waiting jobs", waiting, 1, false, true}});
  const double max_log = std::log10(1.0 + static_cast<double>(std::max(
                                              delays.empty() ? 1 : *std::max_element(delays.begin(), delays.end()),
                                              jcts.empty() ? 1 : *std::max_element(jcts.begin(), jcts.end()))));
  html += SvgLineChart({"Distribution of queueing delay and JCT", "log10(1 + seconds)", "fraction of finished jobs", 0,
                        std::max(1.0, std::ceil(max_log)), 0, 1, static_cast<int>(std::max(1.0, std::ceil(max_log))), 5, ""},
                       {{"queueing delay", LogCdf(delays), 2, false, true}, {"JCT", LogCdf(jcts), 3, false, true}});
  html += "<p class=note>Generated by <code>tidal sim queue</code>; figures in summary.json, per-job times in jobs.csv.</p></body></html>\n";
  return html;
}

Status WriteQueueReportHtml(const QueueSimResult& r, const std::string& path) {
  std::ofstream f(path);
  if (!f) return MakeError(ErrorCode::kIo, "cannot write '{}'", path);
  f << QueueReportHtml(r);
  if (!f) return MakeError(ErrorCode::kIo, "writing '{}' failed (disk full?)", path);
  return Ok();
}

}  // namespace tidal::sim

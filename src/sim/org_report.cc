// `tidal sim org`'s outputs: the JSON document, the terminal table, and the
// report directory (summary.json, figures.csv, jobs_mfu.csv, report.html).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include <fmt/format.h>

#include "sim/org.h"
#include "sim/svg.h"

namespace tidal::sim {
namespace {

// The organisation's targets (issue 14): MFU >= 68%, communication share <
// 12%, mean queueing < 4 h, idle GPUs < 8%, effective compute +20%.
constexpr double kMfuTarget = 0.68, kCommTarget = 0.12, kQueueTargetS = 4 * 3600, kIdleTarget = 0.08, kGainTarget = 0.20;

// The lowest share of minutes with SLO capacity over the services (1 without any).
double SloMin(const OrgFigures& f) {
  double m = 1;
  for (const ServiceResult& s : f.inference) m = std::min(m, s.slo_minutes_met);
  return m;
}

nlohmann::json InferenceJson(const OrgFigures& f) {
  nlohmann::json services = nlohmann::json::object();
  for (const ServiceResult& s : f.inference) {
    services[s.name] = {{"slo_minutes_met", s.slo_minutes_met}, {"minutes", s.minutes}, {"mean_replicas", s.mean_replicas},
                        {"max_replicas", s.max_replicas}, {"gpu_hours", s.gpu_hours}};
  }
  return {{"colocation", f.side.colocation}, {"gpu_share", f.inference_gpu_share}, {"services", services}};
}

nlohmann::json FiguresJson(const OrgFigures& f) {
  nlohmann::json by_bg = nlohmann::json::object();
  for (const auto& [bg, mean] : f.queue_delay_mean_s_by_bg) by_bg[bg] = mean;
  return {
      {"inference", f.inference.empty() ? nlohmann::json(nullptr) : InferenceJson(f)},
      {"core_project", f.core_project.empty() ? nlohmann::json(nullptr)
                                              : nlohmann::json{{"name", f.core_project},
                                                               {"queue_delay_mean_s", f.core_queue_delay_mean_s},
                                                               {"preemptions", f.core_preemptions},
                                                               {"guarantee_violation_hours", f.core_guarantee_violation_hours}}},
      {"queue", f.side.queue},
      {"placer", f.side.placer},
      {"workload_model", f.side.workload_model},
      {"market", f.side.market},
      {"training_mfu", f.training_mfu},
      {"training_mfu_native", f.training_mfu_native},
      {"cluster_mfu", f.cluster_mfu},
      {"comm_share", f.comm_share},
      {"queue_delay_s", {{"mean", f.queue_delay_s.mean}, {"p50", f.queue_delay_s.p50}, {"p99", f.queue_delay_s.p99}}},
      {"queue_delay_mean_s_by_bg", by_bg},
      {"idle_gpu_share", f.idle_gpu_share},
      {"stranded_gpu_share", f.stranded_gpu_share},
      {"hoarded_gpu_share", f.hoarded_gpu_share},
      {"model_flops", f.model_flops},
      {"effective_compute_gain", f.effective_compute_gain},
      {"locality_leaf", f.locality_leaf},
      {"jobs_finished", f.jobs_finished},
      {"jobs_unresolvable", f.jobs_unresolvable},
      {"preemptions", f.preemptions},
      {"lost_gpu_hours", f.lost_gpu_hours},
      {"hoarded_gpu_hours", f.hoarded_gpu_hours},
      {"guarantee_violation_hours", f.guarantee_violation_hours},
      {"zombies", f.zombies},
      {"zombies_reclaimed", f.zombies_reclaimed},
      {"market_result", f.market ? MarketSimJson(*f.market) : nlohmann::json(nullptr)},
  };
}

nlohmann::json Target(double before, double after, double target, bool below) {
  return {{"before", before}, {"after", after}, {"target", target}, {"met", below ? after < target : after >= target}};
}

std::vector<const OrgFigures*> All(const OrgResult& r) {
  std::vector<const OrgFigures*> v = {&r.before, &r.after};
  for (const auto& a : r.ablations) v.push_back(&a);
  return v;
}

// GPU use by tier over the days (before and after) and the queue length.
std::string HourlyCharts(const OrgResult& r) {
  std::string html;
  double days = 0, waiting_max = 1;
  for (const OrgFigures* f : {&r.before, &r.after}) {
    days = std::max(days, static_cast<double>(f->hourly.size()) / 24);
    for (const QueueSimResult::Hour& h : f->hourly) waiting_max = std::max(waiting_max, static_cast<double>(h.waiting));
  }
  if (days <= 0) return html;
  const double window_days = static_cast<double>(r.window_s) / 86400;
  // The window and as long again of the drain: the long tail of a few
  // weeks-long jobs would squeeze the window into a corner.
  days = std::min(days, std::ceil(2 * window_days));
  const auto hours = static_cast<size_t>(days * 24);
  for (const OrgFigures* f : {&r.before, &r.after}) {
    SvgAxes ax{.title = fmt::format("GPUs in use by tier, {} (the arrival window ends at day {:.1f})", f->name, window_days),
               .xlabel = "day", .ylabel = "GPUs", .xmin = 0, .xmax = days, .ymin = 0, .ymax = static_cast<double>(r.total_gpus)};
    SvgSeries train{.label = "training", .color = 0, .step = true};
    SvgSeries infer{.label = "inference", .color = 1, .step = true};
    SvgSeries hoard{.label = "zombies (idle)", .color = 2, .step = true};
    for (size_t h = 0; h < f->hourly.size() && h < hours; ++h) {
      const double d = static_cast<double>(h) / 24;
      train.points.push_back({d, f->hourly[h].training_gpus});
      infer.points.push_back({d, f->hourly[h].inference_gpus});
      hoard.points.push_back({d, f->hourly[h].hoarded_gpus});
    }
    std::vector<SvgSeries> series = {std::move(train), std::move(hoard)};
    if (!f->inference.empty()) series.push_back(std::move(infer));
    html += SvgLineChart(ax, series);
  }
  SvgAxes q{.title = "training jobs waiting", .xlabel = "day", .ylabel = "jobs", .xmin = 0, .xmax = days, .ymin = 0,
            .ymax = waiting_max};
  std::vector<SvgSeries> qs;
  int color = 0;
  for (const OrgFigures* f : {&r.before, &r.after}) {
    SvgSeries s{.label = f->name, .color = color++, .step = true};
    for (size_t h = 0; h < f->hourly.size() && h < hours; ++h)
      s.points.push_back({static_cast<double>(h) / 24, static_cast<double>(f->hourly[h].waiting)});
    qs.push_back(std::move(s));
  }
  html += SvgLineChart(q, qs);
  return html;
}

}  // namespace

nlohmann::json OrgJson(const OrgConfig& c, const OrgResult& r) {
  nlohmann::json ablations = nlohmann::json::object();
  for (const auto& a : r.ablations) ablations[a.name] = FiguresJson(a);
  nlohmann::json j;
  j["name"] = c.name;
  j["before"] = FiguresJson(r.before);
  j["after"] = FiguresJson(r.after);
  j["ablations"] = ablations;
  j["targets"] = {
      {"training_mfu", Target(r.before.training_mfu, r.after.training_mfu, kMfuTarget, false)},
      {"comm_share", Target(r.before.comm_share, r.after.comm_share, kCommTarget, true)},
      {"queue_delay_mean_s", Target(r.before.queue_delay_s.mean, r.after.queue_delay_s.mean, kQueueTargetS, true)},
      {"idle_gpu_share", Target(r.before.idle_gpu_share, r.after.idle_gpu_share, kIdleTarget, true)},
      {"effective_compute_gain", Target(0, r.after.effective_compute_gain, kGainTarget, false)},
  };
  nlohmann::json tiers = nlohmann::json::object();
  for (const auto& [bg, tier] : c.tiers) tiers[bg] = tenancy::TierName(tier);
  j["config"] = {
      {"source", c.source},
      {"jobs", c.jobs},
      {"topology", c.topology},
      {"tenants", c.tenants},
      {"core_project", c.core_project},
      {"reference_model", c.reference_model},
      {"market", c.market},
      {"budget_factor", c.budget_factor},
      {"budgets", c.budgets},
      {"tiers", tiers},
      {"load", c.load},
      {"limit", c.limit},
      {"seed", c.seed},
      {"hoarding", {{"share", c.hoarding.share}, {"min_tail_s", c.hoarding.min_tail_s}, {"max_tail_s", c.hoarding.max_tail_s}}},
      {"checkpoint_interval_s", c.checkpoint_interval_s},
      {"restart_penalty_s", c.restart_penalty_s},
      {"gpu", r.gpu},
      {"total_gpus", r.total_gpus},
      {"jobs_total", r.jobs},
      {"window_s", r.window_s},
      {"offered_load", r.offered_load},
      {"offered_load_native", r.offered_load_native},
      {"inference", c.inference ? nlohmann::json{{"services", c.inference->services},
                                                  {"lead_s", c.inference->knobs.lead_s},
                                                  {"error_quantile", c.inference->knobs.error_quantile},
                                                  {"startup_s", c.inference->knobs.startup_s},
                                                  {"checkpoint_write_s", c.inference->knobs.checkpoint_write_s}}
                                : nlohmann::json(nullptr)},
  };
  return j;
}

std::string OrgTable(const OrgResult& r) {
  const bool inf = !r.before.inference.empty();
  std::string s = fmt::format("{:<14} {:>8} {:>8} {:>8} {:>8} {:>10} {:>10} {:>8} {:>8} {:>8} {:>8}{}\n", "side", "trainMFU",
                              "native", "clusMFU", "comm", "queue_h", "q_p99_h", "idle", "strand", "hoard", "gain",
                              inf ? fmt::format(" {:>8} {:>8}", "infer", "SLOmin") : "");
  for (const OrgFigures* f : All(r)) {
    s += fmt::format("{:<14} {:>7.1f}% {:>7.1f}% {:>7.1f}% {:>7.1f}% {:>10.2f} {:>10.2f} {:>7.1f}% {:>7.1f}% {:>7.1f}% {:>+7.1f}%{}\n",
                     f->name, 100 * f->training_mfu, 100 * f->training_mfu_native, 100 * f->cluster_mfu,
                     100 * f->comm_share, f->queue_delay_s.mean / 3600, f->queue_delay_s.p99 / 3600,
                     100 * f->idle_gpu_share, 100 * f->stranded_gpu_share, 100 * f->hoarded_gpu_share,
                     100 * f->effective_compute_gain,
                     inf ? fmt::format(" {:>7.1f}% {:>7.2f}%", 100 * f->inference_gpu_share, 100 * SloMin(*f)) : "");
  }
  return s;
}

Status WriteOrgOutputs(const OrgConfig& c, const OrgResult& r, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return MakeError(ErrorCode::kIo, "cannot create {}: {}", dir, ec.message());
  auto write = [&](const std::string& name, const std::string& text) -> Status {
    std::ofstream out(std::filesystem::path(dir) / name);
    out << text;
    if (!out) return MakeError(ErrorCode::kIo, "cannot write {}/{}", dir, name);
    return Ok();
  };
  TIDAL_RETURN_IF_ERROR(write("summary.json", OrgJson(c, r).dump(2) + "\n"));
  std::string csv =
      "side,queue,placer,workload_model,market,training_mfu,training_mfu_native,cluster_mfu,comm_share,queue_delay_mean_s,"
      "queue_delay_p50_s,queue_delay_p99_s,idle_gpu_share,stranded_gpu_share,hoarded_gpu_share,effective_compute_gain,"
      "jobs_finished,jobs_unresolvable,preemptions,lost_gpu_hours,inference_gpu_share,slo_minutes_met_min\n";
  std::string mfu_csv = "side,mfu,gpu_hours\n";
  for (const OrgFigures* f : All(r)) {
    csv += fmt::format("{},{},{},{},{},{:.6f},{:.6f},{:.6f},{:.6f},{:.1f},{:.1f},{:.1f},{:.6f},{:.6f},{:.6f},{:.6f},{},{},{},{:.3f},{:.6f},{:.6f}\n",
                       f->name, f->side.queue, f->side.placer, std::filesystem::path(f->side.workload_model).filename().string(),
                       f->side.market, f->training_mfu, f->training_mfu_native, f->cluster_mfu, f->comm_share,
                       f->queue_delay_s.mean, f->queue_delay_s.p50, f->queue_delay_s.p99, f->idle_gpu_share,
                       f->stranded_gpu_share, f->hoarded_gpu_share, f->effective_compute_gain, f->jobs_finished,
                       f->jobs_unresolvable, f->preemptions, f->lost_gpu_hours, f->inference_gpu_share, SloMin(*f));
    for (const auto& [m, h] : f->job_mfu) mfu_csv += fmt::format("{},{:.5f},{:.4f}\n", f->name, m, h);
  }
  TIDAL_RETURN_IF_ERROR(write("figures.csv", csv));
  TIDAL_RETURN_IF_ERROR(write("jobs_mfu.csv", mfu_csv));
  std::string hourly_csv = "side,hour,training_gpus,inference_gpus,hoarded_gpus,waiting_jobs\n";
  for (const OrgFigures* f : All(r)) {
    for (size_t h = 0; h < f->hourly.size(); ++h) {
      const QueueSimResult::Hour& x = f->hourly[h];
      hourly_csv += fmt::format("{},{},{:.3f},{:.3f},{:.0f},{}\n", f->name, h, x.training_gpus, x.inference_gpus, x.hoarded_gpus,
                                x.waiting);
    }
  }
  TIDAL_RETURN_IF_ERROR(write("hourly.csv", hourly_csv));

  // The four figures, before / after / each ablation, with the targets.
  std::vector<std::string> sides;
  for (const OrgFigures* f : All(r)) sides.push_back(f->name);
  auto bars = [&](const std::string& title, const std::string& unit, auto get, double target, const std::string& mark) {
    SvgBars b{.title = title, .xlabel = unit};
    b.groups = sides;
    SvgBarSeries s{.label = title, .color = 0};
    for (const OrgFigures* f : All(r)) s.values.push_back(get(*f));
    b.series.push_back(std::move(s));
    b.marks.push_back({mark, target});
    return SvgBarChart(b);
  };
  std::string html = fmt::format(
      "<!doctype html><html><head><meta charset=\"utf-8\"><title>tidal sim org: {0}</title>"
      "<style>body{{font-family:sans-serif;max-width:1100px;margin:auto}}table{{border-collapse:collapse}}"
      "td,th{{border:1px solid #ccc;padding:3px 8px;text-align:right}}</style></head><body>"
      "<h1>tidal sim org: {0}</h1><p>{1} GPUs ({2}), {3} jobs at offered load {4:.2f} (native {5:.3f}), measured over the "
      "{6:.1f}-day arrival window. Before: {7}; after: {8}. Each ablation is <i>after</i> with one lever set back to "
      "<i>before</i>.</p><pre>{9}</pre>",
      HtmlEscape(c.name), r.total_gpus, r.gpu, r.jobs, r.offered_load, r.offered_load_native,
      static_cast<double>(r.window_s) / 86400,
      HtmlEscape(fmt::format("{} queue, {} placer, {} layouts{}", c.before.queue, c.before.placer,
                             std::filesystem::path(c.before.workload_model).stem().string(), c.before.market ? ", market" : "")),
      HtmlEscape(fmt::format("{} queue, {} placer, {} layouts{}", c.after.queue, c.after.placer,
                             std::filesystem::path(c.after.workload_model).stem().string(), c.after.market ? ", market" : "")),
      HtmlEscape(OrgTable(r)));
  html += bars("training MFU (dense BF16 peak)", "fraction", [](const OrgFigures& f) { return f.training_mfu; }, kMfuTarget,
               "target 68%");
  html += bars("communication share of step time", "fraction", [](const OrgFigures& f) { return f.comm_share; }, kCommTarget,
               "target 12%");
  html += bars("mean queueing delay", "hours", [](const OrgFigures& f) { return f.queue_delay_s.mean / 3600; },
               kQueueTargetS / 3600, "target 4 h");
  html += bars("idle GPU share", "fraction", [](const OrgFigures& f) { return f.idle_gpu_share; }, kIdleTarget, "target 8%");
  html += bars("effective compute gain vs before", "fraction", [](const OrgFigures& f) { return f.effective_compute_gain; },
               kGainTarget, "target +20%");
  // Per-job MFU: the GPU-hour-weighted distribution, before and after.
  SvgAxes ax{.title = "per-job MFU (GPU-hour weighted CDF)", .xlabel = "MFU", .ylabel = "share of GPU-hours",
             .xmin = 0, .xmax = 0.8, .ymin = 0, .ymax = 1};
  std::vector<SvgSeries> cdfs;
  int color = 0;
  for (const OrgFigures* f : {&r.before, &r.after}) {
    // GPU-hours in MFU bins of 0.5 points: a few hundred points at most.
    std::map<int, double> bins;
    double total = 0;
    for (const auto& [m, h] : f->job_mfu) {
      bins[static_cast<int>(m * 200)] += h;
      total += h;
    }
    SvgSeries s{.label = f->name, .color = color++, .step = true};
    double acc = 0;
    s.points.push_back({0, 0});
    for (const auto& [bin, h] : bins) {
      acc += h;
      s.points.push_back({(bin + 1) / 200.0, total > 0 ? acc / total : 0});
    }
    cdfs.push_back(std::move(s));
  }
  html += SvgLineChart(ax, cdfs);
  html += HourlyCharts(r);
  html += "</body></html>\n";
  return write("report.html", html);
}

}  // namespace tidal::sim

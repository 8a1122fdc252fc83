// The colocate experiment's outputs: JSON for machines (the keys plus
// the targets), a text table, and HTML with the per-hour MIG layouts.
#include <set>

#include <fmt/format.h>

#include "sim/colocate.h"
#include "sim/svg.h"

namespace tidal::sim {

nlohmann::json ColocateTargets(const ColocateResult& r) {
  nlohmann::json out = nlohmann::json::array();
  const ColocateRow* base = nullptr;
  for (const ColocateRow& row : r.rows)
    if (row.policy == "static") base = &row;
  for (const ColocateRow& row : r.rows) {
    if (row.policy == "static") continue;
    nlohmann::json t{{"policy", row.policy}};
    double worst = 1;
    for (const ServiceResult& s : row.services) worst = std::min(worst, s.slo_minutes_met);
    t["worst_slo_minutes_met"] = worst;
    t["slo_999_every_service"] = worst >= 0.999;
    if (base && base->training_gpu_hours > 0) {
      t["training_gpu_hours_vs_static"] = row.training_gpu_hours / base->training_gpu_hours;
      t["training_1_25x_static"] = row.training_gpu_hours >= 1.25 * base->training_gpu_hours;
    }
    const double received = row.training_gpu_hours + row.lost_gpu_hours;
    t["lost_share_of_training"] = received > 0 ? row.lost_gpu_hours / received : 0;
    t["lost_below_1pct"] = received > 0 && row.lost_gpu_hours < 0.01 * received;
    out.push_back(std::move(t));
  }
  return out;
}

nlohmann::json ColocateJson(const ColocateResult& r) {
  nlohmann::json rows = nlohmann::json::array();
  for (const ColocateRow& row : r.rows) {
    nlohmann::json slo = nlohmann::json::object(), svc = nlohmann::json::array();
    for (const ServiceResult& s : row.services) {
      slo[s.name] = s.slo_minutes_met;
      svc.push_back({{"name", s.name}, {"slo_minutes_met", s.slo_minutes_met}, {"minutes", s.minutes}, {"mean_replicas", s.mean_replicas},
                     {"max_replicas", s.max_replicas}, {"gpu_hours", s.gpu_hours}, {"missed_minutes_by_day", s.missed_by_day}});
    }
    nlohmann::json hours = nlohmann::json::array();
    for (const MigHour& h : row.mig_hours) hours.push_back({{"hour", h.hour}, {"mig_gpus", h.mig_gpus}, {"instances", h.instances}});
    rows.push_back({{"policy", row.policy},
                    {"slo_minutes_met", slo},
                    {"training_gpu_hours", row.training_gpu_hours},
                    {"training_queue_delay_s", row.training_queue_delay_s},
                    {"preemptions_per_day", row.preemptions_per_day},
                    {"lost_gpu_hours", row.lost_gpu_hours},
                    {"mig_reconfigs_per_day", row.mig_reconfigs_per_day},
                    {"allocation_rate", row.allocation_rate},
                    {"inference_gpu_hours", row.inference_gpu_hours},
                    {"mig_idle_gpu_hours", row.mig_idle_gpu_hours},
                    {"idle_gpu_hours", row.idle_gpu_hours},
                    {"idle_no_training_waiting_gpu_hours", row.idle_no_training_waiting_gpu_hours},
                    {"training_jobs_started", row.training_started},
                    {"training_jobs_waiting_at_end", row.training_waiting_at_end},
                    {"preemptions", row.preemptions},
                    {"preemptions_with_notice", row.preemptions_with_notice},
                    {"services", svc},
                    {"mig_layouts_per_hour", hours}});
  }
  return {{"name", r.name}, {"gpus", r.gpus},           {"days", r.days},
          {"offered_load", r.offered_load}, {"training_jobs", r.training_jobs}, {"rows", rows}, {"targets", ColocateTargets(r)}};
}

std::string ColocateTable(const ColocateResult& r) {
  std::string out = fmt::format("{:<9} {:>22} {:>12} {:>10} {:>9} {:>9} {:>10} {:>7} {:>10} {:>12}\n", "policy", "SLO minutes met (min)",
                                "train GPU-h", "queue s", "preempt/d", "lost GPU-h", "MIG ops/d", "alloc", "idle GPU-h", "no train wait");
  for (const ColocateRow& row : r.rows) {
    double worst = 1;
    std::string per;
    for (const ServiceResult& s : row.services) {
      worst = std::min(worst, s.slo_minutes_met);
      per += fmt::format(" {}={:.4f}", s.name, s.slo_minutes_met);
    }
    out += fmt::format("{:<9} {:>22.4f} {:>12.0f} {:>10.0f} {:>9.1f} {:>9.1f} {:>10.1f} {:>6.1f}% {:>10.0f} {:>12.0f}   {}\n", row.policy,
                       worst, row.training_gpu_hours, row.training_queue_delay_s, row.preemptions_per_day, row.lost_gpu_hours,
                       row.mig_reconfigs_per_day, 100 * row.allocation_rate, row.idle_gpu_hours, row.idle_no_training_waiting_gpu_hours, per);
  }
  return out;
}

std::string ColocateHtml(const ColocateResult& r) {
  std::string html = fmt::format(
      "<!doctype html><html><head><meta charset=\"utf-8\"><title>tidal sim colocate: {0}</title>"
      "<style>body{{font-family:sans-serif;max-width:1100px;margin:2em auto}}table{{border-collapse:collapse}}"
      "td,th{{border:1px solid #ccc;padding:4px 8px;text-align:right}}</style></head><body>"
      "<h1>Training/inference co-location: {0}</h1><p>{1} GPUs, {2} days, training offered load {3:.2f}, {4} training jobs.</p>"
      "<pre>{5}</pre>",
      HtmlEscape(r.name), r.gpus, r.days, r.offered_load, r.training_jobs, HtmlEscape(ColocateTable(r)));
  // GPUs in MIG mode per hour, one line per policy.
  {
    SvgAxes axes{.title = "GPUs in MIG mode, per hour", .xlabel = "hour", .ylabel = "GPUs"};
    std::vector<SvgSeries> series;
    double ymax = 1;
    int color = 0;
    for (const ColocateRow& row : r.rows) {
      SvgSeries s{.label = row.policy, .color = color++, .step = true};
      for (const MigHour& h : row.mig_hours) {
        s.points.push_back({static_cast<double>(h.hour), static_cast<double>(h.mig_gpus)});
        ymax = std::max(ymax, static_cast<double>(h.mig_gpus));
      }
      series.push_back(std::move(s));
    }
    axes.xmax = static_cast<double>(r.days * 24);
    axes.ymax = ymax * 1.1;
    axes.xticks = static_cast<int>(r.days);
    html += SvgLineChart(axes, series);
  }
  // The MIG layout of each policy that uses MIG: held instances per profile per hour.
  for (const ColocateRow& row : r.rows) {
    std::set<std::string> profiles;
    for (const MigHour& h : row.mig_hours)
      for (const auto& [p, n] : h.instances) profiles.insert(p);
    if (profiles.empty()) continue;
    SvgAxes axes{.title = fmt::format("{}: MIG instances held, per profile, per hour", row.policy), .xlabel = "hour", .ylabel = "instances"};
    std::vector<SvgSeries> series;
    double ymax = 1;
    int color = 0;
    for (const std::string& p : profiles) {
      SvgSeries s{.label = p, .color = color++, .step = true};
      for (const MigHour& h : row.mig_hours) {
        auto it = h.instances.find(p);
        const double n = it == h.instances.end() ? 0.0 : static_cast<double>(it->second);
        s.points.push_back({static_cast<double>(h.hour), n});
        ymax = std::max(ymax, n);
      }
      series.push_back(std::move(s));
    }
    axes.xmax = static_cast<double>(r.days * 24);
    axes.ymax = ymax * 1.1;
    axes.xticks = static_cast<int>(r.days);
    html += SvgLineChart(axes, series);
  }
  html += "</body></html>\n";
  return html;
}

}  // namespace tidal::sim

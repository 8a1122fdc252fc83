#include "sim/fill_report.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/csv.h"
#include "sim/svg.h"

namespace tidal::sim {
namespace fs = std::filesystem;

std::string PyFloat(double v) {
  char buf[64];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);  // shortest round-trip
  std::string s(buf, p);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

namespace {

Status ReadOne(const std::string& path, const std::string& workload, std::map<std::string, Curve>& out,
               std::map<std::string, int>* seeds) {
  TIDAL_ASSIGN_OR_RETURN(CsvTable t, CsvTable::ReadFile(path));
  TIDAL_ASSIGN_OR_RETURN(size_t c_w, t.RequireColumn("workload"));
  TIDAL_ASSIGN_OR_RETURN(size_t c_p, t.RequireColumn("sc_policy"));
  TIDAL_ASSIGN_OR_RETURN(size_t c_0, t.RequireColumn("0"));
  std::map<std::string, std::array<double, kFillBuckets>> sum;
  std::map<std::string, std::array<int, kFillBuckets>> cnt;
  int rows = 0;
  for (const CsvRow& r : t.rows()) {
    if (r.field(c_w) != workload) continue;
    ++rows;
    const std::string& label = r.field(c_p);
    auto& s = sum[label];
    auto& c = cnt[label];
    if (seeds) ++(*seeds)[label];
    for (int k = 0; k < kFillBuckets; ++k) {
      if (c_0 + static_cast<size_t>(k) >= r.size() || r.Empty(c_0 + static_cast<size_t>(k))) continue;
      TIDAL_ASSIGN_OR_RETURN(double v, r.Double(c_0 + static_cast<size_t>(k), -1e9, 1e9));
      s[static_cast<size_t>(k)] += v;
      ++c[static_cast<size_t>(k)];
    }
  }
  if (rows == 0) {
    return MakeError(ErrorCode::kNotFound, "{}: no rows for workload '{}'", path, workload);
  }
  for (auto& [label, s] : sum) {
    Curve& curve = out[label];
    for (int k = 0; k < kFillBuckets; ++k)
      if (cnt[label][static_cast<size_t>(k)] > 0)
        curve[static_cast<size_t>(k)] = s[static_cast<size_t>(k)] / cnt[label][static_cast<size_t>(k)];
  }
  return Ok();
}

std::string CurveCells(const Curve& c, int digits) {
  std::string out;
  for (int k = 0; k < kFillBuckets; ++k) {
    out += ',';
    if (c[static_cast<size_t>(k)]) out += digits < 0 ? PyFloat(*c[static_cast<size_t>(k)]) : PyFloat(RoundHalfEven(*c[static_cast<size_t>(k)], digits));
  }
  return out;
}

Status WriteCurveCsv(const fs::path& path, const FillReportInput& in, Curve FillResult::*curve,
                     bool with_total, int digits) {
  std::ofstream f(path);
  if (!f) return MakeError(ErrorCode::kIo, "{}: cannot write (is the directory writable?)", path.string());
  f << "workload,sc_policy,tune,seed" << (with_total ? ",total_gpus" : "");
  for (int k = 0; k < kFillBuckets; ++k) f << ',' << k;
  f << '\n';
  for (const FillResult& r : in.runs) {
    f << in.workload << ',' << r.label << ',' << PyFloat(r.tune) << ',' << r.seed;
    if (with_total) f << ',' << r.total_gpus;
    f << CurveCells(r.*curve, digits) << '\n';
  }
  if (!f) return MakeError(ErrorCode::kIo, "{}: write failed (disk full?)", path.string());
  return Ok();
}

nlohmann::json CurveJson(const Curve& c) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& v : c) a.push_back(v ? nlohmann::json(RoundHalfEven(*v, 4)) : nlohmann::json(nullptr));
  return a;
}

// One fill chart: our mean curve per policy over the published one (faint, dashed).
std::string FillChart(const std::string& title, const std::string& ylabel, double ymin, double ymax,
                      const std::vector<std::pair<std::string, Curve>>& ours,
                      const std::map<std::string, Curve>* published, int xmin = 0) {
  auto points = [&](const Curve& c) {
    std::vector<std::pair<double, double>> p;
    for (int k = xmin; k < kFillBuckets; ++k)
      if (c[static_cast<size_t>(k)]) p.emplace_back(k, *c[static_cast<size_t>(k)]);
    return p;
  };
  std::vector<SvgSeries> series;
  for (size_t i = 0; i < ours.size(); ++i) {
    const auto& [label, curve] = ours[i];
    if (published) {
      if (auto it = published->find(label); it != published->end())
        series.push_back({"", points(it->second), static_cast<int>(i), true});
    }
    series.push_back({label, points(curve), static_cast<int>(i), false});
  }
  SvgAxes axes{title, "arrived GPU demand (% of cluster GPUs)", ylabel, static_cast<double>(xmin), 130, ymin, ymax,
               (130 - xmin) / 10, 5, published ? "published" : ""};
  return SvgLineChart(axes, series);
}

}  // namespace

Result<PublishedCurves> ReadPublishedCurves(const std::string& dir, const std::string& workload) {
  PublishedCurves p;
  p.source = dir;
  TIDAL_RETURN_IF_ERROR(ReadOne((fs::path(dir) / "analysis_allo_discrete.csv").string(), workload, p.alloc_pct, &p.seeds));
  for (auto [file, target] : {std::pair{"analysis_frag_discrete.csv", &p.frag_pct},
                              std::pair{"analysis_frag_ratio_discrete.csv", &p.frag_ratio_pct}}) {
    const auto path = fs::path(dir) / file;
    if (fs::exists(path)) TIDAL_RETURN_IF_ERROR(ReadOne(path.string(), workload, *target, nullptr));
  }
  return p;
}

Curve MeanCurve(const std::vector<const FillResult*>& runs, Curve FillResult::*curve) {
  Curve out;
  for (int k = 0; k < kFillBuckets; ++k) {
    double s = 0;
    int n = 0;
    for (const FillResult* r : runs) {
      if (const auto& v = ((*r).*curve)[static_cast<size_t>(k)]) s += *v, ++n;
    }
    if (n > 0) out[static_cast<size_t>(k)] = s / n;
  }
  return out;
}

Status WriteFillOutputs(const std::string& dir, const FillReportInput& in) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return MakeError(ErrorCode::kIo, "{}: cannot create output directory: {}", dir, ec.message());
  TIDAL_RETURN_IF_ERROR(WriteCurveCsv(fs::path(dir) / "analysis_allo_discrete.csv", in, &FillResult::alloc_pct, true, 2));
  TIDAL_RETURN_IF_ERROR(WriteCurveCsv(fs::path(dir) / "analysis_frag_ratio_discrete.csv", in, &FillResult::frag_ratio_pct, false, -1));
  TIDAL_RETURN_IF_ERROR(WriteCurveCsv(fs::path(dir) / "analysis_frag_discrete.csv", in, &FillResult::frag_pct, false, 2));

  // Group runs by policy in the paper's order.
  std::vector<std::string> labels;
  std::map<std::string, std::vector<const FillResult*>> by_label;
  for (const FillResult& r : in.runs) {
    if (!by_label.contains(r.label)) labels.push_back(r.label);
    by_label[r.label].push_back(&r);
  }
  std::sort(labels.begin(), labels.end());

  nlohmann::json j;
  j["version"] = 1;
  j["experiment"] = "fill";
  j["workload"] = in.workload;
  j["nodes"] = in.nodes_path;
  j["pods"] = in.pods_path;
  j["published_source"] = in.published ? nlohmann::json(in.published->source) : nlohmann::json(nullptr);
  nlohmann::json policies = nlohmann::json::array();
  std::vector<std::pair<std::string, Curve>> alloc_curves, frag_curves, ratio_curves;
  std::string table_rows;
  for (const std::string& label : labels) {
    const auto& runs = by_label[label];
    const Curve alloc = MeanCurve(runs, &FillResult::alloc_pct);
    const Curve frag = MeanCurve(runs, &FillResult::frag_pct);
    const Curve ratio = MeanCurve(runs, &FillResult::frag_ratio_pct);
    alloc_curves.emplace_back(label, alloc);
    frag_curves.emplace_back(label, frag);
    ratio_curves.emplace_back(label, ratio);
    double secs = 0;
    int64_t placed = 0, failed = 0, arrived = 0;
    nlohmann::json seeds = nlohmann::json::array();
    for (const FillResult* r : runs) {
      secs += r->seconds;
      placed += r->placed_pods;
      failed += r->failed_pods;
      arrived += r->arrived_pods;
      seeds.push_back({{"seed", r->seed},
                       {"arrived_pods", r->arrived_pods},
                       {"placed_pods", r->placed_pods},
                       {"failed_pods", r->failed_pods},
                       {"alloc_pct_100", r->alloc_pct[100] ? nlohmann::json(*r->alloc_pct[100]) : nlohmann::json(nullptr)},
                       {"alloc_pct_130", r->alloc_pct[130] ? nlohmann::json(*r->alloc_pct[130]) : nlohmann::json(nullptr)},
                       {"seconds", RoundHalfEven(r->seconds, 4)}});
    }
    std::map<std::string, double> plugin_seconds;
    for (const FillResult* r : runs)
      for (const auto& [name, s] : r->plugin_seconds) plugin_seconds[name] += s / static_cast<double>(runs.size());
    nlohmann::json plugins = nlohmann::json::object();
    for (const auto& [name, s] : plugin_seconds) plugins[name] = RoundHalfEven(s, 4);
    nlohmann::json p{{"label", label},
                     {"mean_plugin_seconds_per_run", plugins},
                     {"policy", runs.front()->policy},
                     {"runs", runs.size()},
                     {"mean_seconds_per_run", RoundHalfEven(secs / static_cast<double>(runs.size()), 4)},
                     {"mean_alloc_pct", CurveJson(alloc)},
                     {"mean_frag_pct", CurveJson(frag)},
                     {"mean_frag_ratio_pct", CurveJson(ratio)},
                     {"seeds", seeds}};
    auto at = [](const Curve& c, int k) { return c[static_cast<size_t>(k)]; };
    std::optional<Curve> pub;
    if (in.published) {
      if (auto it = in.published->alloc_pct.find(label); it != in.published->alloc_pct.end()) pub = it->second;
    }
    for (int k : {100, 130}) {
      const auto ours = at(alloc, k);
      p[fmt::format("alloc_pct_{}", k)] = ours ? nlohmann::json(RoundHalfEven(*ours, 2)) : nlohmann::json(nullptr);
      if (pub && (*pub)[static_cast<size_t>(k)]) {
        p[fmt::format("published_alloc_pct_{}", k)] = RoundHalfEven(*(*pub)[static_cast<size_t>(k)], 2);
        if (ours) p[fmt::format("diff_pp_{}", k)] = RoundHalfEven(*ours - *(*pub)[static_cast<size_t>(k)], 2);
      }
    }
    auto cell = [](const std::optional<double>& v) { return v ? fmt::format("{:.2f}", *v) : std::string("–"); };
    auto pubcell = [&](int k) { return pub ? cell((*pub)[static_cast<size_t>(k)]) : std::string("–"); };
    table_rows += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.3f}</td></tr>",
                              label, runs.size(), cell(at(alloc, 100)), pubcell(100), cell(at(alloc, 130)), pubcell(130),
                              cell(at(frag, 100)), secs / static_cast<double>(runs.size()));
    (void)placed, (void)failed, (void)arrived;
    policies.push_back(std::move(p));
  }
  j["policies"] = std::move(policies);
  {
    std::ofstream f(fs::path(dir) / "report.json");
    f << j.dump(2) << '\n';
    if (!f) return MakeError(ErrorCode::kIo, "{}/report.json: write failed", dir);
  }

  const auto* pub_alloc = in.published ? &in.published->alloc_pct : nullptr;
  const auto* pub_frag = in.published && !in.published->frag_pct.empty() ? &in.published->frag_pct : nullptr;
  const auto* pub_ratio = in.published && !in.published->frag_ratio_pct.empty() ? &in.published->frag_ratio_pct : nullptr;
  std::string html = R"~(<!DOCTYPE html><html><head><meta charset="utf-8"><title>tidal fill experiment</title>
<style>body{font-family:sans-serif;max-width:980px;margin:2em auto;color:#222}table{border-collapse:collapse}
td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}th{background:#f4f4f4}td:first-child{text-align:left}
.note{color:#555;font-size:90%}</style></head><body>)~";
  html += fmt::format("<h1>Fill experiment — {}</h1>", in.workload);
  html += fmt::format("<p class=note>Nodes: <code>{}</code><br>Pods: <code>{}</code><br>Published curves: {}</p>",
                      in.nodes_path, in.pods_path,
                      in.published ? "<code>" + in.published->source + "</code> (FGD, ATC'23 artifact; dashed, wide)" : "not found next to the pod list");
  html += "<p>Pods arrive one at a time in a seeded random order until the requested GPUs reach the tune ratio × cluster GPUs; "
          "nothing departs; a pod that does not fit is dropped. Curves are means over seeds, per 1% of arrived demand.</p>";
  html += "<table><tr><th>policy</th><th>runs</th><th>alloc % @100</th><th>published</th><th>alloc % @130</th><th>published</th>"
          "<th>frag % of GPUs @100</th><th>s / run</th></tr>" + table_rows + "</table>";
  html += "<h2>GPU allocation rate</h2>" + FillChart("GPU allocation (%) vs arrived demand", "allocated GPU (%)", 0, 100, alloc_curves, pub_alloc);
  html += FillChart("GPU allocation (%), zoomed on the saturation region", "allocated GPU (%)", 80, 100, alloc_curves, pub_alloc, 80);
  html += "<h2>Fragmented GPU capacity</h2>" + FillChart("Fragmented GPU (% of cluster GPUs)", "fragmented GPU (%)", 0, 20, frag_curves, pub_frag);
  html += "<h2>Fragmentation ratio</h2>" + FillChart("Fragmented share of idle GPU (%)", "frag / idle (%)", 0, 100, ratio_curves, pub_ratio);
  html += "<p class=note>Generated by <code>tidal sim fill</code>. Machine-readable figures: report.json and the analysis_*_discrete.csv files.</p></body></html>\n";
  std::ofstream f(fs::path(dir) / "report.html");
  f << html;
  if (!f) return MakeError(ErrorCode::kIo, "{}/report.html: write failed", dir);
  return Ok();
}

}  // namespace tidal::sim

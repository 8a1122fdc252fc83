#include "sim/svg.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace tidal::sim {

namespace {
const char* kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};

std::string TickLabel(double v) {
  if (std::abs(v) < 1e-12) return "0";
  return fmt::format("{:g}", v);
}

// A "nice" tick step (1, 2, 2.5 or 5 times a power of ten) giving about
// `target` intervals over `span`.
double NiceStep(double span, int target) {
  const double raw = span / std::max(1, target);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (m * mag >= raw * (1 - 1e-9)) return m * mag;
  return 10 * mag;
}
}  // namespace

std::string HtmlEscape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string SvgLineChart(const SvgAxes& a, const std::vector<SvgSeries>& series) {
  const double W = 720, H = 420, L = 64, R = 180, T = 30, B = 45;
  const double pw = W - L - R, ph = H - T - B;
  const double xspan = a.xmax > a.xmin ? a.xmax - a.xmin : 1, yspan = a.ymax > a.ymin ? a.ymax - a.ymin : 1;
  auto X = [&](double x) { return L + pw * (std::clamp(x, a.xmin, a.xmax) - a.xmin) / xspan; };
  auto Y = [&](double y) { return T + ph * (1 - (std::clamp(y, a.ymin, a.ymax) - a.ymin) / yspan); };
  std::string s = fmt::format(
      R"~(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" font-family="sans-serif" font-size="12">)~", W, H);
  s += fmt::format(R"~(<text x="{}" y="18" font-size="14" font-weight="bold">{}</text>)~", L, HtmlEscape(a.title));
  const double ystep = NiceStep(yspan, a.yticks), xstep = NiceStep(xspan, a.xticks);
  for (double v = std::ceil(a.ymin / ystep - 1e-9) * ystep; v <= a.ymax + 1e-9 * yspan; v += ystep) {
    s += fmt::format(R"~(<line x1="{}" y1="{:.1f}" x2="{}" y2="{:.1f}" stroke="#ddd"/>)~", L, Y(v), L + pw, Y(v));
    s += fmt::format(R"~(<text x="{}" y="{:.1f}" text-anchor="end">{}</text>)~", L - 6, Y(v) + 4, TickLabel(v));
  }
  for (double v = std::ceil(a.xmin / xstep - 1e-9) * xstep; v <= a.xmax + 1e-9 * xspan; v += xstep) {
    s += fmt::format(R"~(<line x1="{:.1f}" y1="{}" x2="{:.1f}" y2="{}" stroke="#eee"/>)~", X(v), T, X(v), T + ph);
    s += fmt::format(R"~(<text x="{:.1f}" y="{}" text-anchor="middle">{}</text>)~", X(v), T + ph + 16, TickLabel(v));
  }
  s += fmt::format(R"~(<text x="{}" y="{}" text-anchor="middle">{}</text>)~", L + pw / 2, H - 6, HtmlEscape(a.xlabel));
  s += fmt::format(R"~(<text x="14" y="{0}" transform="rotate(-90 14 {0})" text-anchor="middle">{1}</text>)~", T + ph / 2,
                   HtmlEscape(a.ylabel));
  int legend = 0;
  for (const SvgSeries& sr : series) {
    const char* color = kPalette[static_cast<size_t>(sr.color) % std::size(kPalette)];
    std::string d;
    double last_y = 0;
    for (const auto& [x, y] : sr.points) {
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      if (d.empty()) {
        d = fmt::format("M{:.1f},{:.1f}", X(x), Y(y));
      } else {
        if (sr.step) d += fmt::format(" L{:.1f},{:.1f}", X(x), Y(last_y));
        d += fmt::format(" L{:.1f},{:.1f}", X(x), Y(y));
      }
      last_y = y;
    }
    if (d.empty()) continue;
    if (sr.faint_dashed) {
      s += fmt::format(R"~(<path d="{}" fill="none" stroke="{}" stroke-width="3" stroke-opacity="0.35" stroke-dasharray="6 4"/>)~", d, color);
    } else {
      s += fmt::format(R"~(<path d="{}" fill="none" stroke="{}" stroke-width="1.5"/>)~", d, color);
    }
    if (!sr.label.empty()) {
      const double ly = T + 14 + 18.0 * legend++;
      s += fmt::format(R"~(<line x1="{}" y1="{:.1f}" x2="{}" y2="{:.1f}" stroke="{}" stroke-width="2"/><text x="{}" y="{:.1f}">{}</text>)~",
                       L + pw + 12, ly, L + pw + 34, ly, color, L + pw + 40, ly + 4, HtmlEscape(sr.label));
    }
  }
  if (!a.legend_note.empty()) {
    const double ly = T + 14 + 18.0 * legend + 6;
    s += fmt::format(R"~(<line x1="{}" y1="{:.1f}" x2="{}" y2="{:.1f}" stroke="#555" stroke-width="3" stroke-opacity="0.35" stroke-dasharray="6 4"/><text x="{}" y="{:.1f}">{}</text>)~",
                     L + pw + 12, ly, L + pw + 34, ly, L + pw + 40, ly + 4, HtmlEscape(a.legend_note));
  }
  return s + "</svg>";
}

std::string SvgBarChart(const SvgBars& b) {
  const double W = 720, H = 380, L = 64, R = 150, T = 30, B = 60;
  const double pw = W - L - R, ph = H - T - B;
  double ymax = b.ymax;
  for (const auto& s : b.series)
    for (double v : s.values) ymax = std::max(ymax, v);
  if (ymax <= 0) ymax = 1;
  auto Y = [&](double y) { return T + ph * (1 - std::clamp(y, 0.0, ymax) / ymax); };
  std::string s = fmt::format(
      R"~(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" font-family="sans-serif" font-size="12">)~", W, H);
  s += fmt::format(R"~(<text x="{}" y="18" font-size="14" font-weight="bold">{}</text>)~", L, HtmlEscape(b.title));
  const double step = NiceStep(ymax, 5);
  for (double v = 0; v <= ymax + 1e-9 * ymax; v += step) {
    s += fmt::format(R"~(<line x1="{}" y1="{:.1f}" x2="{}" y2="{:.1f}" stroke="#ddd"/>)~", L, Y(v), L + pw, Y(v));
    s += fmt::format(R"~(<text x="{}" y="{:.1f}" text-anchor="end">{}</text>)~", L - 6, Y(v) + 4, TickLabel(v));
  }
  const size_t groups = b.groups.size(), ns = std::max<size_t>(1, b.series.size());
  const double gw = groups > 0 ? pw / static_cast<double>(groups) : pw, bw = gw * 0.8 / static_cast<double>(ns);
  for (size_t g = 0; g < groups; ++g) {
    const double gx = L + gw * static_cast<double>(g);
    s += fmt::format(R"~(<text x="{:.1f}" y="{}" text-anchor="middle">{}</text>)~", gx + gw / 2, T + ph + 16,
                     HtmlEscape(b.groups[g]));
    for (size_t k = 0; k < b.series.size(); ++k) {
      if (g >= b.series[k].values.size()) continue;
      const double v = b.series[k].values[g];
      const double x = gx + gw * 0.1 + bw * static_cast<double>(k);
      s += fmt::format(R"~(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="{}"><title>{}: {:g}</title></rect>)~",
                       x, Y(v), bw * 0.92, T + ph - Y(v), kPalette[b.series[k].color % 8], HtmlEscape(b.series[k].label), v);
    }
  }
  for (const auto& [label, y] : b.marks) {
    s += fmt::format(R"~(<line x1="{}" y1="{:.1f}" x2="{}" y2="{:.1f}" stroke="#000" stroke-dasharray="6 4"/>)~", L, Y(y),
                     L + pw, Y(y));
    s += fmt::format(R"~(<text x="{}" y="{:.1f}">{}</text>)~", L + pw + 4, Y(y) + 4, HtmlEscape(label));
  }
  for (size_t k = 0; k < b.series.size(); ++k) {
    const double ly = T + 10 + 18 * static_cast<double>(k);
    s += fmt::format(R"~(<rect x="{}" y="{:.1f}" width="12" height="12" fill="{}"/>)~", L + pw + 10, ly,
                     kPalette[b.series[k].color % 8]);
    s += fmt::format(R"~(<text x="{}" y="{:.1f}">{}</text>)~", L + pw + 28, ly + 10, HtmlEscape(b.series[k].label));
  }
  s += fmt::format(R"~(<text x="{}" y="{}" text-anchor="middle">{}</text>)~", L + pw / 2, H - 8, HtmlEscape(b.xlabel));
  s += "</svg>";
  return s;
}

}  // namespace tidal::sim

// Small self-contained SVG line charts for the HTML reports: no scripts, no
// network, readable in any browser and diff-able as text.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace tidal::sim {

struct SvgSeries {
  std::string label;                               // "" = not in the legend
  std::vector<std::pair<double, double>> points;   // (x, y), drawn in order
  int color = 0;                                   // index into a fixed palette
  bool faint_dashed = false;                       // wide, translucent, dashed (a reference curve)
  bool step = false;                               // draw as a step function
};

struct SvgAxes {
  std::string title, xlabel, ylabel;
  double xmin = 0, xmax = 1, ymin = 0, ymax = 1;
  int xticks = 10, yticks = 5;
  std::string legend_note;  // extra legend line for faint dashed series, e.g. "published"
};

std::string SvgLineChart(const SvgAxes& axes, const std::vector<SvgSeries>& series);

// Grouped bars: one group per category, one bar per series in each; marks
// are dashed horizontal lines (a target) with a label.
struct SvgBarSeries {
  std::string label;
  std::vector<double> values;  // one per group
  int color = 0;
};
struct SvgBars {
  std::string title, xlabel;
  std::vector<std::string> groups;
  std::vector<SvgBarSeries> series;
  std::vector<std::pair<std::string, double>> marks;
  double ymax = 0;  // at least this (the data's maximum otherwise)
};
std::string SvgBarChart(const SvgBars& bars);

// Escapes text for HTML element content and attribute values.
std::string HtmlEscape(const std::string& s);

}  // namespace tidal::sim

#include <gtest/gtest.h>

#include "sim/queue_report.h"
#include "sim/svg.h"

namespace tidal::sim {
namespace {

TEST(SvgTest, DrawsSeriesWithNiceTicksAndEscapesText) {
  const std::string svg = SvgLineChart({"a<b", "x", "y", 0, 744, 0, 1, 5, 5, "published"},
                                       {{"s&t", {{0, 0}, {744, 1}}, 0, false, false}, {"", {{0, 1}}, 1, true, false}});
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  EXPECT_NE(svg.find("a&lt;b"), std::string::npos);
  EXPECT_NE(svg.find("s&amp;t"), std::string::npos);
  EXPECT_NE(svg.find(">200</text>"), std::string::npos);  // 744/5 -> step 200
  EXPECT_EQ(svg.find(">148.8</text>"), std::string::npos);
  EXPECT_NE(svg.find("stroke-dasharray"), std::string::npos);
  EXPECT_NE(svg.find(">published</text>"), std::string::npos);
}

TEST(QueueReportTest, ShowsMetricsAndPlots) {
  QueueSimResult r;
  r.policy = "bestfit";
  r.queue = "fifo";
  r.total_gpus = 4;
  r.nodes = 1;
  r.start_s = 0;
  r.end_s = 100;
  r.queue_delay_s.mean = 12.5;
  QueueJobRecord a{0, "a", 2, 1000, 0, 0, 50, -1, JobOutcome::kFinished, ""};
  QueueJobRecord b{1, "b", 4, 1000, 10, 50, 100, 50, JobOutcome::kFinished, ""};
  QueueJobRecord c{2, "c", 8, 1000, 10, -1, -1, -1, JobOutcome::kUnresolvable, "too big"};
  r.jobs = {a, b, c};
  const std::string html = QueueReportHtml(r);
  EXPECT_NE(html.find("Queue experiment — fifo / bestfit"), std::string::npos);
  EXPECT_NE(html.find("12.5"), std::string::npos);
  size_t charts = 0;
  for (size_t p = html.find("<svg"); p != std::string::npos; p = html.find("<svg", p + 1)) ++charts;
  EXPECT_EQ(charts, 3u);
}

}  // namespace
}  // namespace tidal::sim

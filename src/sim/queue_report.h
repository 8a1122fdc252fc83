// report.html for the queue experiment: the headline metrics, GPUs in use and
// jobs waiting over the replay, and the distributions of queueing delay and
// JCT — self-contained SVG, beside summary.json and jobs.csv.
#pragma once

#include <string>

#include "common/result.h"
#include "sim/queue_sim.h"

namespace tidal::sim {

std::string QueueReportHtml(const QueueSimResult& r);
Status WriteQueueReportHtml(const QueueSimResult& r, const std::string& path);

}  // namespace tidal::sim

// Output of the fill experiment: the three per-run curve files in exactly the
// layout of the FGD artifact's expected results, the published curves read
// back for comparison, and report.json / report.html (SVG plots of our mean
// curves over the published ones — self-contained, no scripts or network).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/result.h"
#include "sim/fill.h"

namespace tidal::sim {

// Mean curves per sc_policy label ("06-FGD") over all seeds of one workload.
struct PublishedCurves {
  std::string source;  // file the curves came from
  std::map<std::string, Curve> alloc_pct, frag_pct, frag_ratio_pct;
  std::map<std::string, int> seeds;  // label -> number of seeds averaged
};

// Reads the published analysis_{allo,frag,frag_ratio}_discrete.csv files in
// `dir` for `workload` (e.g. "openb_pod_list_default"). Missing frag files are
// tolerated; a missing allocation file or workload is an error.
Result<PublishedCurves> ReadPublishedCurves(const std::string& dir, const std::string& workload);

// Mean over runs of the same policy, bucket by bucket (a bucket missing in any
// run is left out of that run's contribution).
Curve MeanCurve(const std::vector<const FillResult*>& runs, Curve FillResult::*curve);

struct FillReportInput {
  std::string workload;  // pod file base name without .csv
  std::string nodes_path, pods_path;
  std::vector<FillResult> runs;
  const PublishedCurves* published = nullptr;  // may be null
};

// Writes analysis_allo_discrete.csv, analysis_frag_ratio_discrete.csv,
// analysis_frag_discrete.csv, report.json and report.html into `dir`.
Status WriteFillOutputs(const std::string& dir, const FillReportInput& in);

// Python-style float text ("12.0", "0.25") for byte-compatible CSVs.
std::string PyFloat(double v);

}  // namespace tidal::sim

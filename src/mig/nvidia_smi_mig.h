// Readers for what `nvidia-smi mig` prints about GPU instances:
//   -lgip   the GPU instance profiles (a box: name, ID, free/total, memory,
//           engines), two lines a profile;
//   -lgipp  their placements, one line a profile:
//           "GPU  0 Profile ID  9 Placements: {0,4}:4" (the driver writes
//           "Placement :" where a profile has a single start; both read);
//   -lgi    the GPU instances that exist (a box: name, profile ID, instance
//           ID, "Start:Size"), one line an instance.
// Fixtures: shared/fixtures/nvidia-smi-mig/ (the MIG User Guide's A100
// outputs). Boxes may be any width; CRLF line ends are accepted. Every error
// names source:line and the field, and says what to capture instead.
//
// LayoutsFromLgi turns -lgi rows into validated Layouts of one geometry;
// CheckGeometry compares tidal's built-in geometry with what a GPU reports,
// so a driver that renames a profile or moves its placements is caught.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "mig/geometry.h"

namespace tidal::mig {

// Where a row was read: "source:line" in messages.
struct SourceLine {
  std::string source;
  int line = 0;
  std::string ToString() const { return source + ":" + std::to_string(line); }
  friend bool operator==(const SourceLine&, const SourceLine&) = default;
};

// One profile of `nvidia-smi mig -lgip`.
struct GiProfileRow {
  SourceLine at;                    // the row's first line
  int gpu = 0;
  std::string name;                 // "1g.5gb+me" (the "MIG " prefix dropped)
  int id = 0;                       // GPU instance profile ID
  int free = 0;                     // Instances Free/Total
  int total = 0;
  double memory_gib = 0;            // "Memory GiB", e.g. 4.75
  bool p2p = false;                 // "P2P" Yes/No
  std::map<std::string, int> units; // the engine columns the header names: SM DEC ENC CE JPEG OFA
  friend bool operator==(const GiProfileRow&, const GiProfileRow&) = default;
};

// One line of `nvidia-smi mig -lgipp`.
struct PlacementRow {
  SourceLine at;
  int gpu = 0;
  int profile_id = 0;
  std::vector<int> starts;          // valid start memory slices
  int size = 0;                     // memory slices an instance takes
  friend bool operator==(const PlacementRow&, const PlacementRow&) = default;
};

// One instance of `nvidia-smi mig -lgi`.
struct GpuInstanceRow {
  SourceLine at;
  int gpu = 0;
  std::string name;                 // "3g.20gb"
  int profile_id = 0;
  int instance_id = 0;
  int start = 0;                    // Placement Start:Size
  int size = 0;
  friend bool operator==(const GpuInstanceRow&, const GpuInstanceRow&) = default;
};

Result<std::vector<GiProfileRow>> ReadLgip(std::string_view text, std::string_view source);
Result<std::vector<PlacementRow>> ReadLgipp(std::string_view text, std::string_view source);
// "No GPU instances found" (MIG on, nothing created) reads as no rows.
Result<std::vector<GpuInstanceRow>> ReadLgi(std::string_view text, std::string_view source);

// The layout of each GPU the rows mention, validated against `g`: an
// instance whose profile ID, name or size is not g's, whose start is not one
// of its placements, or that overlaps another, is an error naming its
// source:line. GPUs without instances do not appear.
Result<std::map<int, Layout>> LayoutsFromLgi(const std::vector<GpuInstanceRow>& rows, const Geometry& g, DriverCaps caps = {});

// OK when every GPU in the rows reports exactly g's profiles: same names and
// IDs, Total = max_instances, same placements and sizes. Otherwise one error
// listing every disagreement with its source:line. An empty list is not
// checked (pass {} to check only -lgip or only -lgipp); two non-empty lists
// must name the same GPUs.
Status CheckGeometry(const Geometry& g, const std::vector<GiProfileRow>& lgip, const std::vector<PlacementRow>& lgipp);

}  // namespace tidal::mig

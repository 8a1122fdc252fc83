// Every topology format tidal reads and writes, behind two calls.
//
// Readers (readers/*.h) take the whole text and a source name for messages,
// and return a Topology or an error naming the file, line and problem. A file
// that is only part of a fabric, has a cycle, puts a host under two leaves,
// names an unknown switch or stops mid-line is an error, never a silently
// dropped node; `tidal topo` exits 2 on any of them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "topology/topology.h"

namespace tidal::topo {

enum class Format { kAuto, kNvidiaSmi, kIbnetdiscover, kSlurmConf, kSlurmYaml, kK8sLabels, kLingjunCsv, kTidalYaml };
enum class ExportFormat { kSlurmConf, kSlurmYaml, kKueue, kKai, kVolcano, kTidalYaml };

std::string_view FormatName(Format f);
Result<Format> ParseFormat(std::string_view name);
std::string_view ExportFormatName(ExportFormat f);
Result<ExportFormat> ParseExportFormat(std::string_view name);

// Guesses the format from the content (first meaningful lines), with the
// file name as a hint only where the content is ambiguous.
Result<Format> DetectFormat(std::string_view text, std::string_view source);

Result<Topology> ParseTopology(std::string_view text, const std::string& source, Format format = Format::kAuto);
Result<Topology> ReadTopology(const std::string& path, Format format = Format::kAuto);

Result<std::string> WriteTopology(const Topology& t, ExportFormat format);

}  // namespace tidal::topo

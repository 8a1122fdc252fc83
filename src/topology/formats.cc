#include "topology/formats.h"

#include <array>
#include <utility>

#include "common/csv.h"
#include "common/strings.h"
#include "topology/readers/ibnetdiscover.h"
#include "topology/readers/k8s_labels.h"
#include "topology/readers/lingjun.h"
#include "topology/readers/nvidia_smi.h"
#include "topology/readers/slurm.h"
#include "topology/readers/tidal_yaml.h"
#include "topology/writers/k8s.h"
#include "topology/writers/slurm.h"

namespace tidal::topo {
namespace {

constexpr std::array<std::pair<Format, std::string_view>, 8> kFormats = {{
    {Format::kAuto, "auto"},
    {Format::kNvidiaSmi, "nvidia-smi"},
    {Format::kIbnetdiscover, "ibnetdiscover"},
    {Format::kSlurmConf, "slurm-conf"},
    {Format::kSlurmYaml, "slurm-yaml"},
    {Format::kK8sLabels, "k8s-labels"},
    {Format::kLingjunCsv, "lingjun-csv"},
    {Format::kTidalYaml, "tidal-yaml"},
}};
constexpr std::array<std::pair<ExportFormat, std::string_view>, 6> kExports = {{
    {ExportFormat::kSlurmConf, "slurm-conf"},
    {ExportFormat::kSlurmYaml, "slurm-yaml"},
    {ExportFormat::kKueue, "kueue"},
    {ExportFormat::kKai, "kai"},
    {ExportFormat::kVolcano, "volcano"},
    {ExportFormat::kTidalYaml, "tidal-yaml"},
}};

// The first `n` lines that are not blank, without trailing CR.
std::vector<std::string_view> HeadLines(std::string_view text, size_t n) {
  std::vector<std::string_view> out;
  size_t pos = 0;
  while (pos < text.size() && out.size() < n) {
    size_t e = text.find('\n', pos);
    if (e == std::string_view::npos) e = text.size();
    std::string_view line = text.substr(pos, e - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") != std::string_view::npos) out.push_back(line);
    pos = e + 1;
  }
  return out;
}

bool StartsWithNoCase(std::string_view s, std::string_view p) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  return s.size() >= p.size() && AsciiLower(s.substr(0, p.size())) == AsciiLower(p);
}

}  // namespace

std::string_view FormatName(Format f) {
  for (const auto& [k, n] : kFormats)
    if (k == f) return n;
  return "?";
}

Result<Format> ParseFormat(std::string_view name) {
  for (const auto& [k, n] : kFormats)
    if (n == name) return k;
  return MakeError(ErrorCode::kInvalidArgument,
                   "unknown --format '{}'; use auto, nvidia-smi, ibnetdiscover, slurm-conf, slurm-yaml, k8s-labels, "
                   "lingjun-csv or tidal-yaml",
                   name);
}

std::string_view ExportFormatName(ExportFormat f) {
  for (const auto& [k, n] : kExports)
    if (k == f) return n;
  return "?";
}

Result<ExportFormat> ParseExportFormat(std::string_view name) {
  for (const auto& [k, n] : kExports)
    if (n == name) return k;
  return MakeError(ErrorCode::kInvalidArgument,
                   "unknown --to '{}'; use slurm-conf, slurm-yaml, kueue, kai, volcano or tidal-yaml", name);
}

Result<Format> DetectFormat(std::string_view text, std::string_view source) {
  const auto lines = HeadLines(text, 400);
  if (lines.empty()) return MakeError(ErrorCode::kParse, "{}: the file is empty; a topology file has at least one host", source);
  int gpu_rows = 0;
  for (std::string_view l : lines) {
    if (StartsWithNoCase(l, "SwitchName=") || StartsWithNoCase(l, "BlockName=") || StartsWithNoCase(l, "RingName=") ||
        StartsWithNoCase(l, "BlockSizes="))
      return Format::kSlurmConf;
    if (StartsWithNoCase(l, "- topology:")) return Format::kSlurmYaml;
    if (StartsWithNoCase(l, "version:")) return Format::kTidalYaml;
    if (StartsWithNoCase(l, "ip,DSW,PSW,ASW") || StartsWithNoCase(l, "\xEF\xBB\xBFip,DSW")) return Format::kLingjunCsv;
    if (StartsWithNoCase(l, "#")) continue;  // comments say nothing reliable (a Slurm file may call itself a topology file)
    if (StartsWithNoCase(l, "Switch") || StartsWithNoCase(l, "Ca ") || StartsWithNoCase(l, "Ca\t") ||
        StartsWithNoCase(l, "Ca  :") || StartsWithNoCase(l, "CA:") || StartsWithNoCase(l, "vendid=") ||
        StartsWithNoCase(l, "Non-Chassis Nodes"))
      return Format::kIbnetdiscover;
    if (StartsWithNoCase(l, "GPU0") && (l.find(" X") != std::string_view::npos || l.find("\tX") != std::string_view::npos)) ++gpu_rows;
    if (l.find("GPU0") != std::string_view::npos && (l.find("GPU1") != std::string_view::npos || l.find("CPU Affinity") != std::string_view::npos))
      ++gpu_rows;
    if (l.find("\"kind\"") != std::string_view::npos && l.find("NodeList") != std::string_view::npos) return Format::kK8sLabels;
    if (l.find("nvidia.com/") != std::string_view::npos || l.find("kubernetes.io/") != std::string_view::npos ||
        l.find("topograph.run/") != std::string_view::npos)
      return Format::kK8sLabels;
    if (StartsWithNoCase(l, "NAME") && l.find("LABELS") != std::string_view::npos) return Format::kK8sLabels;
    // Node objects in JSON (kubectl prints "kind": "List" last, each item's "kind": "Node" near the top) and the
    // YAML streams of tidal's Kueue/KAI/Volcano writers.
    if (l.find("\"kind\"") != std::string_view::npos && l.find("\"Node\"") != std::string_view::npos) return Format::kK8sLabels;
    if (StartsWithNoCase(l, "apiVersion: topology.volcano.sh/") || StartsWithNoCase(l, "apiVersion: kueue.x-k8s.io/") ||
        StartsWithNoCase(l, "apiVersion: kai.scheduler/") || StartsWithNoCase(l, "kind: Node") || StartsWithNoCase(l, "kind: HyperNode"))
      return Format::kK8sLabels;
  }
  if (gpu_rows > 0) return Format::kNvidiaSmi;
  // `nvidia-smi nvlink -R` / `-s` ("GPU 0: ... (UUID: ...)" then "Link 0: ..."):
  // not a matrix, but the nvidia-smi reader says so and which command to run.
  bool gpu_uuid = false, nvlink_line = false;
  for (std::string_view l : lines) {
    gpu_uuid = gpu_uuid || (StartsWithNoCase(l, "GPU ") && l.find("(UUID:") != std::string_view::npos);
    nvlink_line = nvlink_line || StartsWithNoCase(l, "Link ");
  }
  if (gpu_uuid && nvlink_line) return Format::kNvidiaSmi;
  // ibnetdiscover output may start with a stray stderr line; look further.
  if (text.find("\nSwitch") != std::string_view::npos && text.find("\"S-") != std::string_view::npos) return Format::kIbnetdiscover;
  return MakeError(ErrorCode::kParse,
                   "{}: cannot tell the topology format from its first lines; pass --format (nvidia-smi, ibnetdiscover, "
                   "slurm-conf, slurm-yaml, k8s-labels, lingjun-csv or tidal-yaml)",
                   source);
}

Result<Topology> ParseTopology(std::string_view text, const std::string& source, Format format) {
  if (format == Format::kAuto) {
    TIDAL_ASSIGN_OR_RETURN(format, DetectFormat(text, source));
  }
  switch (format) {
    case Format::kNvidiaSmi: return ReadNvidiaSmiTopo(text, source);
    case Format::kIbnetdiscover: return ReadIbnetdiscover(text, source);
    case Format::kSlurmConf: return ReadSlurmTopologyConf(text, source);
    case Format::kSlurmYaml: return ReadSlurmTopologyYaml(text, source);
    case Format::kK8sLabels: return ReadK8sNodeLabels(text, source);
    case Format::kLingjunCsv: return ReadLingjunCsv(text, source);
    case Format::kTidalYaml: return ReadTidalYaml(text, source);
    case Format::kAuto: break;
  }
  return MakeError(ErrorCode::kInternal, "unhandled topology format");
}

Result<Topology> ReadTopology(const std::string& path, Format format) {
  TIDAL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  return ParseTopology(text, path, format);
}

Result<std::string> WriteTopology(const Topology& t, ExportFormat format) {
  switch (format) {
    case ExportFormat::kSlurmConf: return WriteSlurmTopologyConf(t);
    case ExportFormat::kSlurmYaml: return WriteSlurmTopologyYaml(t);
    case ExportFormat::kKueue: return WriteKueueTopology(t);
    case ExportFormat::kKai: return WriteKaiTopology(t);
    case ExportFormat::kVolcano: return WriteVolcanoHyperNodes(t);
    case ExportFormat::kTidalYaml: return WriteTidalYaml(t);
  }
  return MakeError(ErrorCode::kInternal, "unhandled export format");
}

}  // namespace tidal::topo

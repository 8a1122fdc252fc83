// The Alibaba Lingjun 2023 fabric, topo.csv (alibaba/alibaba-lingjun-dataset-2023
// data/topo.csv; ../shared/traces/alibaba-lingjun-2023/README.md): one row per
// host, `ip,DSW,PSW,ASW`. ASW labels repeat under different PSWs, so a ToR is
// named "PSW/ASW" (the README's strict-tree reading, the only one that gives a
// tree): host -> leaf PSW/ASW -> spine PSW -> core DSW.
#include "topology/readers/lingjun.h"

#include <array>
#include <map>
#include <unordered_map>

#include <fmt/format.h>

#include "common/csv.h"
#include "topology/builder.h"

namespace tidal::topo {

Result<Topology> ReadLingjunCsv(std::string_view text, const std::string& source, const LingjunOptions& options) {
  if (options.gpus_per_host < 0 || options.gpus_per_host > 4096) {
    return MakeError(ErrorCode::kInvalidArgument, "{}: {} GPUs per host; give 0 to 4096", source, options.gpus_per_host);
  }
  TIDAL_ASSIGN_OR_RETURN(CsvTable csv, CsvTable::Parse(text, source));
  constexpr std::array<std::string_view, 4> kHeader = {"ip", "DSW", "PSW", "ASW"};
  bool header_ok = csv.header().size() == kHeader.size();
  for (size_t i = 0; header_ok && i < kHeader.size(); ++i) header_ok = csv.header()[i] == kHeader[i];
  if (!header_ok) {
    std::string have;
    for (const auto& h : csv.header()) have += (have.empty() ? "" : ",") + h;
    return MakeError(ErrorCode::kParse, "{}:1: the header is '{}'; a Lingjun topo.csv starts with 'ip,DSW,PSW,ASW'", source, have);
  }
  if (csv.rows().empty()) return MakeError(ErrorCode::kParse, "{}: no hosts after the header", source);

  TopologyBuilder b(source);
  std::unordered_map<std::string, DomainId> dsw, psw, tor;
  std::unordered_map<std::string, std::pair<std::string, int>> psw_parent;  // PSW -> (DSW, line)
  std::unordered_map<std::string, const CsvRow*> host_row;
  HostLayout layout;
  layout.gpus = options.gpus_per_host;
  layout.gpu_model = options.gpu_model;
  layout.nvlink = true;
  for (const CsvRow& r : csv.rows()) {
    std::array<std::string, 4> f;
    for (size_t c = 0; c < 4; ++c) {
      TIDAL_ASSIGN_OR_RETURN(std::string_view v, r.Str(c));
      if (v.empty()) return MakeError(ErrorCode::kParse, "{}: empty; every row names a host and its DSW, PSW and ASW", r.Where(c));
      f[c] = std::string(v);
    }
    const auto& [ip, d, p, a] = f;
    if (auto [it, inserted] = host_row.emplace(ip, &r); !inserted) {
      const CsvRow& first = *it->second;
      const bool same = first.field(1) == d && first.field(2) == p && first.field(3) == a;
      if (same)
        return MakeError(ErrorCode::kParse, "{}: host {} is listed twice (first at line {}); remove one row", r.Where(0), ip, first.line());
      return MakeError(ErrorCode::kParse, "{}: host {} is at {}/{}/{} here but at {}/{}/{} on line {}; a host has one place in the fabric",
                       r.Where(0), ip, d, p, a, first.field(1), first.field(2), first.field(3), first.line());
    }
    // PSW labels are unique cluster-wide, so a PSW under two DSWs is a contradiction, not a repeat.
    if (auto [it, inserted] = psw_parent.emplace(p, std::make_pair(d, r.line())); !inserted && it->second.first != d) {
      return MakeError(ErrorCode::kParse,
                       "{}: PSW {} is under DSW {} here but under DSW {} on line {}; the strict tree needs one DSW per PSW", r.Where(1), p,
                       d, it->second.first, it->second.second);
    }
    const std::string where = fmt::format("{}:{}", source, r.line());
    auto dit = dsw.find(d);
    if (dit == dsw.end()) dit = dsw.emplace(d, b.AddDomain(Level::kCore, d, kNoDomain, where)).first;
    auto pit = psw.find(p);
    if (pit == psw.end()) pit = psw.emplace(p, b.AddDomain(Level::kSpine, p, dit->second, where)).first;
    const std::string tor_name = p + "/" + a;
    auto tit = tor.find(tor_name);
    if (tit == tor.end()) tit = tor.emplace(tor_name, b.AddDomain(Level::kLeaf, tor_name, pit->second, where)).first;
    b.AddHost(ip, tit->second, layout, where);
  }
  b.AddNote(fmt::format(
      "GPUs per host are not in topo.csv: each host is given {} {} GPUs on one NVSwitch (the dataset README's assumption: worker pods "
      "request 8 GPUs each; the GPU model is not stated)",
      options.gpus_per_host, options.gpu_model.empty() ? "unnamed" : options.gpu_model));
  b.AddNote(fmt::format("ToRs are named PSW/ASW: ASW labels repeat under different PSWs ({} ToRs under {} PSWs)", tor.size(), psw.size()));
  return std::move(b).Build();
}

}  // namespace tidal::topo

// `ibnetdiscover` .topo files: per node a few key=value lines (vendid,
// devid, sysimgguid, switchguid/caguid), a block header
//   Switch  36 "S-ec0d9a0300ec8240"   # "SwitchIB Mellanox Technologies" base port 0 lid 48 lmc 0
//   Ca      2 "H-0002c902002789ac"    # "compute-00-01 HCA-1"
// and one line per linked port
//   [1]  "H-506b4b03003fa9b6"[1](506b4b03003fa9b6)   # "node018 HCA-1" lid 67 4xEDR
//   [1](2c902002789ad)  "S-000b8cffff0053ee"[1]     # lid 1 lmc 0 "MT43132 Mellanox Technologies" lid 3 4xSDR
// A block runs until a blank line, a key=value line or the next header. Lines
// of no known shape (a stray stderr line before the first block) are noted
// and end the block, so a damaged header never hands its ports to the block
// above it. iblinkinfo dumps go to ibnetdiscover_linkinfo.cc; ibhosts and
// ibswitches lists (no links) are an error saying what to run instead.
#include "topology/readers/ibnetdiscover.h"

#include <fmt/format.h>

#include "topology/readers/ibnetdiscover_fabric.h"
#include "topology/readers/text_lines.h"

namespace tidal::topo {
namespace {

using ib::Fabric;
using ib::Kind;
using ib::Node;
using ib::Port;

struct Cursor {
  std::string_view s;
  size_t i = 0;
  void SkipSpace() {
    while (i < s.size() && IsFieldSpace(s[i])) ++i;
  }
  bool Eat(char c) {
    if (i < s.size() && s[i] == c) return ++i, true;
    return false;
  }
  // The text up to `c`, consuming both; nullopt if there is no `c`.
  std::optional<std::string_view> Until(char c) {
    const size_t e = s.find(c, i);
    if (e == std::string_view::npos) return std::nullopt;
    const std::string_view out = s.substr(i, e - i);
    i = e + 1;
    return out;
  }
  std::optional<int64_t> Number(int64_t max) {
    const size_t b = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    return ParseDecimal(s.substr(b, i - b), max);
  }
  std::string_view Rest() const { return s.substr(std::min(i, s.size())); }
};

// "S-0002c9020046c588" -> (switch, key).
std::optional<std::pair<Kind, std::string>> ParseId(std::string_view id) {
  if (id.size() < 3 || id[1] != '-') return std::nullopt;
  const Kind k = id[0] == 'S' ? Kind::kSwitch : id[0] == 'H' ? Kind::kCa : Kind::kRouter;
  if (id[0] != 'S' && id[0] != 'H' && id[0] != 'R') return std::nullopt;
  auto key = ib::GuidKey(id.substr(2));
  if (!key) return std::nullopt;
  return std::make_pair(k, *key);
}

// The first quoted string of a comment: the node description.
std::string FirstQuoted(std::string_view comment) {
  const size_t b = comment.find('"');
  if (b == std::string_view::npos) return "";
  const size_t e = comment.find('"', b + 1);
  return std::string(e == std::string_view::npos ? comment.substr(b + 1) : comment.substr(b + 1, e - b - 1));
}

std::optional<Kind> HeaderKind(std::string_view word) {
  if (word == "Switch") return Kind::kSwitch;
  if (word == "Ca") return Kind::kCa;
  if (word == "Rt") return Kind::kRouter;
  return std::nullopt;
}

// ibhosts / ibswitches / ibrouters: "Ca  : 0x0002c903000d7aac ports 1 "ip-160 HCA-1"".
std::optional<std::string_view> ListTool(std::string_view t) {
  const auto f = SplitFields(t);
  if (f.size() < 4) return std::nullopt;
  std::string_view w = f[0];
  size_t next = 1;
  if (w.ends_with(':')) w.remove_suffix(1);
  else if (f[1] == ":") next = 2;
  else return std::nullopt;
  if (next + 2 >= f.size() || !f[next].starts_with("0x") || f[next + 1] != "ports") return std::nullopt;
  if (w == "Ca") return "ibhosts";
  if (w == "Switch") return "ibswitches";
  if (w == "Rt") return "ibrouters";
  return std::nullopt;
}

Status ParseHeader(Fabric& fab, const TextLine& l, Kind kind, Cursor c) {
  const std::string at = fab.Where(l.no);
  c.SkipSpace();
  c.i += ib::KindName(kind).size();
  c.SkipSpace();
  const auto radix = c.Number(4096);
  c.SkipSpace();
  if (!radix || !c.Eat('"')) {
    return MakeError(ErrorCode::kParse, "{}: malformed {} header '{}': expected {} <ports> \"{}-<guid>\"", at, ib::KindName(kind),
                     Printable(TrimSpace(l.text)), ib::KindName(kind), kind == Kind::kCa ? 'H' : kind == Kind::kRouter ? 'R' : 'S');
  }
  const auto id_text = c.Until('"');
  const auto id = id_text ? ParseId(*id_text) : std::nullopt;
  if (!id) {
    return MakeError(ErrorCode::kParse, "{}: malformed node id '{}' (expected S-, H- or R- and up to 16 hex digits)", at,
                     Printable(id_text.value_or(c.Rest())));
  }
  if (id->first != kind) {
    return MakeError(ErrorCode::kParse, "{}: a {} block has the id '{}'; {} ids start with {}-", at, ib::KindName(kind),
                     Printable(*id_text), ib::KindName(kind), kind == Kind::kCa ? 'H' : kind == Kind::kRouter ? 'R' : 'S');
  }
  if (auto it = fab.index.find(id->second); it != fab.index.end()) {
    return MakeError(ErrorCode::kParse, "{}: node {} has a second block (the first is at line {})", at, Printable(*id_text),
                     fab.nodes[it->second].line);
  }
  c.SkipSpace();
  Node n;
  n.kind = kind;
  n.key = id->second;
  n.radix = static_cast<int>(*radix);
  n.line = l.no;
  if (c.Eat('#')) n.desc = FirstQuoted(c.Rest());
  fab.index[n.key] = fab.nodes.size();
  fab.nodes.push_back(std::move(n));
  return Ok();
}

Status ParsePort(Fabric& fab, const TextLine& l, Node& n) {
  const std::string at = fab.Where(l.no);
  auto bad = [&](std::string_view what) {
    return MakeError(ErrorCode::kParse, "{}: malformed port line '{}': {} (expected [port] \"S-<guid>\"[port], as ibnetdiscover writes)",
                     at, Printable(TrimSpace(l.text)), what);
  };
  Cursor c{l.text};
  c.SkipSpace();
  c.Eat('[');
  Port p;
  p.line = l.no;
  const auto port = c.Number(4096);
  if (!port || !c.Eat(']')) return bad("the local port number");
  p.port = static_cast<int>(*port);
  if (c.Eat('(')) {
    const auto guid = c.Until(')');
    if (!guid || !ib::GuidKey(*guid)) return bad("the local port GUID in ( )");
  }
  c.SkipSpace();
  if (!c.Eat('"')) return bad("the peer's quoted id");
  const auto id_text = c.Until('"');
  if (!id_text) return bad("the peer's quoted id is not closed");
  const auto id = ParseId(*id_text);
  if (!id) {
    return MakeError(ErrorCode::kParse, "{}: malformed node id '{}' (expected S-, H- or R- and up to 16 hex digits)", at,
                     Printable(*id_text));
  }
  p.peer_kind = id->first;
  p.peer = id->second;
  const bool open = c.Eat('[');
  const auto peer_port = c.Number(4096);
  if (!open || !peer_port || !c.Eat(']')) return bad("the peer's port number");
  p.peer_port = static_cast<int>(*peer_port);
  if (c.Eat('(')) {
    const auto guid = c.Until(')');
    if (!guid || !ib::GuidKey(*guid)) return bad("the peer's port GUID in ( )");
  }
  c.SkipSpace();
  if (!c.Rest().empty()) {
    if (!c.Eat('#')) return bad(fmt::format("unexpected '{}' after the link", Printable(c.Rest(), 20)));
    const std::string_view comment = c.Rest();
    p.peer_desc = FirstQuoted(comment);
    const auto f = SplitFields(comment);
    if (!f.empty()) {
      if (auto r = ib::RateFromName(f.back())) p.gbps = *r, p.rate = std::string(f.back());
    }
  }
  n.ports.push_back(std::move(p));
  return Ok();
}

bool IsKeyValue(std::string_view t) {
  for (std::string_view k : {"vendid=", "devid=", "sysimgguid=", "switchguid=", "caguid=", "routerguid=", "rtguid="})
    if (t.starts_with(k)) return true;
  return false;
}

Result<Topology> ReadTopo(const std::vector<TextLine>& lines, const std::string& source) {
  Fabric fab;
  fab.source = source;
  int cur = -1;               // the block port lines belong to
  int unknown_before = 0;     // the unrecognised line just before, if any
  std::vector<std::string> ignored;
  for (const TextLine& l : lines) {
    const std::string_view t = TrimSpace(l.text);
    const int prev_unknown = unknown_before;
    unknown_before = 0;
    if (t.empty()) {
      cur = -1;
      continue;
    }
    if (t[0] == '#') continue;
    if (IsKeyValue(t) || t == "Non-Chassis Nodes" || t.starts_with("Chassis ")) {
      cur = -1;
      continue;
    }
    const auto f = SplitFields(t);
    if (auto kind = HeaderKind(f[0]); kind && f.size() >= 2 && ParseDecimal(f[1], 1 << 20)) {
      TIDAL_RETURN_IF_ERROR(ParseHeader(fab, l, *kind, Cursor{l.text}));
      cur = static_cast<int>(fab.nodes.size()) - 1;
      continue;
    }
    if (t[0] == '[') {
      if (cur < 0) {
        return MakeError(ErrorCode::kParse, "{}: a port line outside any Switch or Ca block{}", fab.Where(l.no),
                         prev_unknown ? fmt::format(" (line {} before it is not a block header: '{}')", prev_unknown,
                                                    Printable(TrimSpace(lines[static_cast<size_t>(prev_unknown - 1)].text)))
                                      : std::string("; each block starts with a line like Switch 36 \"S-<guid>\""));
      }
      TIDAL_RETURN_IF_ERROR(ParsePort(fab, l, fab.nodes[static_cast<size_t>(cur)]));
      continue;
    }
    if (auto tool = ListTool(t); tool && fab.nodes.empty()) {
      return MakeError(ErrorCode::kParse,
                       "{}: this is `{}` output (a list of {} without links), not a whole fabric; tidal needs the links to "
                       "place hosts under switches: run `ibnetdiscover > fabric.topo` (or `iblinkinfo`) and read that",
                       fab.Where(l.no), *tool, *tool == "ibhosts" ? "CAs" : *tool == "ibswitches" ? "switches" : "routers");
    }
    cur = -1;
    unknown_before = l.no;
    ignored.push_back(fmt::format("{} '{}'", l.no, Printable(t, 40)));
  }
  if (fab.nodes.empty()) {
    const int line = lines.empty() ? 1 : lines.back().no;
    return MakeError(ErrorCode::kParse, "{}: no Switch or Ca block{}; expected `ibnetdiscover` output", fab.Where(line),
                     lines.empty() ? " (the file is empty)" : "");
  }
  if (!ignored.empty()) {
    std::string list;
    for (size_t i = 0; i < ignored.size() && i < 3; ++i) list += (i ? ", " : "") + ignored[i];
    if (ignored.size() > 3) list += fmt::format(" and {} more", ignored.size() - 3);
    fab.notes.push_back(fmt::format("{}: {} line(s) of no ibnetdiscover shape are ignored (line {})", source, ignored.size(), list));
  }
  return ib::BuildFabric(std::move(fab));
}

}  // namespace

Result<Topology> ReadIbnetdiscover(std::string_view text, const std::string& source) {
  const std::vector<TextLine> lines = SplitLines(text);
  for (const TextLine& l : lines)
    if (l.text.find("==(") != std::string_view::npos) return ib::ReadIblinkinfo(lines, source);
  return ReadTopo(lines, source);
}

}  // namespace tidal::topo

// `iblinkinfo` dumps: a header per node and one line per port,
//   CA: ip-160 HCA-1:
//         0x0002c903000d7aad      5    1[  ] ==( 4X   10.0 Gbps Active/  LinkUp)==>    2   33[  ] "Infiniscale-IV ..." ( )
//   Switch: 0x0002c9020046c588 Infiniscale-IV Mellanox Technologies:
//              2    1[  ] ==( 4X   10.0 Gbps Active/  LinkUp)==>    6    1[  ] "ip-211 mlx4_0" ( )
//              2    2[  ] ==(                Down/ Polling)==>          [  ] "" ( )
// CA lines start with the port GUID, then the LID and port; switch lines with
// the switch's LID and port. Peers are named by LID, so links are resolved
// once every node's LIDs are known; a LID no block owns is taken as a host
// named by the line's description (a partial dump), with BuildFabric's note.
// Switches get the key of their GUID, as in a .topo file, so both dumps of
// one fabric name its switches alike; a CA is keyed by its first port GUID.
#include <fmt/format.h>

#include "topology/readers/ibnetdiscover.h"
#include "topology/readers/ibnetdiscover_fabric.h"
#include "topology/readers/text_lines.h"

namespace tidal::topo::ib {
namespace {

// "  2   33[  ] " -> "  2   33     ": the bracket holds link-state marks, not fields.
std::string NoBrackets(std::string_view s) {
  std::string out;
  bool in = false;
  for (char c : s) {
    if (c == '[') in = true;
    out += in ? ' ' : c;
    if (c == ']') in = false;
  }
  return out;
}

std::string HeaderDesc(std::string_view rest) {
  rest = TrimSpace(rest);
  if (!rest.empty() && rest.back() == ':') rest.remove_suffix(1);
  return std::string(TrimSpace(rest));
}

struct Pending {
  size_t node, port;
  int peer_lid;
};

}  // namespace

Result<Topology> ReadIblinkinfo(const std::vector<TextLine>& lines, const std::string& source) {
  Fabric fab;
  fab.source = source;
  std::vector<Pending> pending;
  std::map<int, std::pair<size_t, int>> by_lid;  // LID -> node, line
  int cur = -1;
  int ignored = 0, first_ignored = 0;
  auto add_node = [&](Kind kind, std::string key, std::string desc, int line) -> Status {
    if (auto it = fab.index.find(key); it != fab.index.end()) {
      return MakeError(ErrorCode::kParse, "{}: node 0x{} has a second block (the first is at line {})", fab.Where(line), key,
                       fab.nodes[it->second].line);
    }
    fab.index[key] = fab.nodes.size();
    fab.nodes.push_back(Node{kind, std::move(key), std::move(desc), 0, line, true, {}});
    cur = static_cast<int>(fab.nodes.size()) - 1;
    return Ok();
  };
  for (const TextLine& l : lines) {
    const std::string_view t = TrimSpace(l.text);
    if (t.empty()) continue;
    const std::string at = fab.Where(l.no);
    if (t.starts_with("CA:")) {
      // Keyed by the line number until its first port line gives the port GUID.
      TIDAL_RETURN_IF_ERROR(add_node(Kind::kCa, fmt::format("ca-at-line-{}", l.no), HeaderDesc(t.substr(3)), l.no));
      continue;
    }
    if (t.starts_with("Switch:") || t.starts_with("Switch ")) {
      const std::string_view rest = TrimSpace(t.substr(7));
      const size_t sp = rest.find_first_of(" \t");
      const std::string_view guid = rest.substr(0, sp);
      const auto key = GuidKey(guid);
      if (!key || !guid.starts_with("0x")) {
        return MakeError(ErrorCode::kParse, "{}: malformed switch GUID '{}' (expected 0x and up to 16 hex digits)", at, Printable(guid));
      }
      TIDAL_RETURN_IF_ERROR(add_node(Kind::kSwitch, *key, HeaderDesc(sp == std::string_view::npos ? "" : rest.substr(sp)), l.no));
      continue;
    }
    const size_t a = t.find("==(");
    if (a == std::string_view::npos) {
      // Not iblinkinfo's shape: noted, and it ends the block above.
      cur = -1;
      if (!ignored++) first_ignored = l.no;
      continue;
    }
    if (cur < 0) {
      return MakeError(ErrorCode::kParse, "{}: a port line outside any CA: or Switch: block; each block starts with such a header", at);
    }
    Node& n = fab.nodes[static_cast<size_t>(cur)];
    auto bad = [&](std::string_view what) {
      return MakeError(ErrorCode::kParse, "{}: malformed iblinkinfo port line '{}': {}", at, Printable(t), what);
    };
    const size_t b = t.find(")==>", a);
    if (b == std::string_view::npos) return bad("no )==> after ==(");
    const std::string left_text = NoBrackets(t.substr(0, a));  // the fields below view into it
    const auto left = SplitFields(left_text);
    const auto mid = SplitFields(t.substr(a + 3, b - a - 3));
    const std::string_view right = t.substr(b + 4);
    const bool ca = n.kind == Kind::kCa;
    if (left.size() != (ca ? 3u : 2u)) return bad(ca ? "expected the port GUID, LID and port before ==(" : "expected the LID and port before ==(");
    if (ca) {
      const auto key = GuidKey(left[0]);
      if (!key || !left[0].starts_with("0x")) return bad("the port GUID is not 0x and up to 16 hex digits");
      if (n.ports.empty() && n.key.starts_with("ca-at-line-")) {
        if (fab.index.contains(*key)) return bad("this port GUID has a block already");
        fab.index.erase(n.key);
        n.key = *key;
        fab.index[n.key] = static_cast<size_t>(cur);
      }
    }
    const auto lid = ParseDecimal(left[ca ? 1 : 0], 0xffff);
    const auto port = ParseDecimal(left[ca ? 2 : 1], 4096);
    if (!lid || !port) return bad("the LID and port must be numbers");
    if (*lid > 0) {
      auto [it, fresh] = by_lid.emplace(static_cast<int>(*lid), std::make_pair(static_cast<size_t>(cur), l.no));
      if (!fresh && it->second.first != static_cast<size_t>(cur)) {
        return bad(fmt::format("LID {} belongs to the block at line {} too", *lid, fab.nodes[it->second.first].line));
      }
    }
    const size_t q = right.find('"');
    const std::string peer_text = NoBrackets(right.substr(0, q));
    const auto peer = SplitFields(peer_text);
    if (peer.empty()) continue;  // a port with nothing at the other end (Down/Polling)
    const auto peer_lid = ParseDecimal(peer[0], 0xffff);
    const auto peer_port = peer.size() == 2 ? ParseDecimal(peer[1], 4096) : std::nullopt;
    if (!peer_lid || !peer_port) return bad("expected the peer's LID and port after )==>");
    Port p;
    p.port = static_cast<int>(*port);
    p.peer_port = static_cast<int>(*peer_port);
    p.line = l.no;
    if (q != std::string_view::npos) {
      const size_t e = right.find('"', q + 1);
      p.peer_desc = std::string(right.substr(q + 1, e == std::string_view::npos ? std::string_view::npos : e - q - 1));
    }
    for (size_t i = 0; i + 1 < mid.size(); ++i) {
      if (auto r = RateFromLanes(mid[i], mid[i + 1])) {
        p.gbps = *r;
        p.rate = fmt::format("{} {} Gbps", mid[i], mid[i + 1]);
        break;
      }
    }
    pending.push_back({static_cast<size_t>(cur), n.ports.size(), static_cast<int>(*peer_lid)});
    n.ports.push_back(std::move(p));
  }
  if (fab.nodes.empty()) {
    return MakeError(ErrorCode::kParse, "{}: no CA: or Switch: block; expected `iblinkinfo` output", fab.Where(lines.empty() ? 1 : lines.front().no));
  }
  for (const Pending& pd : pending) {
    Port& p = fab.nodes[pd.node].ports[pd.port];
    auto it = by_lid.find(pd.peer_lid);
    p.peer = it != by_lid.end() ? fab.nodes[it->second.first].key : fmt::format("lid-{}", pd.peer_lid);
  }
  if (ignored > 0) {
    fab.notes.push_back(fmt::format("{}: {} line(s) of no iblinkinfo shape are ignored (the first at line {})", source, ignored, first_ignored));
  }
  return BuildFabric(std::move(fab));
}

}  // namespace tidal::topo::ib

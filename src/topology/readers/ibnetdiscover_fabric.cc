// From the nodes and port links of an InfiniBand dump to a tree.
//
// Names. A switch is "S-<GUID>" (ibnetdiscover's own id for it): unique,
// stable across runs, easy to find in the dump, and safe in Slurm and
// Kubernetes exports; the node description is not ("SwitchIB Mellanox
// Technologies" on every switch of a fabric). A host is the first word of its
// CAs' description ("node018 HCA-1" -> node018), so the CAs of one host are
// one host. A CA that kept the adapter's default description ("MT23108
// InfiniHost Mellanox Technologies", or none) is named "H-<GUID>", with a
// note, rather than merging unrelated hosts under "MT23108".
//
// Orientation. Leaves are the switches with a CA. Each switch gets its
// distance from the leaves (leaves 1, by BFS over switch links), and a
// switch-switch link runs from the farther switch down to the nearer one.
// At equal distance (two leaves cabled together) the switch with more ports,
// then more switch neighbours, then the lower GUID is the parent. That is a
// strict order, so orientation alone never makes a cycle; a switch or host
// that ends up under two parents that are not parallel is the builder's
// "under both" error, with both places.
//
// Rates. A link's rate is the slower of its two ends' lines. A switch domain
// carries the most common host-port rate below it (ties to the slower), as
// GB/s per GPU; its oversubscription is the bandwidth of its ports towards
// the hosts over that of its ports towards the parents, when above 1.
#include "topology/readers/ibnetdiscover_fabric.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <deque>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "topology/builder.h"
#include "topology/readers/text_lines.h"

namespace tidal::topo::ib {
namespace {

// Per-lane signalling rate and data rate after line encoding, Gb/s: 8b/10b up
// to QDR, 64b/66b for FDR10 to EDR, and the data rates the standard gives
// the PAM4 generations. So 4x EDR is 100 Gb/s = 12.5 GB/s, and 4x NDR 400
// Gb/s = 50 GB/s, the figure DefaultLink assumes.
struct Speed {
  std::string_view name;
  double lane_signal;
  double lane_data;
};
constexpr std::array<Speed, 9> kSpeeds = {{{"SDR", 2.5, 2.0},
                                            {"DDR", 5.0, 4.0},
                                            {"QDR", 10.0, 8.0},
                                            {"FDR10", 10.3125, 10.0},
                                            {"FDR", 14.0625, 14.0625 * 64 / 66},
                                            {"EDR", 25.78125, 25.0},
                                            {"HDR", 53.125, 50.0},
                                            {"NDR", 106.25, 100.0},
                                            {"XDR", 212.5, 200.0}}};

std::optional<int> Width(std::string_view w) {
  if (w.size() < 2 || (w.back() != 'x' && w.back() != 'X')) return std::nullopt;
  const auto n = ParseDecimal(w.substr(0, w.size() - 1), 32);
  if (!n || *n == 0) return std::nullopt;
  return static_cast<int>(*n);
}

std::string Prefix(Kind k) { return k == Kind::kCa ? "H-" : k == Kind::kRouter ? "R-" : "S-"; }
std::string SwitchName(const Node& n) { return Prefix(n.kind) + n.key; }

bool DefaultDescription(std::string_view desc) {
  const auto f = SplitFields(desc);
  if (f.empty()) return true;
  const bool part_number = f[0].size() > 2 && f[0].substr(0, 2) == "MT" && f[0][2] >= '0' && f[0][2] <= '9';
  return part_number || desc.find("Mellanox Technologies") != std::string_view::npos;
}

std::string HostName(const Node& n) {
  if (DefaultDescription(n.desc)) return "H-" + n.key;
  return std::string(SplitFields(n.desc).front());
}

double Mode(const std::map<double, int>& counts) {
  double best = 0;
  int best_n = 0;
  for (const auto& [rate, n] : counts)
    if (n > best_n) best = rate, best_n = n;  // ascending: ties keep the slower rate
  return best;
}

std::string Counts(const std::map<std::string, int>& m) {
  std::vector<std::string> parts;
  for (const auto& [k, n] : m) parts.push_back(fmt::format("{} x{}", k.empty() ? "unrated" : k, n));
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::string FirstFew(const std::vector<std::string>& v, size_t n = 4) {
  std::vector<std::string> head(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(std::min(n, v.size())));
  std::string s = fmt::format("{}", fmt::join(head, ", "));
  if (v.size() > n) s += fmt::format(" and {} more", v.size() - n);
  return s;
}

}  // namespace

std::string_view KindName(Kind k) {
  switch (k) {
    case Kind::kSwitch: return "Switch";
    case Kind::kCa: return "Ca";
    case Kind::kRouter: return "Rt";
  }
  return "?";
}

std::string Fabric::Where(int line) const { return fmt::format("{}:{}", source, line); }

std::optional<std::string> GuidKey(std::string_view hex) {
  if (hex.size() > 2 && hex[0] == '0' && (hex[1] == 'x' || hex[1] == 'X')) hex.remove_prefix(2);
  if (hex.empty() || hex.size() > 16) return std::nullopt;
  std::string key(16 - hex.size(), '0');
  for (char c : hex) {
    if (c >= 'A' && c <= 'F') c = static_cast<char>(c - 'A' + 'a');
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return std::nullopt;
    key += c;
  }
  return key;
}

std::optional<double> RateFromName(std::string_view t) {
  const size_t x = t.find_first_of("xX");
  if (x == std::string_view::npos) return std::nullopt;
  const auto w = Width(t.substr(0, x + 1));
  if (!w) return std::nullopt;
  for (const Speed& s : kSpeeds)
    if (s.name == t.substr(x + 1)) return *w * s.lane_data / 8;
  return std::nullopt;
}

std::optional<double> RateFromLanes(std::string_view width, std::string_view lane_gbps) {
  const auto w = Width(width);
  double lane = 0;
  const auto [end, ec] = std::from_chars(lane_gbps.data(), lane_gbps.data() + lane_gbps.size(), lane);
  if (!w || ec != std::errc() || end != lane_gbps.data() + lane_gbps.size() || !(lane > 0 && lane < 10000)) return std::nullopt;
  double data = lane * (lane <= 10.0 ? 0.8 : 64.0 / 66.0);  // a speed newer than the table: its encoding's share
  for (const Speed& s : kSpeeds)
    if (std::abs(lane - s.lane_signal) <= 0.005 * s.lane_signal) data = s.lane_data;
  return *w * data / 8;
}

Result<Topology> BuildFabric(Fabric f) {
  const std::string& src = f.source;
  auto& notes = f.notes;
  // Peers with no block of their own: a CA is taken from the line naming it
  // (a dump cut after its switch blocks); a switch is not, as its other links are lost.
  std::vector<Node> extra;
  for (const Node& n : f.nodes) {
    for (const Port& p : n.ports) {
      if (f.index.contains(p.peer)) continue;
      const Kind k = p.peer_kind.value_or(Kind::kCa);
      if (k != Kind::kCa) {
        return MakeError(ErrorCode::kParse,
                         "{}: port {} links to {} {}, which has no block of its own; the dump is partial (the links of "
                         "that switch are missing), so run ibnetdiscover on the whole fabric again",
                         f.Where(p.line), p.port, k == Kind::kSwitch ? "switch" : "router", Prefix(k) + p.peer);
      }
      f.index[p.peer] = f.nodes.size() + extra.size();
      extra.push_back(Node{Kind::kCa, p.peer, p.peer_desc, 0, p.line, false, {}});
    }
  }
  const size_t blockless = extra.size();
  for (auto& n : extra) f.nodes.push_back(std::move(n));
  const size_t N = f.nodes.size();
  if (std::none_of(f.nodes.begin(), f.nodes.end(), [](const Node& n) { return n.kind == Kind::kCa; })) {
    return MakeError(ErrorCode::kParse,
                     "{}: the fabric has {} switch(es) but no CA (host adapter) on any of them, so no hosts; is this the "
                     "whole ibnetdiscover output?",
                     f.Where(f.nodes.empty() ? 1 : f.nodes.front().line), f.nodes.size());
  }
  auto node_of = [&](const Port& p) -> size_t { return f.index.at(p.peer); };

  // Each block's ports: in range, listed once, and told the same way by both ends.
  std::vector<std::map<int, size_t>> port_at(N);
  for (size_t a = 0; a < N; ++a) {
    const Node& n = f.nodes[a];
    for (size_t i = 0; i < n.ports.size(); ++i) {
      const Port& p = n.ports[i];
      if (n.radix > 0 && (p.port < 1 || p.port > n.radix)) {
        return MakeError(ErrorCode::kParse, "{}: port {} is outside 1..{}, the ports of the {} block at line {}", f.Where(p.line),
                         p.port, n.radix, KindName(n.kind), n.line);
      }
      auto [it, fresh] = port_at[a].emplace(p.port, i);
      if (!fresh) {
        return MakeError(ErrorCode::kParse, "{}: port {} is listed twice in the {} block at line {} (first at line {})",
                         f.Where(p.line), p.port, KindName(n.kind), n.line, n.ports[it->second].line);
      }
    }
  }
  int one_sided = 0;
  std::vector<std::string> rate_mismatch;
  for (size_t a = 0; a < N; ++a) {
    for (Port& p : f.nodes[a].ports) {
      const size_t b = node_of(p);
      Node& peer = f.nodes[b];
      if (p.peer_kind && *p.peer_kind != peer.kind) {
        const std::string told = peer.has_block ? fmt::format("its {} block at line {} says otherwise", KindName(peer.kind), peer.line)
                                                : fmt::format("line {} names it as a CA", peer.line);
        return MakeError(ErrorCode::kParse, "{}: port {} names {}{} as a {}, but {}", f.Where(p.line), p.port, Prefix(*p.peer_kind),
                         p.peer, *p.peer_kind == Kind::kCa ? "CA" : *p.peer_kind == Kind::kSwitch ? "switch" : "router", told);
      }
      if (!peer.has_block || b == a) continue;
      auto q_it = port_at[b].find(p.peer_port);
      if (q_it == port_at[b].end()) {
        ++one_sided;
        continue;
      }
      Port& q = peer.ports[q_it->second];
      if (q.peer != f.nodes[a].key || q.peer_port != p.port) {
        return MakeError(ErrorCode::kParse,
                         "{}: port {} links to {}[{}], but that port's own line ({}) links to {}[{}]; the dump contradicts "
                         "itself, so take a fresh one",
                         f.Where(p.line), p.port, SwitchName(peer), p.peer_port, f.Where(q.line),
                         SwitchName(f.nodes[f.index.at(q.peer)]), q.peer_port);
      }
      if (p.gbps > 0 && q.gbps > 0 && p.gbps != q.gbps && a < b) {
        rate_mismatch.push_back(fmt::format("line {} says {}, line {} says {}", p.line, p.rate, q.line, q.rate));
        p.gbps = q.gbps = std::min(p.gbps, q.gbps);
      }
    }
  }

  // Switches, their switch neighbours and the hosts on them.
  std::vector<size_t> sws;
  std::vector<int> sw_of(N, -1);
  for (size_t i = 0; i < N; ++i)
    if (f.nodes[i].kind != Kind::kCa) sw_of[i] = static_cast<int>(sws.size()), sws.push_back(i);
  const size_t S = sws.size();
  std::vector<std::set<int>> nbr(S);
  std::vector<bool> leaf(S, false);
  std::vector<int> radix(S, 0);
  std::vector<std::string> loops;
  int ca_to_ca = 0;
  for (size_t i = 0; i < N; ++i) {
    const Node& n = f.nodes[i];
    for (const Port& p : n.ports) {
      const size_t b = node_of(p);
      if (n.kind == Kind::kCa) {
        ca_to_ca += f.nodes[b].kind == Kind::kCa;
        if (f.nodes[b].kind != Kind::kCa) leaf[static_cast<size_t>(sw_of[b])] = true;
        continue;
      }
      const int s = sw_of[i];
      radix[static_cast<size_t>(s)] = std::max({radix[static_cast<size_t>(s)], n.radix, p.port});
      if (b == i) {
        if (p.port < p.peer_port) loops.push_back(fmt::format("{}[{}]-[{}]", SwitchName(n), p.port, p.peer_port));
        continue;
      }
      if (f.nodes[b].kind == Kind::kCa) leaf[static_cast<size_t>(s)] = true;
      else nbr[static_cast<size_t>(s)].insert(sw_of[b]), nbr[static_cast<size_t>(sw_of[b])].insert(s);
    }
  }
  constexpr int kFar = 1 << 20;  // switches no host is reached from
  std::vector<int> dist(S, kFar);
  std::deque<int> bfs;
  for (size_t s = 0; s < S; ++s)
    if (leaf[s]) dist[s] = 1, bfs.push_back(static_cast<int>(s));
  while (!bfs.empty()) {
    const int s = bfs.front();
    bfs.pop_front();
    for (int t : nbr[static_cast<size_t>(s)])
      if (dist[static_cast<size_t>(t)] == kFar) dist[static_cast<size_t>(t)] = dist[static_cast<size_t>(s)] + 1, bfs.push_back(t);
  }
  auto above = [&](int a, int b) {
    const auto ka = std::make_tuple(dist[static_cast<size_t>(a)], radix[static_cast<size_t>(a)], nbr[static_cast<size_t>(a)].size());
    const auto kb = std::make_tuple(dist[static_cast<size_t>(b)], radix[static_cast<size_t>(b)], nbr[static_cast<size_t>(b)].size());
    if (ka != kb) return ka > kb;
    return f.nodes[sws[static_cast<size_t>(a)]].key < f.nodes[sws[static_cast<size_t>(b)]].key;
  };

  // Heights on the oriented graph (as the builder counts them) give each
  // switch its level, hence its latency and hops.
  std::vector<std::vector<int>> down(S);
  for (size_t s = 0; s < S; ++s)
    for (int t : nbr[s])
      if (above(static_cast<int>(s), t)) down[s].push_back(t);
  // Every link runs down the order `above`, so sorting by it is a
  // topological order: heights bottom-up without recursion, which a chain
  // of thousands of switches would overflow (in the builder too, whose
  // recursive walks this check keeps to at most four tiers).
  std::vector<int> bottom_up(S);
  for (size_t s = 0; s < S; ++s) bottom_up[s] = static_cast<int>(s);
  std::sort(bottom_up.begin(), bottom_up.end(), [&](int a, int b) { return above(b, a); });
  std::vector<int> height(S, 1);
  for (int s : bottom_up)
    for (int t : down[static_cast<size_t>(s)]) height[static_cast<size_t>(s)] = std::max(height[static_cast<size_t>(s)], height[static_cast<size_t>(t)] + 1);
  for (size_t s = 0; s < S; ++s) {
    if (height[s] > 4) {
      return MakeError(ErrorCode::kParse,
                       "{}: switch {} sits {} switch tiers above the hosts (switches cabled in a chain?); tidal models at "
                       "most four tiers (leaf, spine, core, zone)",
                       f.Where(f.nodes[sws[s]].line), SwitchName(f.nodes[sws[s]]), height[s]);
    }
  }

  // Bandwidth towards the hosts and towards the parents; host-port rates below.
  std::vector<double> bw_down(S, 0), bw_up(S, 0);
  std::vector<std::map<double, int>> host_rates(S);
  std::map<std::string, int> host_rate_names;
  std::map<double, int> isl_rates;
  std::vector<std::tuple<double, std::string>> isls;  // rate, "S-a[p] - S-b[q] at R"
  int unrated = 0;
  for (size_t s = 0; s < S; ++s) {
    const Node& n = f.nodes[sws[s]];
    for (const Port& p : n.ports) {
      const size_t b = node_of(p);
      if (b == sws[s]) continue;
      unrated += p.gbps <= 0;
      if (f.nodes[b].kind == Kind::kCa) {
        bw_down[s] += p.gbps;
        if (p.gbps > 0) ++host_rates[s][p.gbps];
        ++host_rate_names[p.rate];
        continue;
      }
      const int t = sw_of[b];
      (above(static_cast<int>(s), t) ? bw_down : bw_up)[s] += p.gbps;
      if (above(static_cast<int>(s), t) && p.gbps > 0) {
        ++isl_rates[p.gbps];
        isls.push_back({p.gbps, fmt::format("{}[{}] - {}[{}] at {}", SwitchName(n), p.port, SwitchName(f.nodes[b]), p.peer_port, p.rate)});
      }
    }
  }
  for (int s : bottom_up)
    for (int t : down[static_cast<size_t>(s)])
      for (const auto& [r, k] : host_rates[static_cast<size_t>(t)]) host_rates[static_cast<size_t>(s)][r] += k;

  FabricGraph g(src);
  for (auto& n : notes) g.AddNote(std::move(n));
  for (size_t s = 0; s < S; ++s) {
    const Node& n = f.nodes[sws[s]];
    const int h = height[s];
    const Level level = h == 1 ? Level::kLeaf : h == 2 ? Level::kSpine : h == 3 ? Level::kCore : Level::kZone;
    LinkSpec link = DefaultLink(level, false);
    link.gbps = Mode(host_rates[s]);  // 0: no rated host port below; the builder's default and note
    link.oversubscription = bw_up[s] > 0 && bw_down[s] > bw_up[s] * (1 + 1e-9) ? bw_down[s] / bw_up[s] : 1;
    TIDAL_RETURN_IF_ERROR(g.AddSwitch(SwitchName(n), std::nullopt, f.Where(n.line), link));
  }
  // Hosts in the order their switches' ports reach them (so a .topo and an
  // iblinkinfo of one fabric list them alike), then CAs on no switch.
  std::set<std::string> hosts;
  int default_named = 0;
  auto add_host = [&](const Node& ca) -> Status {
    const std::string name = HostName(ca);
    if (!hosts.insert(name).second) return Ok();
    default_named += name == "H-" + ca.key;
    return g.AddHost(name, f.Where(ca.line));
  };
  for (size_t s = 0; s < S; ++s) {
    const Node& n = f.nodes[sws[s]];
    for (const auto& [port, i] : port_at[sws[s]]) {
      const Port& p = n.ports[i];
      const Node& peer = f.nodes[node_of(p)];
      if (peer.kind != Kind::kCa) continue;
      TIDAL_RETURN_IF_ERROR(add_host(peer));
      g.Connect(SwitchName(n), HostName(peer), f.Where(p.line));
    }
    for (int t : down[s]) {
      const Node& c = f.nodes[sws[static_cast<size_t>(t)]];
      int line = n.line;
      for (const Port& p : n.ports)
        if (p.peer == c.key) {
          line = p.line;
          break;
        }
      g.Connect(SwitchName(n), SwitchName(c), f.Where(line));
    }
  }
  for (const Node& ca : f.nodes) {
    if (ca.kind != Kind::kCa) continue;
    TIDAL_RETURN_IF_ERROR(add_host(ca));
    for (const Port& p : ca.ports) {
      const Node& peer = f.nodes[node_of(p)];  // a link only the CA's block tells
      if (peer.kind != Kind::kCa) g.Connect(SwitchName(peer), HostName(ca), f.Where(p.line));
    }
  }

  if (blockless > 0) {
    g.AddNote(fmt::format("{}: {} CA(s) have no Ca block (the dump seems cut after the switch blocks); their hosts are taken from "
                          "the switch port lines and named by the descriptions there",
                          src, blockless));
  }
  if (default_named > 0) {
    g.AddNote(fmt::format("{}: {} CA(s) keep the adapter's default node description instead of a host name; they are named by "
                          "GUID (H-...). Setting node descriptions (rdma-ndd) gives host names",
                          src, default_named));
  }
  if (!loops.empty()) {
    g.AddNote(fmt::format("{}: {} switch port pair(s) are cabled to the same switch ({}); such loopbacks carry no traffic "
                          "between hosts and are ignored",
                          src, loops.size(), FirstFew(loops)));
  }
  if (ca_to_ca > 0) g.AddNote(fmt::format("{}: {} CA port(s) are cabled straight to another CA; those links are ignored", src, ca_to_ca));
  if (one_sided > 0) g.AddNote(fmt::format("{}: {} link(s) are told by one end's block only; they are kept", src, one_sided));
  if (!rate_mismatch.empty()) {
    g.AddNote(fmt::format("{}: the two ends of {} link(s) give different rates ({}); the slower is used", src, rate_mismatch.size(),
                          FirstFew(rate_mismatch, 3)));
  }
  if (host_rate_names.size() > 1) {
    g.AddNote(fmt::format("{}: host ports run at several rates ({}); each switch is rated at the most common rate of the host "
                          "ports below it",
                          src, Counts(host_rate_names)));
  }
  if (isl_rates.size() > 1) {
    const double common = Mode(isl_rates);
    std::vector<std::string> slow;
    for (const auto& [r, what] : isls)
      if (r < common) slow.push_back(what);
    if (!slow.empty()) {
      g.AddNote(fmt::format("{}: {} switch link(s) run below the {:g} GB/s of most switch links ({}): degraded cables? The "
                            "oversubscription counts them at their rate",
                            src, slow.size(), common, FirstFew(slow)));
    }
  }
  if (unrated > 0) g.AddNote(fmt::format("{}: {} switch port(s) give no rate; they count as 0 GB/s in oversubscription", src, unrated));
  for (size_t s = 0; s < S; ++s) {
    if (f.nodes[sws[s]].kind == Kind::kRouter) {
      g.AddNote(fmt::format("{}: routers (Rt blocks) are modelled as switches", src));
      break;
    }
  }
  return std::move(g).Build();
}

}  // namespace tidal::topo::ib

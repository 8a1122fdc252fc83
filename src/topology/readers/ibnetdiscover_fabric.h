// Internal to the InfiniBand reader: the nodes and port links read from an
// `ibnetdiscover` .topo file (ibnetdiscover.cc) or an `iblinkinfo` dump
// (ibnetdiscover_linkinfo.cc), and the one place that turns them into a
// tree (ibnetdiscover_fabric.cc), so both tools give the same topology for
// the same fabric.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "topology/readers/text_lines.h"
#include "topology/topology.h"

namespace tidal::topo::ib {

enum class Kind : uint8_t { kSwitch, kCa, kRouter };

std::string_view KindName(Kind k);  // "Switch", "Ca", "Rt"

struct Port {
  int port = 0;
  std::string peer;                // the peer's node key (its GUID, 16 hex digits)
  std::optional<Kind> peer_kind;   // what the line calls the peer ("S-", "H-"), if it says
  int peer_port = 0;
  double gbps = 0;                 // data rate per direction, GB/s; 0 unknown
  std::string rate;                // as written ("4xEDR", "4X 25.78125 Gbps")
  std::string peer_desc;           // the peer's node description, if the line gives it
  int line = 0;
};

struct Node {
  Kind kind = Kind::kCa;
  std::string key;   // GUID, 16 lower-case hex digits
  std::string desc;  // node description ("node018 HCA-1")
  int radix = 0;     // ports the block declares (0 unknown)
  int line = 0;      // the block's header line (or the first line naming it)
  bool has_block = true;
  std::vector<Port> ports;
};

struct Fabric {
  std::string source;
  std::vector<Node> nodes;
  std::map<std::string, size_t> index;  // key -> nodes[]
  std::vector<std::string> notes;
  std::string Where(int line) const;    // "source:line"
};

// A GUID as a node key: 1 to 16 hex digits, with or without 0x, as 16
// lower-case digits; nullopt if it is not one.
std::optional<std::string> GuidKey(std::string_view hex);

// Data rate per direction of one port, GB/s, from ibnetdiscover's "4xEDR" or
// iblinkinfo's width and lane signalling rate ("4X", "25.78125"); nullopt if
// the text is not a rate. See ibnetdiscover_fabric.cc for the table.
std::optional<double> RateFromName(std::string_view text);
std::optional<double> RateFromLanes(std::string_view width, std::string_view lane_gbps);

// The tree: switches named by GUID ("S-ec0d9a0300ec8240"), hosts by the first
// word of their CAs' descriptions, switch-switch links oriented away from the
// hosts, leaf links rated from host ports, uplink oversubscription.
Result<Topology> BuildFabric(Fabric f);

// iblinkinfo's dump (ibnetdiscover_linkinfo.cc): nodes and links, then BuildFabric.
Result<Topology> ReadIblinkinfo(const std::vector<TextLine>& lines, const std::string& source);

}  // namespace tidal::topo::ib

// InfiniBand fabric dumps: `ibnetdiscover` topology files (Switch / Ca
// blocks with port lines), and its companions `iblinkinfo` (which has the
// links, so it is a whole fabric on its own), `ibhosts` and `ibswitches`
// (lists without links: an error saying to run ibnetdiscover or iblinkinfo).
// Hosts are named by the first word of the CA's node description ("node018
// HCA-1" -> node018); several CAs of one host are one host (multi-rail).
// Link speed and width (4xEDR, 4X 10.0 Gbps) rate the links. Switches are
// named "S-<GUID>"; a CA that kept the adapter's default description is
// "H-<GUID>". A dump whose Ca blocks were cut is read from the switch port
// lines, with a note counting those CAs.
#pragma once

#include <string>
#include <string_view>

#include "topology/topology.h"

namespace tidal::topo {

Result<Topology> ReadIbnetdiscover(std::string_view text, const std::string& source);

}  // namespace tidal::topo

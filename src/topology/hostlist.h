// Slurm-style host lists: "tux[0-3,7],login1", "node[01-04]" (zero padding is
// kept), "rack[1-2]-n[1-4]" (several bracket groups expand as a product).
// Used by the Slurm, Volcano and tidal YAML formats, read and written.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace tidal::topo {

// Expands a host list. Errors name the offending text: an unclosed bracket,
// a reversed range, a range of more than `max_hosts` names in all.
Result<std::vector<std::string>> ExpandHostlist(std::string_view list, size_t max_hosts = 10'000'000);

// The shortest usual form of a set of names, in the given order: runs of
// names that differ only in a trailing number of the same width become
// "prefix[a-b,...]". ExpandHostlist(CompressHostlist(v)) == v for names
// without brackets or commas, when numbers in a run ascend.
std::string CompressHostlist(const std::vector<std::string>& names);

}  // namespace tidal::topo

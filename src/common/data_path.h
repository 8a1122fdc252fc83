// Where a shipped file (data/..., web/dist) is: under the working directory
// when run from the repository, else next to the binary's source tree
// (build/tidal -> ../<rel>); `rel` itself when neither has it, so the error
// that follows names the path the user would expect.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace tidal {

// `probe` is the file that must exist under the folder (rel itself when empty).
inline std::string FindShippedPath(std::string_view rel, std::string_view probe = {}) {
  const std::filesystem::path r(rel);
  const std::filesystem::path check = probe.empty() ? std::filesystem::path() : std::filesystem::path(probe);
  if (std::filesystem::exists(check.empty() ? r : r / check)) return r.string();
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto near = exe.parent_path().parent_path() / r;
    if (std::filesystem::exists(check.empty() ? near : near / check)) return near.string();
  }
  return r.string();
}

}  // namespace tidal

// Writing planned settings into a cgroup directory and reading them back.
// POSIX open/write rather than streams: the kernel reports a rejected value
// as the errno of write(2), and the message must carry it.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "isolation/cgroup_writers.h"
#include "topology/readers/text_lines.h"

namespace tidal::isolation {
namespace {

// Interface files end in a newline; TrimSpace keeps those (it trims within a line).
std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.back() == '\n' || topo::IsFieldSpace(s.back()))) s.remove_suffix(1);
  while (!s.empty() && (s.front() == '\n' || topo::IsFieldSpace(s.front()))) s.remove_prefix(1);
  return s;
}

std::string Controller(const std::string& file) { return file.substr(0, file.find('.')); }

std::optional<std::string> ReadSmall(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string out;
  char buf[4096];
  ssize_t n = 0;
  while ((n = ::read(fd, buf, sizeof buf)) > 0 && out.size() < (1 << 20)) out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  if (n < 0) return std::nullopt;
  return out;
}

// "max" -> none; a number -> it; anything else (unreadable) -> `fallback`.
std::optional<int64_t> ReadLimit(const std::string& path, std::optional<int64_t> fallback) {
  const auto text = ReadSmall(path);
  if (!text) return fallback;
  const std::string_view v = Trim(*text);
  if (v == "max") return std::nullopt;
  if (const auto n = topo::ParseDecimal(v, std::numeric_limits<int64_t>::max() / 10)) return *n;
  return fallback;
}

std::string Hint(int err, const CgroupFile& f) {
  switch (err) {
    case EINVAL:
      return f.name.starts_with("cpuset.")
                 ? "the kernel rejected the list: are those CPUs or nodes in the parent's cpuset.*.effective and online?"
                 : "the kernel rejected the value as out of range for this file";
    case ENODEV:
      return "no such block device on this host: check MAJ:MIN with `lsblk -o NAME,MAJ:MIN`";
    case EACCES:
    case EPERM:
      return "no permission: write as root, or in a subtree delegated to this user";
    case EBUSY:
      return "the kernel refused the change while the cgroup is in use";
    default:
      return "see the kernel log";
  }
}

Status WriteOne(const std::string& path, const CgroupFile& f) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    return MakeError(ErrorCode::kIo, "opening {} to write '{}': {} ({})", path, f.value, std::strerror(err), Hint(err, f));
  }
  const std::string line = f.value + "\n";
  const ssize_t n = ::write(fd, line.data(), line.size());
  const int err = n < 0 ? errno : 0;
  const int closed = ::close(fd);
  const int close_err = closed < 0 ? errno : 0;
  if (n < 0 || static_cast<size_t>(n) != line.size() || closed < 0) {
    const int e = err ? err : close_err ? close_err : EIO;
    return MakeError(ErrorCode::kIo, "writing '{}' to {}: {} ({})", f.value, path, std::strerror(e), Hint(e, f));
  }
  return Ok();
}

using Keyed = std::map<std::string, std::string>;

// The io.max line of device `key` ("8:16") as key=value pairs; nullopt if absent.
std::optional<Keyed> IoLine(std::string_view text, const std::string& key) {
  for (const topo::TextLine& l : topo::SplitLines(text)) {
    const auto f = topo::SplitFields(l.text);
    if (f.empty() || f[0] != key) continue;
    Keyed out;
    for (size_t i = 1; i < f.size(); ++i) {
      const size_t eq = f[i].find('=');
      if (eq != std::string_view::npos) out[std::string(f[i].substr(0, eq))] = std::string(f[i].substr(eq + 1));
    }
    return out;
  }
  return std::nullopt;
}

// Whether `got` (the kernel's reading) matches `want` (what was written).
bool Matches(const CgroupFile& want, std::string_view got, int64_t page) {
  if (want.name.starts_with("cpuset.")) {
    const auto a = topo::ParseCpuList(want.value), b = topo::ParseCpuList(got);
    return a && b && *a == *b;
  }
  if (want.name.starts_with("memory.")) {
    if (want.value == "max") return got == "max";
    const auto a = topo::ParseDecimal(want.value, std::numeric_limits<int64_t>::max() / 10);
    const auto b = topo::ParseDecimal(got, std::numeric_limits<int64_t>::max() / 10);
    return a && b && *a / page * page == *b;
  }
  if (want.name == "io.max") {
    const std::string dev = want.value.substr(0, want.value.find(' '));
    const auto a = IoLine(want.value, dev), b = IoLine(got, dev);
    if (!a || !b) return false;
    for (const auto& [k, v] : *a) {
      const auto it = b->find(k);
      if (it == b->end() || it->second != v) return false;
    }
    return true;
  }
  return got == want.value;
}

}  // namespace

Status WriteCgroupDir(const std::string& dir, const CgroupSettings& s) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return MakeError(ErrorCode::kNotFound,
                     "{} is not a directory: create the cgroup first (mkdir under a cgroup2 mount); tidal writes settings into "
                     "an existing cgroup and never creates one",
                     dir);
  }
  const MemoryLimits current{ReadLimit(dir + "/memory.min", 0).value_or(0), ReadLimit(dir + "/memory.high", std::nullopt),
                             ReadLimit(dir + "/memory.max", std::nullopt)};
  const std::vector<CgroupFile> files = CgroupWritePlan(s, current);
  for (const CgroupFile& f : files) {
    if (!std::filesystem::exists(dir + "/" + f.name, ec)) {
      const std::string c = Controller(f.name);
      return MakeError(ErrorCode::kFailedPrecondition,
                       "{}/{} does not exist: the {} controller is not enabled for this cgroup; enable it in the parent with "
                       "`echo +{} > PARENT/cgroup.subtree_control` (it must be listed in PARENT/cgroup.controllers). Nothing "
                       "was written",
                       dir, f.name, c, c);
    }
  }
  std::vector<std::string> written;
  for (const CgroupFile& f : files) {
    if (auto st = WriteOne(dir + "/" + f.name, f); !st) {
      return MakeError(st.error().code, "{}; already written: {}", st.error().message,
                       written.empty() ? "nothing" : fmt::format("{}", fmt::join(written, ", ")));
    }
    written.push_back(f.name);
  }
  return Ok();
}

Status CheckCgroupDir(const std::string& dir, const CgroupSettings& s) {
  const long page = ::sysconf(_SC_PAGESIZE);
  std::vector<std::string> bad;
  for (const CgroupFile& f : CgroupFiles(s)) {
    const auto text = ReadSmall(dir + "/" + f.name);
    if (!text) {
      bad.push_back(fmt::format("{}: cannot be read ({})", f.name, std::strerror(errno)));
      continue;
    }
    const std::string_view got = Trim(*text);
    if (!Matches(f, got, page > 0 ? page : 4096)) bad.push_back(fmt::format("{}: wrote '{}', reads '{}'", f.name, f.value, topo::Printable(got)));
  }
  if (!bad.empty()) {
    return MakeError(ErrorCode::kFailedPrecondition, "{}: {} file(s) do not read back as planned: {}", dir, bad.size(), fmt::join(bad, "; "));
  }
  return Ok();
}

}  // namespace tidal::isolation

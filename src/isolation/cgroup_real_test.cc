// Applies planned settings to a real cgroup v2 where the kernel and the
// delegation allow it, reads every file back (normalised as the kernel
// prints) and removes the cgroup. It only uses a cgroup2 filesystem that is
// already mounted (it never mounts one), creates one child cgroup of its
// own, enables in the parent's cgroup.subtree_control only controllers the
// parent offers and disables again those it enabled. Where something is
// missing it skips and says exactly what and how to get it.
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>

#include "isolation/cgroup_writers.h"
#include "topology/readers/text_lines.h"

namespace tidal::isolation {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  std::string out = s.str();
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

bool Put(const std::string& path, const std::string& v) {
  std::ofstream out(path);
  out << v << "\n";
  out.flush();
  return static_cast<bool>(out);
}

std::set<std::string> Words(const std::string& s) {
  std::set<std::string> out;
  std::istringstream in(s);
  for (std::string w; in >> w;) out.insert(w);
  return out;
}

// The first cgroup2 mount in /proc/mounts ("" if none).
std::string Cgroup2Mount() {
  std::ifstream in("/proc/mounts");
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    std::string dev, dir, type;
    f >> dev >> dir >> type;
    if (type == "cgroup2") return dir;
  }
  return "";
}

// A block device io.max can name: the first of /sys/block that is not a
// loop or ram disk, as "MAJ:MIN".
std::optional<BlockDevice> SomeBlockDevice() {
  std::error_code ec;
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator("/sys/block", ec)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  for (const std::string& n : names) {
    if (n.starts_with("loop") || n.starts_with("ram") || n.starts_with("zram")) continue;
    const std::string dev = Slurp("/sys/block/" + n + "/dev");
    const size_t colon = dev.find(':');
    if (colon == std::string::npos) continue;
    const auto ma = topo::ParseDecimal(dev.substr(0, colon), 4095), mi = topo::ParseDecimal(dev.substr(colon + 1), 1048575);
    if (ma && mi) return BlockDevice{static_cast<int>(*ma), static_cast<int>(*mi), ""};
  }
  return std::nullopt;
}

// Leaves the host as it found it: the child cgroup removed, controllers it
// enabled disabled again (best effort; another cgroup may have started
// using one meanwhile, and then it stays on).
struct Cleanup {
  std::string child, parent;
  std::vector<std::string> enabled;
  ~Cleanup() {
    if (!child.empty()) ::rmdir(child.c_str());
    for (const auto& c : enabled) Put(parent + "/cgroup.subtree_control", "-" + c);
  }
};

// Why a candidate parent cannot be used, or "" when it was set up: the
// controllers enabled in its cgroup.subtree_control and our child made.
std::string Prepare(const std::string& parent, bool with_io, Cleanup& clean) {
  const std::string offered_text = Slurp(parent + "/cgroup.controllers");
  const std::set<std::string> offered = Words(offered_text);
  std::vector<std::string> need = {"cpuset", "cpu", "memory"};
  if (with_io) need.push_back("io");
  std::string missing;
  for (const auto& c : need)
    if (!offered.contains(c)) missing += (missing.empty() ? "" : ", ") + c;
  if (!missing.empty()) {
    return parent + "/cgroup.controllers offers '" + offered_text + "', without " + missing +
           " (bound to cgroup v1 hierarchies, see /proc/mounts, or not delegated here)";
  }
  clean.parent = parent;
  const std::set<std::string> on = Words(Slurp(parent + "/cgroup.subtree_control"));
  for (const auto& c : need) {
    if (on.contains(c)) continue;
    if (!Put(parent + "/cgroup.subtree_control", "+" + c)) {
      return "cannot enable " + c + " in " + parent + "/cgroup.subtree_control (" + std::strerror(errno) +
             "): a non-root cgroup with processes cannot pass controllers down (the no-internal-process rule), or the "
             "file is not ours to write";
    }
    clean.enabled.push_back(c);
  }
  const std::string child = parent + "/tidal-isolation-test-" + std::to_string(::getpid());
  if (::mkdir(child.c_str(), 0755) != 0) return "cannot create " + child + ": " + std::strerror(errno);
  clean.child = child;
  return "";
}

TEST(RealCgroup, AppliesAndReadsBack) {
  std::string root = "/sys/fs/cgroup";
  if (!std::filesystem::exists(root + "/cgroup.controllers")) root = Cgroup2Mount();
  if (root.empty()) {
    GTEST_SKIP() << "no cgroup v2: /sys/fs/cgroup/cgroup.controllers is absent and /proc/mounts has no cgroup2 entry. Boot "
                    "with systemd.unified_cgroup_hierarchy=1 (this test never mounts a cgroup2 filesystem itself)";
  }
  // Parents to try: the hierarchy's root (exempt from the no-internal-process
  // rule; writable by root), then our own cgroup ("0::/path" in
  // /proc/self/cgroup), the part of the tree a delegated user may write.
  std::vector<std::string> parents = {root};
  {
    std::ifstream in("/proc/self/cgroup");
    for (std::string line; std::getline(in, line);)
      if (line.starts_with("0::") && line != "0::/") parents.push_back(root + line.substr(3));
  }
  const std::optional<BlockDevice> disk = SomeBlockDevice();
  std::unique_ptr<Cleanup> clean;
  std::string why;
  bool with_io = false;
  for (const std::string& parent : parents) {
    for (bool io : {true, false}) {
      if (io && !disk) continue;
      auto c = std::make_unique<Cleanup>();
      const std::string no = Prepare(parent, io, *c);
      if (no.empty()) {
        clean = std::move(c);
        with_io = io;
        break;
      }
      if (io) continue;  // try once more without io
      why += (why.empty() ? "" : "; ") + no;
    }
    if (clean) break;
  }
  if (!clean) {
    GTEST_SKIP() << "cgroup v2 is mounted at " << root << " but no parent cgroup can host the test: " << why
                 << ". To run it: boot with systemd.unified_cgroup_hierarchy=1 (or cgroup_no_v1=all) so cpu, cpuset, memory "
                    "and io are on the v2 hierarchy, and run as root or in a systemd unit with Delegate=yes";
  }
  const std::string parent = clean->parent, child = clean->child;
  // A layout of this host's own CPUs and memory nodes, so the kernel accepts the cpuset.
  auto cpus = topo::ParseCpuList(Slurp(parent + "/cpuset.cpus.effective"));
  auto mems = topo::ParseCpuList(Slurp(parent + "/cpuset.mems.effective"));
  ASSERT_TRUE(cpus && mems && !cpus->empty() && !mems->empty()) << "cannot read " << parent << "/cpuset.*.effective";
  NodeLayout n;
  n.name = "this-host";
  n.cpus_total = cpus->back() + 1;
  n.gpus.push_back({*cpus, {mems->front()}});
  if (with_io) n.checkpoint_device = disk;
  ContainerRequest c;
  c.name = "real-test";
  c.tier = Tier::kStandard;
  c.cpus = 1;
  c.memory_mib = 256;
  c.gpus = {0};
  c.checkpoint_write_mbps = with_io ? 100 : 0;
  auto s = PlanCgroup(c, n, DefaultIsolationPolicy());
  ASSERT_TRUE(s.has_value()) << s.error().message;
  ASSERT_TRUE(WriteCgroupDir(child, *s).has_value()) << WriteCgroupDir(child, *s).error().message;
  EXPECT_TRUE(CheckCgroupDir(child, *s).has_value()) << CheckCgroupDir(child, *s).error().message;
  // The ladder's step on top of the same cgroup: the order-safe rewrite path.
  const CgroupSettings t = Throttle(*s, 0.5, 0.5, 0.5);
  ASSERT_TRUE(WriteCgroupDir(child, t).has_value()) << WriteCgroupDir(child, t).error().message;
  EXPECT_TRUE(CheckCgroupDir(child, t).has_value()) << CheckCgroupDir(child, t).error().message;
  EXPECT_EQ(Slurp(child + "/cpu.max"), "50000 100000");
  if (!with_io) std::cout << "[ note ] io.max was not tried: no block device under /sys/block, or no io controller here\n";
}

}  // namespace
}  // namespace tidal::isolation

#include "mig/mig_parted.h"

#include <algorithm>
#include <charconv>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

namespace tidal::mig {
namespace {

// Where the YAML came from: a file, or a block inside a ConfigMap whose
// first line is line offset + 1 of the file.
struct Ctx {
  std::string_view source;
  int offset = 0;
};

// Text quoted back in a message: printable ASCII, cut short.
std::string Printable(std::string_view s) {
  std::string out;
  for (char ch : s.substr(0, 80)) out += (ch >= 0x20 && ch < 0x7f) ? ch : '?';
  return s.size() > 80 ? out + "..." : out;
}

int LineOf(const Ctx& c, const YAML::Node& n, int fallback) {
  const YAML::Mark m = n.Mark();
  return m.line < 0 ? fallback : m.line + 1 + c.offset;
}

std::unexpected<Error> Bad(const Ctx& c, int line, std::string_view what) {
  return MakeError(ErrorCode::kParse, "{}:{}: {}", c.source, line, what);
}

struct Field {
  YAML::Node key, value;
};

// The fields of map `n`, each once and each one of `known`.
Result<std::map<std::string, Field>> Fields(const Ctx& c, const YAML::Node& n, std::vector<std::string_view> known,
                                            std::string_view what) {
  std::map<std::string, Field> out;
  for (const auto& kv : n) {
    const int line = LineOf(c, kv.first, LineOf(c, n, 1));
    if (!kv.first.IsScalar()) return Bad(c, line, fmt::format("a key of {} must be a plain name", what));
    const std::string k = kv.first.Scalar();
    if (std::find(known.begin(), known.end(), k) == known.end()) {
      return Bad(c, line, fmt::format("unexpected field '{}' in {} (mig-parted knows {})", Printable(k), what, fmt::join(known, ", ")));
    }
    if (!out.emplace(k, Field{kv.first, kv.second}).second) return Bad(c, line, fmt::format("'{}' is given twice in {}", Printable(k), what));
  }
  return out;
}

// A mig-parted profile name: [Nc.]Ng.Mgb[+attr,...] or [-attr,...]
// (go-nvlib's parseMigProfile). The reason it is not, or "".
std::string ProfileFormatError(std::string_view name) {
  const size_t plus = name.find('+'), minus = name.find('-');
  if (plus != std::string_view::npos && minus != std::string_view::npos) return "it has both '+' and '-' attributes";
  const size_t cut = std::min(plus, minus);
  std::string_view base = name.substr(0, cut);
  std::vector<std::string_view> parts;
  for (size_t b = 0;;) {  // strings.SplitN(base, ".", 3)
    const size_t dot = parts.size() == 2 ? std::string_view::npos : base.find('.', b);
    parts.push_back(base.substr(b, dot == std::string_view::npos ? std::string_view::npos : dot - b));
    if (dot == std::string_view::npos) break;
    b = dot + 1;
  }
  if (parts.size() < 2 || parts.size() > 3) return "expected Ng.Mgb or Nc.Ng.Mgb";
  const std::vector<std::string_view> units = parts.size() == 3 ? std::vector<std::string_view>{"c", "g", "gb"}
                                                                : std::vector<std::string_view>{"g", "gb"};
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string_view p = parts[i];
    int v = 0;
    const std::string_view digits = p.substr(0, p.size() >= units[i].size() ? p.size() - units[i].size() : 0);
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    if (!p.ends_with(units[i]) || digits.empty() || ec != std::errc() || end != digits.data() + digits.size())
      return fmt::format("'{}' is not a number followed by '{}'", Printable(p), units[i]);
  }
  if (cut == std::string_view::npos) return "";
  std::set<std::string_view> seen;
  std::string_view attrs = name.substr(cut + 1);
  for (size_t b = 0;;) {
    const size_t comma = attrs.find(',', b);
    const std::string_view a = attrs.substr(b, comma == std::string_view::npos ? std::string_view::npos : comma - b);
    if (a.empty() || (a[0] >= '0' && a[0] <= '9') || a.front() == '.' || a.back() == '.' ||
        a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.") != std::string_view::npos)
      return fmt::format("attribute '{}' is not a name like me or me.all", Printable(a));
    if (!seen.insert(a).second) return fmt::format("attribute '{}' is given twice", Printable(a));
    if (comma == std::string_view::npos) return "";
    b = comma + 1;
  }
}

bool Hex32(std::string_view s, uint32_t& out) {
  int base = 10;
  if (s.starts_with("0x") || s.starts_with("0X")) {
    s.remove_prefix(2);
    base = 16;
  }
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out, base);
  return ec == std::errc() && p == s.data() + s.size();
}

Result<PciDeviceId> ReadPciId(const Ctx& c, const YAML::Node& n, int line) {
  const std::string s = n.IsScalar() ? n.Scalar() : "";
  PciDeviceId id;
  const size_t colon = s.find(':');
  uint32_t sub = 0;
  if (!n.IsScalar() || !Hex32(std::string_view(s).substr(0, colon), id.id) ||
      (colon != std::string::npos && !Hex32(std::string_view(s).substr(colon + 1), sub))) {
    return Bad(c, line,
               fmt::format("device-filter '{}' is not a PCI device id like \"0x233010DE\" (device 0x2330, vendor 0x10DE), "
                           "optionally ':0x<subsystem>'; mig-parted would match no GPU with it",
                           Printable(s)));
  }
  if (colon != std::string::npos) id.subsystem = sub;
  return id;
}

Result<bool> ReadBool(const Ctx& c, const Field& f, std::string_view name) {
  bool b = false;
  if (!f.value.IsScalar() || f.value.Tag() == "!" || !YAML::convert<bool>::decode(f.value, b)) {
    return Bad(c, LineOf(c, f.value, LineOf(c, f.key, 1)), fmt::format("'{}' must be true or false", name));
  }
  return b;
}

Result<int> ReadInt(const Ctx& c, const YAML::Node& n, int line, std::string_view what) {
  int v = -1;
  const std::string s = n.IsScalar() ? n.Scalar() : "";
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (n.Tag() == "!" || s.empty() || s[0] < '0' || s[0] > '9' || ec != std::errc() || end != s.data() + s.size())
    return Bad(c, line, fmt::format("{} '{}' is not a whole number from 0 to 2147483647", what, Printable(s)));
  return v;
}

Result<MigPartedEntry> ReadEntry(const Ctx& c, const YAML::Node& e, const std::string& config, int fallback) {
  MigPartedEntry out;
  out.source = std::string(c.source);
  out.config = config;
  out.line = LineOf(c, e, fallback);
  const std::string what = fmt::format("an entry of config '{}'", config);
  if (!e.IsMap()) return Bad(c, out.line, fmt::format("{} must be a map with devices, mig-enabled, mig-devices", what));
  TIDAL_ASSIGN_OR_RETURN(auto f, Fields(c, e, {"device-filter", "devices", "mig-enabled", "mig-devices"}, what));
  for (const char* required : {"devices", "mig-enabled"})
    if (!f.contains(required)) return Bad(c, out.line, fmt::format("{} lacks the required field '{}'", what, required));
  if (f.contains("device-filter")) {
    const Field& df = f.at("device-filter");
    const int line = LineOf(c, df.value, LineOf(c, df.key, out.line));
    if (df.value.IsSequence()) {
      for (const YAML::Node& item : df.value) {
        TIDAL_ASSIGN_OR_RETURN(PciDeviceId id, ReadPciId(c, item, LineOf(c, item, line)));
        out.device_filter.push_back(id);
      }
    } else if (!df.value.IsScalar() || !df.value.Scalar().empty()) {
      TIDAL_ASSIGN_OR_RETURN(PciDeviceId id, ReadPciId(c, df.value, line));
      out.device_filter.push_back(id);
    }
  }
  const Field& dev = f.at("devices");
  const int dev_line = LineOf(c, dev.value, LineOf(c, dev.key, out.line));
  if (dev.value.IsScalar() && dev.value.Scalar() == "all") {
    out.all_devices = true;
  } else if (dev.value.IsSequence()) {
    for (const YAML::Node& item : dev.value) {
      TIDAL_ASSIGN_OR_RETURN(int index, ReadInt(c, item, LineOf(c, item, dev_line), "GPU index"));
      out.devices.push_back(index);
    }
  } else {
    return Bad(c, dev_line, "'devices' must be 'all' or a list of GPU indices like [0, 1]");
  }
  TIDAL_ASSIGN_OR_RETURN(out.mig_enabled, ReadBool(c, f.at("mig-enabled"), "mig-enabled"));
  const bool has_devices = f.contains("mig-devices") && !f.at("mig-devices").value.IsNull();
  if (out.mig_enabled && !has_devices) {
    return Bad(c, out.line, "'mig-devices' is required when 'mig-enabled' is true (write 'mig-devices: {}' for no instances)");
  }
  if (!has_devices) return out;
  const Field& md = f.at("mig-devices");
  const int md_line = LineOf(c, md.value, LineOf(c, md.key, out.line));
  if (!md.value.IsMap()) return Bad(c, md_line, "'mig-devices' must map profile names to counts, e.g. \"1g.10gb\": 7");
  std::set<std::string> names;
  bool any = false;
  for (const auto& kv : md.value) {
    const int line = LineOf(c, kv.first, md_line);
    const std::string name = kv.first.IsScalar() ? kv.first.Scalar() : "";
    if (const std::string why = name.empty() ? "it is empty" : ProfileFormatError(name); !why.empty()) {
      return Bad(c, line, fmt::format("mig-devices: '{}' is not a MIG profile name like 1g.10gb or 1g.10gb+me: {}", Printable(name), why));
    }
    if (!names.insert(name).second) return Bad(c, line, fmt::format("mig-devices: '{}' is given twice", Printable(name)));
    TIDAL_ASSIGN_OR_RETURN(int count, ReadInt(c, kv.second, LineOf(c, kv.second, line), fmt::format("the count of '{}'", Printable(name))));
    any = any || count > 0;
    out.mig_devices.push_back({name, count, line});
  }
  if (!out.mig_enabled && !out.mig_devices.empty()) {
    return Bad(c, md_line, "'mig-devices' lists instances but 'mig-enabled' is false; enable MIG or drop them");
  }
  if (!out.mig_devices.empty() && !any) return Bad(c, md_line, "every count in 'mig-devices' is 0; write 'mig-devices: {}' for no instances");
  return out;
}

Result<MigPartedConfig> ReadDoc(const Ctx& c, const YAML::Node& doc) {
  const int top = 1 + c.offset;
  if (!doc.IsMap()) return Bad(c, top, "not a mig-parted config: it starts with 'version: v1' and 'mig-configs:'");
  TIDAL_ASSIGN_OR_RETURN(auto f, Fields(c, doc, {"version", "mig-configs"}, "a mig-parted config"));
  if (!f.contains("version") || !f.at("version").value.IsScalar() || f.at("version").value.Scalar() != "v1") {
    return Bad(c, f.contains("version") ? LineOf(c, f.at("version").value, top) : top,
               "a mig-parted config starts with 'version: v1' (the only version mig-parted reads)");
  }
  if (!f.contains("mig-configs")) return Bad(c, top, "no 'mig-configs:'; it maps config names to lists of entries");
  const YAML::Node configs = f.at("mig-configs").value;
  const int configs_line = LineOf(c, configs, LineOf(c, f.at("mig-configs").key, top));
  if (!configs.IsMap() || configs.size() == 0) return Bad(c, configs_line, "'mig-configs' must map at least one config name to its entries");
  MigPartedConfig out;
  out.source = std::string(c.source);
  std::set<std::string> names;
  for (const auto& kv : configs) {
    NamedMigConfig named;
    named.line = LineOf(c, kv.first, configs_line);
    if (!kv.first.IsScalar() || kv.first.Scalar().empty()) return Bad(c, named.line, "a config name must be a plain name");
    named.name = kv.first.Scalar();
    if (std::any_of(named.name.begin(), named.name.end(), [](char ch) { return (ch >= 0 && ch < 0x20) || ch == 0x7f; })) {
      return Bad(c, named.line, fmt::format("config name '{}' has a control character; name it like all-balanced", Printable(named.name)));
    }
    if (!names.insert(named.name).second) return Bad(c, named.line, fmt::format("config '{}' is defined twice", Printable(named.name)));
    if (!kv.second.IsSequence() || kv.second.size() == 0) {
      return Bad(c, named.line, fmt::format("config '{}' must list at least one entry ('- devices: all ...')", Printable(named.name)));
    }
    for (const YAML::Node& e : kv.second) {
      TIDAL_ASSIGN_OR_RETURN(MigPartedEntry entry, ReadEntry(c, e, named.name, named.line));
      named.entries.push_back(std::move(entry));
    }
    out.configs.push_back(std::move(named));
  }
  return out;
}

template <typename F>
auto Guarded(const Ctx& c, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const YAML::Exception& e) {
    return Bad(c, (e.mark.line < 0 ? 0 : e.mark.line) + 1 + c.offset, fmt::format("not valid YAML: {}", Printable(e.msg)));
  } catch (const std::exception& e) {
    return Bad(c, 1 + c.offset, fmt::format("cannot read: {}", e.what()));
  }
}

}  // namespace

std::string PciDeviceId::ToString() const {
  std::string out = fmt::format("0x{:08X}", id);
  if (subsystem) out += fmt::format(":0x{:08X}", *subsystem);
  return out;
}

bool MigPartedEntry::Matches(int index, uint32_t pci, std::optional<uint32_t> subsystem) const {
  const bool model = device_filter.empty() || std::any_of(device_filter.begin(), device_filter.end(), [&](const PciDeviceId& f) {
                       return f.id == pci && (!f.subsystem || f.subsystem == subsystem);
                     });
  return model && (all_devices || std::find(devices.begin(), devices.end(), index) != devices.end());
}

std::map<std::string, int> MigPartedEntry::Counts() const {
  std::map<std::string, int> out;
  for (const MigDeviceCount& d : mig_devices)
    if (d.count > 0) out[d.profile] = d.count;
  return out;
}

const NamedMigConfig* MigPartedConfig::Find(std::string_view name) const {
  for (const NamedMigConfig& c : configs)
    if (c.name == name) return &c;
  return nullptr;
}

Result<MigPartedConfig> ReadMigParted(std::string_view text, std::string_view source) {
  const Ctx c{source, 0};
  return Guarded(c, [&]() -> Result<MigPartedConfig> { return ReadDoc(c, YAML::Load(std::string(text))); });
}

Result<MigPartedConfig> ReadMigPartedConfigMap(std::string_view text, std::string_view source, std::string_view key) {
  const Ctx file{source, 0};
  return Guarded(file, [&]() -> Result<MigPartedConfig> {
    const YAML::Node doc = YAML::Load(std::string(text));
    // (A lookup of a missing key gives an invalid node: test it before use.)
    const YAML::Node found = doc.IsMap() ? doc["data"] : YAML::Node();
    const YAML::Node data = found.IsDefined() ? found : YAML::Node();
    const YAML::Node value = data.IsMap() ? data[std::string(key)] : YAML::Node();
    const YAML::Node body = value.IsDefined() ? value : YAML::Node();
    if (!body.IsScalar()) {
      return Bad(file, LineOf(file, data.IsMap() ? data : doc, 1),
                 fmt::format("no data.\"{}\": a mig-parted ConfigMap holds the config there as a block ('{}: |')", key, key));
    }
    // A literal block's lines are the file's lines, from the one after '|'.
    const YAML::Mark m = body.Mark();
    const bool literal = m.pos >= 0 && static_cast<size_t>(m.pos) < text.size() && text[static_cast<size_t>(m.pos)] == '|';
    const std::string inner = literal ? std::string(source) : fmt::format("{} (data.\"{}\")", source, key);
    const Ctx c{inner, literal ? m.line + 1 : 0};
    return Guarded(c, [&]() { return ReadDoc(c, YAML::Load(body.Scalar())); });
  });
}

const MigPartedEntry* SelectEntry(const NamedMigConfig& config, int index, uint32_t id, std::optional<uint32_t> subsystem) {
  const MigPartedEntry* out = nullptr;
  for (const MigPartedEntry& e : config.entries)
    if (e.Matches(index, id, subsystem)) out = &e;
  return out;
}

}  // namespace tidal::mig

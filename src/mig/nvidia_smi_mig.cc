#include "mig/nvidia_smi_mig.h"

#include <algorithm>
#include <charconv>
#include <set>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tidal::mig {
namespace {

struct Line {
  int no = 0;
  std::string_view text;  // without the line end and trailing blanks
};

bool Blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && Blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && Blank(s.back())) s.remove_suffix(1);
  return s;
}

std::vector<Line> Lines(std::string_view text) {
  std::vector<Line> out;
  for (size_t pos = 0; pos < text.size();) {
    size_t end = std::min(text.find('\n', pos), text.size());
    std::string_view s = text.substr(pos, end - pos);
    while (!s.empty() && Blank(s.back())) s.remove_suffix(1);
    out.push_back({static_cast<int>(out.size()) + 1, s});
    pos = end + 1;
  }
  return out;
}

std::vector<std::string_view> Words(std::string_view s) {
  std::vector<std::string_view> out;
  for (size_t i = 0; i < s.size();) {
    while (i < s.size() && Blank(s[i])) ++i;
    const size_t b = i;
    while (i < s.size() && !Blank(s[i])) ++i;
    if (i > b) out.push_back(s.substr(b, i - b));
  }
  return out;
}

// Text quoted back in a message: printable ASCII, cut short.
std::string Shown(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 80)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  return s.size() > 80 ? out + "..." : out;
}

std::unexpected<Error> Fail(std::string_view source, int line, std::string_view what) {
  return MakeError(ErrorCode::kParse, "{}:{}: {}", source, line, what);
}

// A whole non-negative decimal number, or false.
bool Number(std::string_view s, int& out) {
  if (s.empty() || s[0] < '0' || s[0] > '9') return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

bool Decimal(std::string_view s, double& out) {
  if (s.empty() || s[0] < '0' || s[0] > '9') return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

// What nvidia-smi prints instead of a table when it has none to print.
Status NoTable(const std::vector<Line>& lines, std::string_view source, std::string_view command) {
  for (const Line& l : lines) {
    const std::string_view t = Trim(l.text);
    if (t.starts_with("No MIG-enabled devices found") || t.starts_with("No MIG-supported devices found")) {
      return MakeError(ErrorCode::kFailedPrecondition,
                       "{}:{}: nvidia-smi says '{}': MIG is off on every GPU; enable it (nvidia-smi -i <gpu> -mig 1, then reset "
                       "the GPU) and capture `{}` again",
                       source, l.no, Shown(t), command);
    }
    if (t.starts_with("Failed to ")) {
      return MakeError(ErrorCode::kFailedPrecondition, "{}:{}: nvidia-smi failed: '{}'; run `{}` as root on the GPU host", source,
                       l.no, Shown(t), command);
    }
  }
  return {};
}

struct Box {
  std::vector<Line> header;             // inner text of the lines above "|====|"
  std::vector<std::vector<Line>> rows;  // inner text, grouped between borders
};

bool IsBorder(std::string_view s) {
  return s.size() >= 2 && s.front() == '+' && s.find_first_not_of("+-") == std::string_view::npos;
}

// Reads the one box nvidia-smi draws, titled `title`.
Result<Box> ReadBox(std::string_view text, std::string_view source, std::string_view command, std::string_view title) {
  const std::vector<Line> lines = Lines(text);
  TIDAL_RETURN_IF_ERROR(NoTable(lines, source, command));
  size_t i = 0;
  while (i < lines.size() && lines[i].text.empty()) ++i;
  if (i == lines.size()) return Fail(source, 1, fmt::format("empty input; expected the output of `{}`", command));
  if (!IsBorder(lines[i].text)) {
    return Fail(source, lines[i].no,
                fmt::format("expected the top border '+---+' of the `{}` box, found '{}'", command, Shown(lines[i].text)));
  }
  enum { kTitle, kHeader, kRows } state = kTitle;
  Box box;
  std::vector<Line> group;
  int last = lines[i].no;
  for (++i; i < lines.size(); ++i) {
    const Line& l = lines[i];
    if (l.text.empty()) break;
    last = l.no;
    if (IsBorder(l.text)) {
      if (state != kRows || group.empty()) {
        return Fail(source, l.no,
                    fmt::format("a border '+---+' where {} belongs: the box is damaged; capture `{}` again", state == kRows ? "a row" : "the header",
                                command));
      }
      box.rows.push_back(std::move(group));
      group.clear();
      continue;
    }
    if (l.text.size() < 2 || l.text.front() != '|' || l.text.back() != '|') {
      return Fail(source, l.no,
                  fmt::format("'{}' is not a box line ('| ... |'): the output is cut or wrapped; capture the whole output of `{}` "
                              "into a file",
                              Shown(l.text), command));
    }
    const Line inner{l.no, l.text.substr(1, l.text.size() - 2)};
    if (state == kTitle) {
      const std::string_view t = Trim(inner.text);
      if (t != title) {
        return Fail(source, l.no,
                    fmt::format("this box is '{}', not '{}': give this reader the output of `{}`", Shown(t), title, command));
      }
      state = kHeader;
    } else if (state == kHeader) {
      if (!inner.text.empty() && inner.text.find_first_not_of("=+") == std::string_view::npos) {
        state = kRows;
      } else {
        box.header.push_back(inner);
      }
    } else {
      group.push_back(inner);
    }
  }
  if (state != kRows || !group.empty() || box.rows.empty()) {
    return Fail(source, last,
                fmt::format("the box ends without its closing border '+---+': the output is truncated; capture the whole "
                            "output of `{}`",
                            command));
  }
  for (; i < lines.size(); ++i) {
    if (!lines[i].text.empty()) {
      return Fail(source, lines[i].no, fmt::format("text after the box: '{}'; give one `{}` output", Shown(lines[i].text), command));
    }
  }
  return box;
}

// The header line's column names; those after the `fixed` ones are returned.
Result<std::vector<std::string>> Columns(const Line& line, std::string_view source, std::vector<std::string_view> fixed,
                                         std::string_view command) {
  const std::vector<std::string_view> w = Words(line.text);
  if (w.size() < fixed.size() || !std::equal(fixed.begin(), fixed.end(), w.begin())) {
    return Fail(source, line.no,
                fmt::format("header '{}' is not that of `{}` (it starts '{}')", Shown(Trim(line.text)), command, fmt::join(fixed, " ")));
  }
  return std::vector<std::string>(w.begin() + static_cast<std::ptrdiff_t>(fixed.size()), w.end());
}

// The values of one row line: "MIG <name>" joined into one word.
std::vector<std::string_view> Values(std::string_view text) {
  std::vector<std::string_view> w = Words(text);
  if (w.size() > 2 && w[1] == "MIG") w.erase(w.begin() + 1);
  return w;
}

Status IntField(std::string_view v, std::string_view field, std::string_view source, int line, int& out) {
  if (!Number(v, out)) return Fail(source, line, fmt::format("{} '{}' is not a whole number", field, Shown(v)));
  return {};
}

Status CountCheck(size_t have, const std::vector<std::string>& columns, std::string_view source, int line) {
  if (have == columns.size()) return {};
  return Fail(source, line,
              fmt::format("the row has {} values but the header names {} columns ({}): a column is missing or extra", have,
                          columns.size(), fmt::join(columns, " ")));
}

}  // namespace

Result<std::vector<GiProfileRow>> ReadLgip(std::string_view text, std::string_view source) {
  static constexpr std::string_view kCmd = "nvidia-smi mig -lgip";
  TIDAL_ASSIGN_OR_RETURN(Box box, ReadBox(text, source, kCmd, "GPU instance profiles:"));
  if (box.header.size() != 2) {
    return Fail(source, box.header.empty() ? 1 : box.header[0].no,
                fmt::format("the -lgip header has {} lines, not 2 (names, then Free/Total GiB ...)", box.header.size()));
  }
  TIDAL_ASSIGN_OR_RETURN(auto units1, Columns(box.header[0], source, {"GPU", "Name", "ID", "Instances", "Memory", "P2P"}, kCmd));
  TIDAL_ASSIGN_OR_RETURN(auto units2, Columns(box.header[1], source, {"Free/Total", "GiB"}, kCmd));
  std::vector<std::string> names1 = {"GPU", "Name", "ID", "Free/Total", "Memory", "P2P"};
  names1.insert(names1.end(), units1.begin(), units1.end());
  std::vector<GiProfileRow> out;
  std::set<std::pair<int, int>> seen;
  for (const std::vector<Line>& group : box.rows) {
    const int no = group[0].no;
    if (group.size() != 2) {
      return Fail(source, no, fmt::format("a -lgip row has 2 lines (values, then {}); this one has {}", fmt::join(units2, " "), group.size()));
    }
    const std::vector<std::string_view> v = Values(group[0].text);
    const std::vector<std::string_view> v2 = Words(group[1].text);
    TIDAL_RETURN_IF_ERROR(CountCheck(v.size(), names1, source, no));
    TIDAL_RETURN_IF_ERROR(CountCheck(v2.size(), units2, source, group[1].no));
    GiProfileRow r;
    r.at = {std::string(source), no};
    r.name = std::string(v[1]);
    TIDAL_RETURN_IF_ERROR(IntField(v[0], "GPU", source, no, r.gpu));
    TIDAL_RETURN_IF_ERROR(IntField(v[2], "ID", source, no, r.id));
    const size_t slash = v[3].find('/');
    if (slash == std::string_view::npos || !Number(v[3].substr(0, slash), r.free) || !Number(v[3].substr(slash + 1), r.total)) {
      return Fail(source, no, fmt::format("Instances Free/Total '{}' is not two whole numbers like 7/7", Shown(v[3])));
    }
    if (r.free > r.total) {
      return Fail(source, no, fmt::format("Instances Free/Total '{}': {} free of {} is more than the total", Shown(v[3]), r.free, r.total));
    }
    if (!Decimal(v[4], r.memory_gib)) return Fail(source, no, fmt::format("Memory GiB '{}' is not a number like 4.75", Shown(v[4])));
    if (v[5] != "Yes" && v[5] != "No") return Fail(source, no, fmt::format("P2P '{}' is neither Yes nor No", Shown(v[5])));
    r.p2p = v[5] == "Yes";
    for (size_t k = 0; k < units1.size(); ++k) TIDAL_RETURN_IF_ERROR(IntField(v[6 + k], units1[k], source, no, r.units[units1[k]]));
    for (size_t k = 0; k < units2.size(); ++k)
      TIDAL_RETURN_IF_ERROR(IntField(v2[k], units2[k], source, group[1].no, r.units[units2[k]]));
    if (!seen.insert({r.gpu, r.id}).second) {
      return Fail(source, no, fmt::format("GPU {} lists profile ID {} twice; give one `{}` output", r.gpu, r.id, kCmd));
    }
    out.push_back(std::move(r));
  }
  return out;
}

Result<std::vector<PlacementRow>> ReadLgipp(std::string_view text, std::string_view source) {
  const std::vector<Line> lines = Lines(text);
  TIDAL_RETURN_IF_ERROR(NoTable(lines, source, "nvidia-smi mig -lgipp"));
  std::vector<PlacementRow> out;
  std::set<std::pair<int, int>> seen;
  for (const Line& l : lines) {
    const std::string_view t = Trim(l.text);
    if (t.empty()) continue;
    const auto bad = [&](std::string_view why) {
      return Fail(source, l.no,
                  fmt::format("{}: expected 'GPU <n> Profile ID <id> Placements: {{<starts>}}:<size>' (nvidia-smi mig -lgipp), "
                              "found '{}'",
                              why, Shown(t)));
    };
    if (t.front() == '+' || t.front() == '|') return bad("a box, not a -lgipp line (is this -lgip or -lgi output?)");
    const std::vector<std::string_view> w = Words(t);
    PlacementRow r;
    r.at = {std::string(source), l.no};
    if (w.size() < 6 || w[0] != "GPU" || w[2] != "Profile" || w[3] != "ID") return bad("not a placement line");
    if (!Number(w[1], r.gpu)) return bad(fmt::format("GPU '{}' is not a whole number", Shown(w[1])));
    if (!Number(w[4], r.profile_id)) return bad(fmt::format("Profile ID '{}' is not a whole number", Shown(w[4])));
    std::string rest;  // "Placements:{0,4}:4", the driver's spacing folded
    for (size_t k = 5; k < w.size(); ++k) rest += w[k];
    std::string_view s = rest;
    if (s.starts_with("Placements")) s.remove_prefix(10);
    else if (s.starts_with("Placement")) s.remove_prefix(9);
    else return bad("no 'Placements:'");
    if (!s.starts_with(":{")) return bad("no ': {' after Placements");
    s.remove_prefix(2);
    const size_t close = s.find('}');
    if (close == std::string_view::npos) return bad("no '}' closes the starts");
    const std::string_view list = s.substr(0, close);
    for (size_t b = 0; !list.empty();) {
      const size_t comma = list.find(',', b);
      const std::string_view piece = list.substr(b, comma == std::string_view::npos ? std::string_view::npos : comma - b);
      int start = 0;
      if (!Number(piece, start) || start >= kMemorySlices) return bad(fmt::format("start '{}' is not a memory slice 0-7", Shown(piece)));
      if (std::find(r.starts.begin(), r.starts.end(), start) != r.starts.end()) return bad(fmt::format("start {} is listed twice", start));
      r.starts.push_back(start);
      if (comma == std::string_view::npos) break;
      b = comma + 1;
    }
    s.remove_prefix(close + 1);
    if (!s.starts_with(":") || !Number(s.substr(1), r.size) || r.size < 1 || r.size > kMemorySlices) {
      return bad("the size after '}:' is not a number of memory slices 1-8");
    }
    for (int start : r.starts) {
      if (start + r.size > kMemorySlices) return bad(fmt::format("placement {}:{} runs past the 8 memory slices", start, r.size));
    }
    std::sort(r.starts.begin(), r.starts.end());
    if (!seen.insert({r.gpu, r.profile_id}).second) {
      return Fail(source, l.no, fmt::format("GPU {} lists profile ID {} twice; give one `nvidia-smi mig -lgipp` output", r.gpu, r.profile_id));
    }
    out.push_back(std::move(r));
  }
  if (out.empty()) return Fail(source, 1, "empty input; expected the output of `nvidia-smi mig -lgipp`");
  return out;
}

Result<std::vector<GpuInstanceRow>> ReadLgi(std::string_view text, std::string_view source) {
  static constexpr std::string_view kCmd = "nvidia-smi mig -lgi";
  for (const Line& l : Lines(text)) {
    if (l.text.empty()) continue;
    if (Trim(l.text).starts_with("No GPU instances found")) return std::vector<GpuInstanceRow>{};
    break;
  }
  TIDAL_ASSIGN_OR_RETURN(Box box, ReadBox(text, source, kCmd, "GPU instances:"));
  if (box.header.size() != 2) {
    return Fail(source, box.header.empty() ? 1 : box.header[0].no,
                fmt::format("the -lgi header has {} lines, not 2 (names, then ID ID Start:Size)", box.header.size()));
  }
  TIDAL_ASSIGN_OR_RETURN(auto extra1, Columns(box.header[0], source, {"GPU", "Name", "Profile", "Instance", "Placement"}, kCmd));
  TIDAL_ASSIGN_OR_RETURN(auto extra2, Columns(box.header[1], source, {"ID", "ID", "Start:Size"}, kCmd));
  if (!extra1.empty() || !extra2.empty()) {
    return Fail(source, box.header[0].no, fmt::format("unknown -lgi columns '{}'", fmt::join(extra1.empty() ? extra2 : extra1, " ")));
  }
  const std::vector<std::string> names = {"GPU", "Name", "Profile ID", "Instance ID", "Placement Start:Size"};
  std::vector<GpuInstanceRow> out;
  std::set<std::pair<int, int>> seen;
  for (const std::vector<Line>& group : box.rows) {
    const int no = group[0].no;
    if (group.size() != 1) return Fail(source, group[1].no, "a -lgi row is one line; a border '+---+' is missing above this one");
    const std::vector<std::string_view> v = Values(group[0].text);
    TIDAL_RETURN_IF_ERROR(CountCheck(v.size(), names, source, no));
    GpuInstanceRow r;
    r.at = {std::string(source), no};
    r.name = std::string(v[1]);
    TIDAL_RETURN_IF_ERROR(IntField(v[0], "GPU", source, no, r.gpu));
    TIDAL_RETURN_IF_ERROR(IntField(v[2], "Profile ID", source, no, r.profile_id));
    TIDAL_RETURN_IF_ERROR(IntField(v[3], "Instance ID", source, no, r.instance_id));
    const size_t colon = v[4].find(':');
    if (colon == std::string_view::npos || !Number(v[4].substr(0, colon), r.start) || !Number(v[4].substr(colon + 1), r.size)) {
      return Fail(source, no, fmt::format("Placement Start:Size '{}' is not two whole numbers like 4:4", Shown(v[4])));
    }
    if (r.size < 1 || r.start + r.size > kMemorySlices) {
      return Fail(source, no, fmt::format("Placement '{}' is not within the 8 memory slices", Shown(v[4])));
    }
    if (!seen.insert({r.gpu, r.instance_id}).second) {
      return Fail(source, no, fmt::format("GPU {} lists instance ID {} twice; give one `{}` output", r.gpu, r.instance_id, kCmd));
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace tidal::mig

#include "telemetry/dcgm.h"

#include <cctype>
#include <charconv>
#include <cmath>

#include "common/csv.h"

namespace tidal::telemetry {

std::string DcgmSample::Host() const {
  if (auto it = labels.find("Hostname"); it != labels.end()) return it->second;
  if (auto it = labels.find("hostname"); it != labels.end()) return it->second;
  return "";
}

std::string DcgmSample::GpuKey() const {
  std::string key = Host() + "/";
  if (auto it = labels.find("gpu"); it != labels.end()) key += it->second;
  if (auto it = labels.find("GPU_I_ID"); it != labels.end()) key += "/" + it->second;
  return key;
}

bool IsDcgmBlank(double v) {
  if (std::isnan(v)) return true;
  constexpr double kInt64Blank = 9223372036854775792.0;  // 0x7ffffffffffffff0 (doubles round up to it)
  constexpr double kInt32Blank = 2147483632.0;           // 0x7ffffff0
  constexpr double kFp64Blank = 140737488355328.0;       // 2^47
  return v >= kInt64Blank || (v >= kInt32Blank && v <= kInt32Blank + 3) || (v >= kFp64Blank && v <= kFp64Blank + 3);
}

Result<std::vector<DcgmSample>> ParseDcgmText(std::string_view text, const std::string& source) {
  std::vector<DcgmSample> out;
  int line_no = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    size_t b = 0;
    while (b < line.size() && std::isspace(static_cast<unsigned char>(line[b]))) ++b;
    line.remove_prefix(b);
    if (line.empty() || line.front() == '#' || line == "...") {
      if (end == text.size()) break;
      continue;
    }
    auto bad = [&](std::string_view what) {
      return MakeError(ErrorCode::kParse, "{}:{}: {} in '{}'", source, line_no, what, line.substr(0, 120));
    };
    DcgmSample s;
    s.line = line_no;
    size_t i = 0;
    while (i < line.size() && (std::isalnum(static_cast<unsigned char>(line[i])) || line[i] == '_' || line[i] == ':')) ++i;
    if (i == 0) return bad("expected a metric name");
    for (char c : line.substr(0, i)) s.metric.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (true) {
        while (i < line.size() && (line[i] == ' ' || line[i] == ',')) ++i;
        if (i < line.size() && line[i] == '}') {
          ++i;
          break;
        }
        const size_t k0 = i;
        while (i < line.size() && (std::isalnum(static_cast<unsigned char>(line[i])) || line[i] == '_')) ++i;
        if (i == k0 || i + 1 >= line.size() || line[i] != '=' || line[i + 1] != '"') return bad("malformed label");
        std::string key(line.substr(k0, i - k0));
        i += 2;
        std::string val;
        while (i < line.size() && line[i] != '"') {
          if (line[i] == '\\' && i + 1 < line.size()) {
            ++i;
            val.push_back(line[i] == 'n' ? '\n' : line[i]);
          } else {
            val.push_back(line[i]);
          }
          ++i;
        }
        if (i >= line.size()) return bad("unterminated label value");
        ++i;
        s.labels[key] = val;
      }
    }
    std::string_view rest = line.substr(i);
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    const size_t sp = rest.find(' ');  // an optional timestamp follows
    std::string_view num = rest.substr(0, sp);
    if (num.empty()) return bad("missing value");
    if (num == "NaN" || num == "nan") {
      s.value = std::nullopt;
    } else {
      double v = 0;
      auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), v);
      if (ec == std::errc::result_out_of_range) {
        s.value = std::nullopt;
      } else if (ec != std::errc() || p != num.data() + num.size()) {
        return bad(fmt::format("value '{}' is not a number", num));
      } else if (!IsDcgmBlank(v)) {
        s.value = v;
      }
    }
    out.push_back(std::move(s));
    if (end == text.size()) break;
  }
  return out;
}

Result<std::vector<DcgmSample>> ReadDcgmFile(const std::string& path) {
  TIDAL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  return ParseDcgmText(text, path);
}

std::optional<MetricSummary> Summarize(const std::vector<DcgmSample>& samples, const std::string& metric) {
  MetricSummary s;
  double sum = 0;
  for (const auto& x : samples) {
    if (x.metric != metric) continue;
    if (!x.value) {
      ++s.missing;
      continue;
    }
    sum += *x.value;
    ++s.devices;
  }
  if (s.devices == 0) return std::nullopt;
  s.mean = sum / s.devices;
  return s;
}

}  // namespace tidal::telemetry

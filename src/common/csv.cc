#include "common/csv.h"

#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>

namespace tidal {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// Splits one logical record starting at `pos`. Quoted fields may span lines;
// `line` is advanced for each newline consumed.
Result<std::vector<std::string>> SplitRecord(std::string_view text, size_t& pos, int& line,
                                             const std::string& source) {
  std::vector<std::string> fields;
  std::string field;
  bool quoted = false;
  bool was_quoted = false;
  const int start_line = line;
  while (pos < text.size()) {
    char c = text[pos];
    if (quoted) {
      if (c == '"') {
        if (pos + 1 < text.size() && text[pos + 1] == '"') {
          field.push_back('"');
          pos += 2;
          continue;
        }
        quoted = false;
        ++pos;
        continue;
      }
      if (c == '\n') ++line;
      field.push_back(c);
      ++pos;
      continue;
    }
    if (c == '"' && Trim(field).empty()) {
      quoted = true;
      was_quoted = true;
      field.clear();
      ++pos;
      continue;
    }
    if (c == ',') {
      fields.push_back(was_quoted ? field : std::string(Trim(field)));
      field.clear();
      was_quoted = false;
      ++pos;
      continue;
    }
    if (c == '\n') {
      ++pos;
      ++line;
      fields.push_back(was_quoted ? field : std::string(Trim(field)));
      return fields;
    }
    field.push_back(c);
    ++pos;
  }
  if (quoted) {
    return MakeError(ErrorCode::kParse,
                     "{}:{}: unterminated quoted field (a '\"' opens a field that never closes); "
                     "fix the quoting or remove the stray quote",
                     source, start_line);
  }
  fields.push_back(was_quoted ? field : std::string(Trim(field)));
  ++line;
  return fields;
}

bool AllBlank(const std::vector<std::string>& f) {
  for (const auto& s : f)
    if (!s.empty()) return false;
  return true;
}

}  // namespace

Result<std::string> ReadFileToString(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return MakeError(ErrorCode::kIo, "{}: cannot open file (does it exist and is it readable?)",
                     path);
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return MakeError(ErrorCode::kIo, "{}: read failed", path);
  return ss.str();
}

Result<CsvTable> CsvTable::ReadFile(const std::string& path) {
  TIDAL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  return Parse(text, path);
}

Result<CsvTable> CsvTable::Parse(std::string_view text, std::string source_name) {
  CsvTable table;
  auto meta = std::make_shared<CsvMeta>();
  meta->source = std::move(source_name);
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  size_t pos = 0;
  int line = 1;
  bool have_header = false;
  while (pos < text.size()) {
    int rec_line = line;
    TIDAL_ASSIGN_OR_RETURN(std::vector<std::string> fields,
                           SplitRecord(text, pos, line, meta->source));
    if (AllBlank(fields) && fields.size() <= 1) continue;  // blank line
    if (!have_header) {
      meta->header = std::move(fields);
      have_header = true;
      continue;
    }
    if (fields.size() != meta->header.size()) {
      return MakeError(ErrorCode::kParse,
                       "{}:{}: expected {} fields as in the header, found {} (truncated or "
                       "malformed line?); fix or remove the line",
                       meta->source, rec_line, meta->header.size(), fields.size());
    }
    table.rows_.emplace_back(meta, rec_line, std::move(fields));
  }
  if (!have_header) {
    return MakeError(ErrorCode::kParse, "{}: file is empty (no header line); expected a CSV with "
                     "a header row", meta->source);
  }
  table.meta_ = std::move(meta);
  return table;
}

std::optional<size_t> CsvTable::FindColumn(std::string_view name) const {
  for (size_t i = 0; i < header().size(); ++i)
    if (header()[i] == name) return i;
  return std::nullopt;
}

Result<size_t> CsvTable::RequireColumn(std::string_view name) const {
  if (auto c = FindColumn(name)) return *c;
  std::string have;
  for (const auto& h : header()) have += (have.empty() ? "" : ",") + h;
  return MakeError(ErrorCode::kParse, "{}:1: missing column '{}' (header has: {})", source(), name,
                   have);
}

std::string CsvRow::Where(size_t col) const {
  return fmt::format("{}:{}: column '{}'", meta_ ? meta_->source : "<csv>", line_,
                     meta_ ? meta_->ColumnName(col) : std::to_string(col));
}

Result<std::string_view> CsvRow::Str(size_t col) const {
  if (col >= fields_.size()) return MakeError(ErrorCode::kParse, "{}: missing field", Where(col));
  return std::string_view(fields_[col]);
}

Result<int64_t> CsvRow::Int(size_t col, int64_t min, int64_t max) const {
  TIDAL_ASSIGN_OR_RETURN(std::string_view s, Str(col));
  if (s.empty()) {
    return MakeError(ErrorCode::kParse, "{}: empty, expected an integer in [{}, {}]", Where(col),
                     min, max);
  }
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec == std::errc::result_out_of_range) {
    return MakeError(ErrorCode::kParse, "{}: '{}' is too large, expected an integer in [{}, {}]",
                     Where(col), s, min, max);
  }
  if (ec != std::errc() || p != s.data() + s.size()) {
    return MakeError(ErrorCode::kParse, "{}: '{}' is not an integer", Where(col), s);
  }
  if (v < min || v > max) {
    return MakeError(ErrorCode::kParse, "{}: {} is out of range, expected [{}, {}]", Where(col), v,
                     min, max);
  }
  return v;
}

Result<int64_t> CsvRow::IntLenient(size_t col, int64_t min, int64_t max) const {
  TIDAL_ASSIGN_OR_RETURN(std::string_view s, Str(col));
  if (auto dot = s.find('.'); dot != std::string_view::npos) {
    for (size_t i = dot + 1; i < s.size(); ++i) {
      if (s[i] != '0') {
        return MakeError(ErrorCode::kParse, "{}: '{}' has a fractional part, expected a whole "
                         "number", Where(col), s);
      }
    }
    CsvRow whole(meta_, line_, {std::string(s.substr(0, dot))});
    auto r = whole.Int(0, min, max);
    if (!r) {
      return MakeError(ErrorCode::kParse, "{}: '{}' is not a whole number in [{}, {}]", Where(col),
                       s, min, max);
    }
    return *r;
  }
  return Int(col, min, max);
}

Result<double> CsvRow::Double(size_t col, double min, double max) const {
  TIDAL_ASSIGN_OR_RETURN(std::string_view s, Str(col));
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v)) {
    return MakeError(ErrorCode::kParse, "{}: '{}' is not a number", Where(col), s);
  }
  if (v < min || v > max) {
    return MakeError(ErrorCode::kParse, "{}: {} is out of range, expected [{}, {}]", Where(col), v,
                     min, max);
  }
  return v;
}

}  // namespace tidal

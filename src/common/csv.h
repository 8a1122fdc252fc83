// CSV reading with precise error locations. Every accessor that can fail names
// the file, line, column and what was expected, so a reader that uses it can
// never crash on bad input nor silently drop a row.
//
// Accepts RFC 4180 quoting, CRLF line ends, a UTF-8 BOM, and surrounding blanks
// in unquoted fields (as in Philly's "machineId, number of GPUs" header).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace tidal {

// The file name and header, shared by a table's rows for error messages.
struct CsvMeta {
  std::string source;
  std::vector<std::string> header;
  std::string ColumnName(size_t col) const {
    return col < header.size() ? header[col] : "#" + std::to_string(col);
  }
};

// One data row, with the line it came from for error messages.
class CsvRow {
 public:
  CsvRow(std::shared_ptr<const CsvMeta> meta, int line, std::vector<std::string> fields)
      : meta_(std::move(meta)), line_(line), fields_(std::move(fields)) {}

  int line() const { return line_; }
  size_t size() const { return fields_.size(); }
  const std::string& field(size_t i) const { return fields_[i]; }

  // Typed access by column index. Range bounds are inclusive.
  Result<std::string_view> Str(size_t col) const;
  Result<int64_t> Int(size_t col, int64_t min, int64_t max) const;
  // Accepts integers written as decimals with a zero fraction ("66.0").
  Result<int64_t> IntLenient(size_t col, int64_t min, int64_t max) const;
  Result<double> Double(size_t col, double min, double max) const;
  bool Empty(size_t col) const { return col >= fields_.size() || fields_[col].empty(); }

  // "FILE:LINE: column 'NAME': " — the prefix of every error about this row.
  std::string Where(size_t col) const;

 private:
  std::shared_ptr<const CsvMeta> meta_;
  int line_;
  std::vector<std::string> fields_;
};

class CsvTable {
 public:
  // Reads the whole file. The first non-empty line is the header. Rows whose
  // field count differs from the header's are errors (truncated lines).
  static Result<CsvTable> ReadFile(const std::string& path);
  static Result<CsvTable> Parse(std::string_view text, std::string source_name);

  const std::string& source() const { return meta_->source; }
  const std::vector<std::string>& header() const { return meta_->header; }
  const std::vector<CsvRow>& rows() const { return rows_; }

  std::optional<size_t> FindColumn(std::string_view name) const;
  // Error naming the missing column and the columns present.
  Result<size_t> RequireColumn(std::string_view name) const;
  std::string ColumnName(size_t col) const { return meta_->ColumnName(col); }

 private:
  CsvTable() = default;
  std::shared_ptr<const CsvMeta> meta_;
  std::vector<CsvRow> rows_;
};

// Reads a whole file into memory.
Result<std::string> ReadFileToString(const std::string& path);

}  // namespace tidal

// A small, strict JSON reader and string quoting, for the file formats Tritium reads and writes
// (safetensors headers, PyTorch parity fixtures' metadata). RFC 8259 only: no comments, no
// trailing commas, no NaN literals; duplicate object keys are an error (a header naming one
// tensor twice must not pick one silently). Numbers keep their text so integers are read exactly.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tritium::io {

class Json {
 public:
  enum class Kind { null, boolean, number, string, array, object };

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::null; }
  bool is_bool() const { return kind_ == Kind::boolean; }
  bool is_number() const { return kind_ == Kind::number; }
  bool is_string() const { return kind_ == Kind::string; }
  bool is_array() const { return kind_ == Kind::array; }
  bool is_object() const { return kind_ == Kind::object; }

  // Typed reads: an error naming `what` (the caller's description of this value) and the kind
  // found, when the value is of another kind.
  bool as_bool(std::string_view what) const;
  double as_double(std::string_view what) const;
  // A number written as an integer (no fraction or exponent) that fits int64.
  int64_t as_int64(std::string_view what) const;
  const std::string& as_string(std::string_view what) const;
  const std::vector<Json>& as_array(std::string_view what) const;
  const std::vector<std::pair<std::string, Json>>& as_object(std::string_view what) const;

  // Object member lookup: nullptr when absent (or when this is no object).
  const Json* find(std::string_view key) const;
  // Object member that must exist: an error naming `what` and the key otherwise.
  const Json& at(std::string_view key, std::string_view what) const;

  // The number's text as written ("1e-5", "-3").
  const std::string& number_text() const { return text_; }

  static Json parse(std::string_view text, std::string_view what);

 private:
  friend class JsonParser;
  Kind kind_ = Kind::null;
  bool bool_ = false;
  std::string text_;  // string value, or the number's text
  std::vector<Json> array_;
  std::vector<std::pair<std::string, Json>> object_;
};

// Parses `text` as one JSON value (surrounding whitespace allowed). An error names `what` (the
// file or field being read), the byte offset and what was expected there.
inline Json parse_json(std::string_view text, std::string_view what) { return Json::parse(text, what); }

// `s` as a JSON string literal, quotes included (control characters, quotes and backslashes
// escaped; other bytes, UTF-8 included, kept as they are).
std::string json_quote(std::string_view s);

const char* json_kind_name(Json::Kind k);

}  // namespace tritium::io

// The strict JSON reader of io/json.h: recursive descent over the bytes, with a depth limit so
// a hostile file cannot exhaust the stack.
#include "io/json.h"

#include <charconv>
#include <cstdlib>

#include "common/error.h"

namespace tritium::io {

const char* json_kind_name(Json::Kind k) {
  switch (k) {
    case Json::Kind::null: return "null";
    case Json::Kind::boolean: return "a boolean";
    case Json::Kind::number: return "a number";
    case Json::Kind::string: return "a string";
    case Json::Kind::array: return "an array";
    case Json::Kind::object: return "an object";
  }
  return "?";
}

namespace {
[[noreturn]] void wrong_kind(std::string_view what, const char* wanted, Json::Kind got) {
  fail("{}: expected {}, got {}", what, wanted, json_kind_name(got));
}
}  // namespace

bool Json::as_bool(std::string_view what) const {
  if (kind_ != Kind::boolean) wrong_kind(what, "a boolean", kind_);
  return bool_;
}

double Json::as_double(std::string_view what) const {
  if (kind_ != Kind::number) wrong_kind(what, "a number", kind_);
  return std::strtod(text_.c_str(), nullptr);
}

int64_t Json::as_int64(std::string_view what) const {
  if (kind_ != Kind::number) wrong_kind(what, "an integer", kind_);
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text_.data(), text_.data() + text_.size(), v);
  if (ec != std::errc() || end != text_.data() + text_.size())
    fail("{}: expected an integer that fits 64 bits, got {}", what, text_);
  return v;
}

const std::string& Json::as_string(std::string_view what) const {
  if (kind_ != Kind::string) wrong_kind(what, "a string", kind_);
  return text_;
}

const std::vector<Json>& Json::as_array(std::string_view what) const {
  if (kind_ != Kind::array) wrong_kind(what, "an array", kind_);
  return array_;
}

const std::vector<std::pair<std::string, Json>>& Json::as_object(std::string_view what) const {
  if (kind_ != Kind::object) wrong_kind(what, "an object", kind_);
  return object_;
}

const Json* Json::find(std::string_view key) const {
  for (const auto& [k, v] : object_)
    if (k == key) return &v;
  return nullptr;
}

const Json& Json::at(std::string_view key, std::string_view what) const {
  as_object(what);
  if (const Json* v = find(key)) return *v;
  fail("{}: missing key \"{}\"", what, key);
}

// ---- parsing ------------------------------------------------------------------------------------

class JsonParser {
 public:
  JsonParser(std::string_view text, std::string_view what) : s_(text), what_(what) {}

  Json document() {
    Json v = value(0);
    skip_space();
    if (pos_ != s_.size()) error("unexpected text after the JSON value");
    return v;
  }

 private:
  static constexpr int kMaxDepth = 128;

  [[noreturn]] void error(std::string_view expected) const {
    fail("{}: bad JSON at byte {}: {}", what_, pos_, expected);
  }
  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }
  bool at_end() const { return pos_ >= s_.size(); }
  void expect_word(std::string_view w) {
    if (s_.substr(pos_, w.size()) != w) error("expected a JSON value");
    pos_ += w.size();
  }

  Json value(int depth) {
    if (depth > kMaxDepth) error("nesting deeper than 128 levels");
    skip_space();
    if (at_end()) error("unexpected end of text (a value was expected)");
    Json v;
    char c = s_[pos_];
    if (c == '{') {
      v.kind_ = Json::Kind::object;
      ++pos_;
      skip_space();
      if (!at_end() && s_[pos_] == '}') {
        ++pos_;
        return v;
      }
      while (true) {
        skip_space();
        if (at_end() || s_[pos_] != '"') error("expected a string key");
        std::string key = string_literal();
        for (const auto& kv : v.object_)
          if (kv.first == key) error(fmt::format("duplicate key \"{}\"", key));
        skip_space();
        if (at_end() || s_[pos_] != ':') error("expected ':' after an object key");
        ++pos_;
        v.object_.emplace_back(std::move(key), value(depth + 1));
        skip_space();
        if (at_end()) error("unexpected end of text inside an object");
        if (s_[pos_] == ',') {
          ++pos_;
          continue;
        }
        if (s_[pos_] == '}') {
          ++pos_;
          return v;
        }
        error("expected ',' or '}' in an object");
      }
    }
    if (c == '[') {
      v.kind_ = Json::Kind::array;
      ++pos_;
      skip_space();
      if (!at_end() && s_[pos_] == ']') {
        ++pos_;
        return v;
      }
      while (true) {
        v.array_.push_back(value(depth + 1));
        skip_space();
        if (at_end()) error("unexpected end of text inside an array");
        if (s_[pos_] == ',') {
          ++pos_;
          continue;
        }
        if (s_[pos_] == ']') {
          ++pos_;
          return v;
        }
        error("expected ',' or ']' in an array");
      }
    }
    if (c == '"') {
      v.kind_ = Json::Kind::string;
      v.text_ = string_literal();
      return v;
    }
    if (c == 't') {
      expect_word("true");
      v.kind_ = Json::Kind::boolean;
      v.bool_ = true;
      return v;
    }
    if (c == 'f') {
      expect_word("false");
      v.kind_ = Json::Kind::boolean;
      return v;
    }
    if (c == 'n') {
      expect_word("null");
      return v;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
      v.kind_ = Json::Kind::number;
      v.text_ = number();
      return v;
    }
    error("expected a JSON value");
  }

  static bool digit(char c) { return c >= '0' && c <= '9'; }

  std::string number() {
    size_t start = pos_;
    if (s_[pos_] == '-') ++pos_;
    if (at_end() || !digit(s_[pos_])) error("expected a digit");
    if (s_[pos_] == '0') {
      ++pos_;
    } else {
      while (!at_end() && digit(s_[pos_])) ++pos_;
    }
    if (!at_end() && s_[pos_] == '.') {
      ++pos_;
      if (at_end() || !digit(s_[pos_])) error("expected a digit after '.'");
      while (!at_end() && digit(s_[pos_])) ++pos_;
    }
    if (!at_end() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (!at_end() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      if (at_end() || !digit(s_[pos_])) error("expected a digit in an exponent");
      while (!at_end() && digit(s_[pos_])) ++pos_;
    }
    return std::string(s_.substr(start, pos_ - start));
  }

  unsigned hex4() {
    if (pos_ + 4 > s_.size()) error("expected four hex digits after \\u");
    unsigned v = 0;
    for (int i = 0; i < 4; ++i) {
      char c = s_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= static_cast<unsigned>(c - '0');
      else if (c >= 'a' && c <= 'f') v |= static_cast<unsigned>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= static_cast<unsigned>(c - 'A' + 10);
      else error("expected four hex digits after \\u");
    }
    return v;
  }

  static void append_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  std::string string_literal() {
    ++pos_;  // the opening quote
    std::string out;
    while (true) {
      if (at_end()) error("unterminated string");
      char c = s_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) error("a control character inside a string (escape it)");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (at_end()) error("unterminated escape");
      char e = s_[pos_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned cp = hex4();
          if (cp >= 0xD800 && cp < 0xDC00) {  // a surrogate pair
            if (s_.substr(pos_, 2) != "\\u") error("a lone high surrogate in \\u escape");
            pos_ += 2;
            unsigned lo = hex4();
            if (lo < 0xDC00 || lo > 0xDFFF) error("a high surrogate without its low surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            error("a lone low surrogate in \\u escape");
          }
          append_utf8(out, cp);
          break;
        }
        default: error("an unknown escape in a string");
      }
    }
  }

  std::string_view s_;
  std::string_view what_;
  size_t pos_ = 0;
};

Json Json::parse(std::string_view text, std::string_view what) { return JsonParser(text, what).document(); }

std::string json_quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
        else out += c;
    }
  }
  return out + "\"";
}

}  // namespace tritium::io

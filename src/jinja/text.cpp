// String helpers (UTF-8 aware where JavaScript counts characters).
#include "jinja/text.h"

#include <cctype>

#include "jinja/lexer.h"

namespace pagoda::jinja {

std::vector<std::string> code_points(std::string_view s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = s[i];
    size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    len = std::min(len, s.size() - i);
    out.emplace_back(s.substr(i, len));
    i += len;
  }
  return out;
}

size_t utf16_length(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) {
    if ((c & 0xC0) != 0x80) ++n;
    if (c >= 0xF0) ++n;  // a surrogate pair
  }
  return n;
}

std::string ascii_upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string ascii_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string title_case(std::string_view s) {
  std::string out(s);
  bool prev_word = false;
  for (char& c : out) {
    const bool word = std::isalnum(static_cast<unsigned char>(c)) || c == '_';
    if (word && !prev_word) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    prev_word = word;
  }
  return out;
}

std::string strip_chars(std::string_view s, std::string_view chars, bool left, bool right) {
  if (chars.empty()) {
    if (left) s = js_trim_start(s);
    if (right) s = js_trim_end(s);
    return std::string(s);
  }
  const auto set = code_points(chars);
  auto pts = code_points(s);
  auto in_set = [&](const std::string& p) {
    for (const auto& c : set)
      if (c == p) return true;
    return false;
  };
  size_t b = 0, e = pts.size();
  if (left)
    while (b < e && in_set(pts[b])) ++b;
  if (right)
    while (e > b && in_set(pts[e - 1])) --e;
  std::string out;
  for (size_t i = b; i < e; ++i) out += pts[i];
  return out;
}

std::vector<std::string> split(std::string_view s, const std::string* sep, int64_t maxsplit) {
  std::vector<std::string> out;
  if (!sep) {  // runs of whitespace; leading/trailing ignored
    std::string_view rest = js_trim_start(s);
    while (!rest.empty()) {
      if (maxsplit >= 0 && static_cast<int64_t>(out.size()) >= maxsplit) {
        out.emplace_back(rest);
        break;
      }
      size_t i = 0;
      while (i < rest.size() && !js_space_at(rest, i)) ++i;
      out.emplace_back(rest.substr(0, i));
      rest = js_trim_start(rest.substr(i));
    }
    return out;
  }
  size_t start = 0;
  while (true) {
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) >= maxsplit) break;
    const size_t at = s.find(*sep, start);
    if (at == std::string_view::npos) break;
    out.emplace_back(s.substr(start, at - start));
    start = at + sep->size();
  }
  out.emplace_back(s.substr(start));
  return out;
}

std::string replace_all(std::string_view s, std::string_view from, std::string_view to, int64_t count) {
  if (count == 0) return std::string(s);
  int64_t left = count < 0 ? INT64_MAX : count;
  std::string out;
  if (from.empty()) {  // between every two characters, and at both ends
    for (const std::string& p : code_points(s)) {
      if (left > 0) {
        out += to;
        --left;
      }
      out += p;
    }
    if (left > 0) out += to;
    return out;
  }
  size_t start = 0;
  while (left > 0) {
    const size_t at = s.find(from, start);
    if (at == std::string_view::npos) break;
    out.append(s.substr(start, at - start));
    out += to;
    start = at + from.size();
    --left;
  }
  out.append(s.substr(start));
  return out;
}

}  // namespace pagoda::jinja

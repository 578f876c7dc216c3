#include "server/cors.h"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "util/error.h"

namespace pagoda::server {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Header names (RFC 9110 tokens), commas and spaces only: nothing else is echoed.
bool header_name_list(std::string_view s) {
  constexpr size_t kMaxEcho = 1024;
  if (s.empty() || s.size() > kMaxEcho) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
           c == ',' || c == ' ';
  });
}

}  // namespace

std::vector<std::string> parse_allowed_origins(const std::string& flag) {
  std::vector<std::string> out;
  std::string_view rest = flag;
  if (trim(rest).empty()) return out;
  if (trim(rest).starts_with('[')) {  // vLLM's form: a JSON list of strings
    const auto j = nlohmann::json::parse(flag, nullptr, /*allow_exceptions=*/false);
    if (!j.is_array() || j.empty() || !std::all_of(j.begin(), j.end(), [](const auto& v) { return v.is_string(); }))
      fail<InvalidArgument>("--allowed-origins: '{}' is not a JSON list of origins", flag);
    std::string list;
    for (const auto& v : j) list += (list.empty() ? "" : ",") + v.get<std::string>();
    return parse_allowed_origins(list);
  }
  for (;;) {
    const size_t comma = rest.find(',');
    const std::string_view o = trim(rest.substr(0, comma));
    if (o.empty()) fail<InvalidArgument>("--allowed-origins: an empty origin in '{}'", flag);
    if (std::any_of(o.begin(), o.end(), [](char c) { return static_cast<unsigned char>(c) <= 0x20 || c == 0x7f; }))
      fail<InvalidArgument>("--allowed-origins: '{}' is not an origin (scheme://host[:port])", o);
    out.emplace_back(o);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return out;
}

std::string cors_allow_origin(const std::vector<std::string>& allowed, std::string_view origin) {
  if (origin.empty() || allowed.empty()) return "";
  if (std::find(allowed.begin(), allowed.end(), "*") != allowed.end()) return "*";
  // Origins compare as ASCII strings, scheme and host lower-case (browsers send them so).
  return std::find(allowed.begin(), allowed.end(), origin) != allowed.end() ? std::string(origin) : "";
}

Headers cors_headers(const std::string& allow_origin) {
  return {{"Access-Control-Allow-Origin", allow_origin},
          {"Vary", "Origin"},
          {"Access-Control-Expose-Headers", "X-Request-Id, X-Pagoda-Ignored-Fields, Retry-After"}};
}

Headers cors_preflight_headers(std::string_view methods, std::string_view requested) {
  std::string allow_headers = "Authorization, Content-Type";
  if (header_name_list(requested)) allow_headers += ", " + std::string(trim(requested));
  return {{"Access-Control-Allow-Methods", std::string(methods)},
          {"Access-Control-Allow-Headers", allow_headers},
          {"Access-Control-Max-Age", "600"}};
}

}  // namespace pagoda::server

#include "server/api_error.h"

namespace pagoda::server {

const char* error_type(int status) {
  switch (status) {
    case 401: return "authentication_error";
    case 429: return "rate_limit_error";
    case 500: return "server_error";
    case 503: return "service_unavailable";
    case 504: return "timeout_error";
    default: return status >= 500 ? "server_error" : "invalid_request_error";
  }
}

namespace {

const char* default_code(int status) {
  switch (status) {
    case 401: return "invalid_api_key";
    case 404: return "not_found";
    case 405: return "method_not_allowed";
    case 413: return "request_too_large";
    case 429: return "rate_limit_exceeded";
    case 503: return "service_unavailable";
    case 504: return "timeout";
    default: return nullptr;
  }
}

}  // namespace

nlohmann::json error_json(int status, const std::string& message, const std::string& param, const std::string& code) {
  nlohmann::json e = {{"message", message}, {"type", error_type(status)}, {"param", nullptr}, {"code", nullptr}};
  if (!param.empty()) e["param"] = param;
  if (!code.empty())
    e["code"] = code;
  else if (const char* c = default_code(status))
    e["code"] = c;
  return {{"error", std::move(e)}};
}

}  // namespace pagoda::server

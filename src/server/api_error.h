// Errors as the OpenAI API reports them: an HTTP status plus the body
// {"error":{"message","type","param","code"}}. Anything the server refuses is
// thrown as an ApiError and turned into that body in one place, so every
// endpoint reports errors the same way.
#pragma once

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <string>

#include "util/error.h"

namespace pagoda::server {

struct ApiError : Error {
  ApiError(int status, std::string message, std::string param = "", std::string code = "", int retry_after_s = 0)
      : Error(message), status(status), param(std::move(param)), code(std::move(code)), retry_after_s(retry_after_s) {}
  int status;
  std::string param;      // the request field at fault, "" for none
  std::string code;       // "" = the default code for the status
  int retry_after_s = 0;  // 429/503: the Retry-After header, when > 0
};

// OpenAI's error `type` for a status: invalid_request_error for 4xx, ...
const char* error_type(int status);

// The JSON error object for a status (param and code null when empty).
nlohmann::json error_json(int status, const std::string& message, const std::string& param = "",
                          const std::string& code = "");

// 400 naming the request field at fault.
template <class... Args>
[[noreturn]] void bad_request(const std::string& param, fmt::format_string<Args...> f, Args&&... args) {
  throw ApiError(400, fmt::format(f, std::forward<Args>(args)...), param);
}

// A token id from a request field, checked against the vocabulary (400 naming
// `param` otherwise): prompts of ids, logit_bias keys, stop_token_ids.
inline int32_t vocab_token_id(int64_t id, int64_t vocab_size, const std::string& param) {
  if (id < 0 || id >= vocab_size)
    bad_request(param, "{}: token id {} is outside the vocabulary (0..{})", param, id, vocab_size - 1);
  return int32_t(id);
}

}  // namespace pagoda::server

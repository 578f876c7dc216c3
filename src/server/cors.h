// CORS (the Fetch standard's cross-origin checks) for `--allowed-origins`:
// browser apps on the listed origins may call the API. With no origins
// configured (the default) no response carries CORS headers, so browsers
// keep other sites' pages from reading the answers.
//
//   a request with an allowed Origin    -> Access-Control-Allow-Origin (the
//                                          origin itself, or * for "*"),
//                                          Vary: Origin, and the headers a
//                                          page may read (Expose-Headers)
//   OPTIONS on a known path (preflight) -> 204 with Allow, and for an allowed
//                                          origin Allow-Methods, Allow-Headers
//                                          (Authorization, Content-Type and
//                                          what the preflight asks), Max-Age;
//                                          no API key needed (browsers send
//                                          none on a preflight)
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "server/http_response.h"

namespace pagoda::server {

// "" -> none; "*" -> any; "https://a.example, http://localhost:3000" or
// vLLM's JSON form '["https://a.example"]' -> those.
// InvalidArgument for an empty entry or one with spaces or control bytes.
std::vector<std::string> parse_allowed_origins(const std::string& flag);

// The Access-Control-Allow-Origin value for a request's Origin header; ""
// when the origin is not allowed (or the request names none).
std::string cors_allow_origin(const std::vector<std::string>& allowed, std::string_view origin);

// The headers of every response to an allowed origin.
Headers cors_headers(const std::string& allow_origin);

// A preflight's extra headers. `methods`: the path's methods ("GET, HEAD");
// `requested`: its Access-Control-Request-Headers (echoed when it is a plain
// list of header names, at most 1 KiB).
Headers cors_preflight_headers(std::string_view methods, std::string_view requested);

}  // namespace pagoda::server

// libFuzzer target for what the server copies from a request into response
// headers: any body's unknown field names (request_fields.h) and any
// Access-Control-Request-Headers value (cors.h). The header values built from
// them hold visible ASCII and spaces only (no CR, LF or NUL: no header
// injection) and stay bounded; check_model throws only ApiError 400/404;
// parse_allowed_origins throws only InvalidArgument.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "fuzz_shared.h"
#include "server/api_error.h"
#include "server/cors.h"
#include "server/request_fields.h"
#include "util/error.h"

namespace {

using pagoda::fuzz::check;
using namespace pagoda::server;

bool header_safe(const std::string& v, size_t max_bytes) {
  if (v.size() > max_bytes) return false;
  for (const char ch : v)
    if (static_cast<unsigned char>(ch) < 0x20 || static_cast<unsigned char>(ch) >= 0x7f) return false;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const nlohmann::json body = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!body.is_discarded()) {
    try {
      check_model(body, {"stories260K", "tiny"});
    } catch (const ApiError& e) {
      check(e.status == 400 || e.status == 404, "check_model: status 400 or 404");
    }
    for (const Endpoint e : {Endpoint::completions, Endpoint::chat, Endpoint::tokenize, Endpoint::detokenize}) {
      const auto names = ignored_fields(body, e);
      // 32 names of at most 64 bytes, each byte at most 3 when encoded, plus separators and the tail.
      check(header_safe(ignored_fields_header(names), 32 * (64 * 3 + 2) + 32), "ignored-fields header");
    }
  }
  for (const auto& [k, v] : cors_preflight_headers("POST, OPTIONS", text))
    check(header_safe(v, 2048), "preflight header");
  try {
    for (const auto& o : parse_allowed_origins(text)) check(!o.empty(), "an empty origin");
  } catch (const pagoda::InvalidArgument&) {
  }
  return 0;
}

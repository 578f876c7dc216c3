// Typed reads of a request body's optional fields. JSON null counts as absent
// (clients send null for options they leave unset); a present field of the
// wrong type is a 400 naming the field.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pagoda::server {

using json = nlohmann::json;

// The field, or nullptr when absent or null.
const json* field(const json& body, const char* name);

std::optional<double> opt_number(const json& body, const char* name);
// Integers: a JSON integer, or a float with an integral value (2.0).
std::optional<int64_t> opt_integer(const json& body, const char* name);
// An integer that must lie in [lo, hi].
std::optional<int32_t> opt_int32(const json& body, const char* name, int64_t lo, int64_t hi);
std::optional<bool> opt_bool(const json& body, const char* name);
std::optional<std::string> opt_string(const json& body, const char* name);
// A string or an array of strings (OpenAI's `stop`); empty when absent.
std::vector<std::string> opt_string_list(const json& body, const char* name);

}  // namespace pagoda::server

// UTF-8 string helpers shared by the filters and methods, with the
// semantics of @huggingface/jinja's JavaScript string functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace pagoda::jinja {

std::vector<std::string> code_points(std::string_view s);  // one string per character
size_t utf16_length(std::string_view s);                   // JavaScript's String#length
std::string ascii_upper(std::string_view s);
std::string ascii_lower(std::string_view s);
std::string title_case(std::string_view s);  // each word's first letter upper-cased, the rest kept
// Python's str.strip family: `chars` empty means whitespace.
std::string strip_chars(std::string_view s, std::string_view chars, bool left, bool right);
std::vector<std::string> split(std::string_view s, const std::string* sep, int64_t maxsplit);
std::string replace_all(std::string_view s, std::string_view from, std::string_view to, int64_t count);

}  // namespace pagoda::jinja

// Python's str.strip() on UTF-8 text: what the `trim` filter and `.strip()`
// in the real chat templates do (Hugging Face renders them with Python's
// Jinja), so it removes Unicode whitespace as Python defines it, not only
// ASCII blanks.
#pragma once

#include <string_view>

namespace pagoda {

// Whether Python's str.isspace() holds for the code point: U+0009-000D,
// U+001C-001F, space, U+0085, U+00A0, U+1680, U+2000-200A, U+2028, U+2029,
// U+202F, U+205F, U+3000.
bool is_python_space(char32_t c);

// `s` without leading and trailing whitespace. Bytes that are not valid
// UTF-8 count as text, so they are never removed.
std::string_view strip_whitespace(std::string_view s);

}  // namespace pagoda

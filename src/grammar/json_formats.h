// JSON Schema string formats as regexes in regex.cpp's dialect (used by
// json_schema.cpp). Each is a subset of what RFC 3339 / RFC 1123 / RFC 4291
// and zod's own patterns accept, so an output passes either check:
//   date        YYYY-MM-DD, days per month, Feb 29 in leap years only
//   time        HH:MM:SS[.f{1,9}](Z|+HH:MM|-HH:MM)   (RFC 3339 full-time, no leap second)
//   date-time   date "T" time
//   duration    P[nY][nM][nD][T[nH][nM][nS]] (at least one part, T only with one) or PnW
//   email       dot-atoms of [A-Za-z0-9_+-] "@" hostname labels, a 2-24 letter TLD
//   hostname    1-8 dot-separated RFC 1123 labels of 1-30 characters (<= 247 in all,
//               inside the 253 limit; longer labels are not written)
//   ipv4        dotted quad, no leading zeros
//   ipv6        the 8-group form and every "::" compression (no embedded IPv4)
//   uuid        8-4-4-4-12 hex digits
#pragma once

#include <string_view>

namespace pagoda::grammar {

// The format's regex, or nullptr for a format not listed above.
const char* format_regex(std::string_view format);

// True when `pattern` is a schema generator's own spelling of `format` that
// the regex dialect refuses (zod v4's hostname and duration patterns use
// lookahead) and whose language contains the format's: the format stands
// for it exactly (every output matches both).
bool pattern_is_format(std::string_view format, std::string_view pattern);

}  // namespace pagoda::grammar

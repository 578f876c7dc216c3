// String formats as regexes (see json_formats.h).
#include "grammar/json_formats.h"

#include <map>
#include <string>

namespace pagoda::grammar {
namespace {
namespace formats {  // named: unity builds merge anonymous namespaces across files

const std::string kDate =
    "([0-9]{4}-(0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])|[0-9]{4}-(0[469]|11)-(0[1-9]|[12][0-9]|30)"
    "|[0-9]{4}-02-(0[1-9]|1[0-9]|2[0-8])"
    "|([0-9]{2}(0[48]|[2468][048]|[13579][26])|([02468][048]|[13579][26])00)-02-29)";
const std::string kTime =
    "([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])";
const std::string kLabel = "[a-zA-Z0-9]([a-zA-Z0-9-]{0,28}[a-zA-Z0-9])?";

// "::" with n groups before it and at most 7 - n after, for n = 0..7, and the full form.
std::string ipv6_regex() {
  const std::string h = "[0-9a-fA-F]{1,4}";
  std::string re = "(" + h + ":){7}" + h;
  for (int n = 0; n <= 7; ++n) {
    const std::string before = n == 0 ? "" : h + "(:" + h + "){" + std::to_string(n - 1) + "}";
    const std::string after = n == 7 ? "" : "(" + h + "(:" + h + "){0," + std::to_string(6 - n) + "})?";
    re += "|" + before + "::" + after;
  }
  return re;
}

}  // namespace formats
}  // namespace

const char* format_regex(std::string_view format) {
  using namespace formats;
  static const std::string ipv6 = ipv6_regex();
  static const std::map<std::string, std::string, std::less<>> m = {
      {"date", kDate},
      {"time", kTime},
      {"date-time", kDate + "T" + kTime},
      {"duration",
       "P([0-9]+W|([0-9]+Y([0-9]+M)?([0-9]+D)?|[0-9]+M([0-9]+D)?|[0-9]+D)(T([0-9]+H([0-9]+M)?([0-9]+S)?|[0-9]+M([0-9]+"
       "S)?|"
       "[0-9]+S))?|T([0-9]+H([0-9]+M)?([0-9]+S)?|[0-9]+M([0-9]+S)?|[0-9]+S))"},
      {"email", "[a-zA-Z0-9_+-]+(\\.[a-zA-Z0-9_+-]+)*@(" + kLabel + "\\.){1,6}[a-zA-Z]{2,24}"},
      {"hostname", kLabel + "(\\." + kLabel + "){0,7}"},
      {"ipv4", "((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"},
      {"ipv6", ipv6},
      {"uuid", "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"},
  };
  const auto it = m.find(format);
  return it == m.end() ? nullptr : it->second.c_str();
}

bool pattern_is_format(std::string_view format, std::string_view pattern) {
  // zod 4's z.hostname() / z.string().hostname() and z.iso.duration(), as its toJSONSchema writes them.
  static const std::map<std::string, std::string, std::less<>> zod = {
      {"hostname",
       R"(^(?=.{1,253}\.?$)[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[-0-9a-zA-Z]{0,61}[0-9a-zA-Z])?)*\.?$)"},
      {"duration", R"(^P(?:(\d+W)|(?!.*W)(?=\d|T\d)(\d+Y)?(\d+M)?(\d+D)?(T(?=\d)(\d+H)?(\d+M)?(\d+([.,]\d+)?S)?)?)$)"},
  };
  const auto it = zod.find(format);
  return it != zod.end() && it->second == pattern;
}

}  // namespace pagoda::grammar

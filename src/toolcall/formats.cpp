// The formats (harmony apart): markers, end finders and call-text parsers (formats.h).
#include "toolcall/formats.h"

#include <nlohmann/json.hpp>

namespace pagoda::toolcall::detail {
namespace {

using json = nlohmann::ordered_json;

constexpr std::string_view kWs = " \t\r\n";

std::string_view trim(std::string_view s) {
  const size_t b = s.find_first_not_of(kWs);
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(kWs) - b + 1);
}

std::optional<json> parse_json(std::string_view text) {
  if (!depth_ok(text)) return std::nullopt;
  json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// Arguments as models write them: an object, or a string holding one.
std::optional<std::string> arguments_text(const json& a) {
  if (a.is_object()) return dump(a);
  if (a.is_string()) return object_text(a.get<std::string>());
  return std::nullopt;
}

std::optional<Call> call_from(const json& j) {
  if (!j.is_object()) return std::nullopt;
  const auto name = j.find("name");
  if (name == j.end() || !name->is_string() || name->get<std::string>().empty()) return std::nullopt;
  auto args = j.find("arguments");
  if (args == j.end()) args = j.find("parameters");  // Llama 3's key
  std::optional<std::string> text = args == j.end() ? std::optional<std::string>("{}") : arguments_text(*args);
  if (!text) return std::nullopt;
  return Call{name->get<std::string>(), *text};
}

std::optional<std::vector<Call>> one(std::optional<Call> c) {
  if (!c) return std::nullopt;
  return std::vector<Call>{*c};
}

End until_marker(std::string_view text, std::string_view marker) {
  const size_t at = text.find(marker);
  if (at == std::string_view::npos) return {};
  return {End::done, at + marker.size()};
}

std::string_view strip_suffix(std::string_view s, std::string_view suffix) {
  if (s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix) s.remove_suffix(suffix.size());
  return s;
}

// The first non-space character must open a JSON group of `open`.
End json_group(std::string_view text, char open) {
  const size_t b = text.find_first_not_of(kWs);
  if (b == std::string_view::npos) return {};
  if (text[b] != open) return {End::invalid, b};
  End e = balanced(text.substr(b), false);
  if (e.kind != End::need_more) e.len += b;
  return e;
}

// ---- hermes: <tool_call>{json}</tool_call>
constexpr std::string_view kHermesEnd = "</tool_call>";
End hermes_end(std::string_view t) { return until_marker(t, kHermesEnd); }
std::optional<std::vector<Call>> hermes_parse(std::string_view t, bool) {
  return one(call_from_json(trim(strip_suffix(t, kHermesEnd))));
}

// ---- llama3_json: {"name": .., "parameters": {..}}; {..}
End llama3_end(std::string_view t) { return json_group(t, '{'); }
std::optional<std::vector<Call>> llama3_parse(std::string_view t, bool) { return one(call_from_json(trim(t))); }

// ---- pythonic: [f(a=1)]
End pythonic_end(std::string_view t) { return balanced(t, true); }

// ---- mistral: [TOOL_CALLS][{..}, ..]  or  [TOOL_CALLS]name[ARGS]{..}
constexpr std::string_view kArgs = "[ARGS]";
bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
}
End mistral_end(std::string_view t) {
  const size_t b = t.find_first_not_of(kWs);
  if (b == std::string_view::npos) return {};
  if (t[b] == '[') return json_group(t, '[');
  size_t i = b;
  while (i < t.size() && name_char(t[i])) ++i;
  if (i == t.size()) return {};
  if (i == b) return {End::invalid, b};
  const std::string_view rest = t.substr(i);
  if (rest.size() < kArgs.size()) return kArgs.starts_with(rest) ? End{} : End{End::invalid, i};
  if (!rest.starts_with(kArgs)) return {End::invalid, i};
  End e = json_group(t.substr(i + kArgs.size()), '{');
  if (e.kind != End::need_more) e.len += i + kArgs.size();
  return e;
}
std::optional<std::vector<Call>> mistral_parse(std::string_view t, bool) {
  t = trim(t);
  const size_t args = t.find(kArgs);
  if (args != std::string_view::npos && !t.starts_with("[")) {
    auto a = object_text(t.substr(args + kArgs.size()));
    if (!a) return std::nullopt;
    return std::vector<Call>{{std::string(t.substr(0, args)), *a}};
  }
  const auto j = parse_json(t);
  if (!j || !j->is_array() || j->empty()) return std::nullopt;
  std::vector<Call> calls;
  for (const auto& c : *j) {
    auto call = call_from(c);
    if (!call) return std::nullopt;
    calls.push_back(std::move(*call));
  }
  return calls;
}

// ---- deepseek_v3
End deepseek_end(std::string_view t) { return until_marker(t, kDsEnd); }

// "function<sep>NAME\n```json\n{..}\n```" (V3) or "NAME<sep>{..}" (V3.1).
std::optional<Call> deepseek_call(std::string_view c) {
  const size_t sep = c.find(kDsSep);
  if (sep == std::string_view::npos) return std::nullopt;
  std::string_view head = trim(c.substr(0, sep)), rest = c.substr(sep + kDsSep.size());
  std::string name;
  if (head == "function" && rest.find('\n') != std::string_view::npos) {
    const size_t nl = rest.find('\n');
    name = std::string(trim(rest.substr(0, nl)));
    rest = trim(rest.substr(nl + 1));
    if (rest.starts_with("```json")) rest.remove_prefix(7);
    rest = trim(strip_suffix(trim(rest), "```"));
  } else {
    name = std::string(head);
  }
  if (name.empty()) return std::nullopt;
  auto a = object_text(trim(rest));
  if (!a) return std::nullopt;
  return Call{name, *a};
}

std::optional<std::vector<Call>> deepseek_parse(std::string_view t, bool) {
  t = trim(strip_suffix(t, kDsEnd));
  std::vector<Call> calls;
  while (!t.empty()) {
    if (!t.starts_with(kDsCall)) return std::nullopt;
    t.remove_prefix(kDsCall.size());
    const size_t end = t.find(kDsCallEnd);
    auto c = deepseek_call(t.substr(0, end));
    if (!c) return std::nullopt;
    calls.push_back(std::move(*c));
    t = end == std::string_view::npos ? std::string_view{} : trim(t.substr(end + kDsCallEnd.size()));
  }
  if (calls.empty()) return std::nullopt;
  return calls;
}

// ---- for_function / for_array: the output is one object or array, committed or content
std::optional<std::vector<Call>> no_calls(std::string_view, bool) { return std::nullopt; }
End object_end(std::string_view t) { return json_group(t, '{'); }
End array_end(std::string_view t) { return json_group(t, '['); }

}  // namespace

bool depth_ok(std::string_view s) {
  int depth = 0;
  bool in_str = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (in_str) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_str = false;
    } else if (c == '"') {
      in_str = true;
    } else if (c == '{' || c == '[') {
      if (++depth > kMaxDepth) return false;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return true;
}

std::optional<std::string> object_text(std::string_view text) {
  const auto j = parse_json(text);
  if (!j || !j->is_object()) return std::nullopt;
  return dump(*j);
}

std::optional<Call> call_from_json(std::string_view text) {
  const auto j = parse_json(text);
  if (!j) return std::nullopt;
  return call_from(*j);
}

End balanced(std::string_view t, bool python) {
  int depth = 0;
  char quote = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    const char c = t[i];
    if (quote) {
      if (c == '\\')
        ++i;
      else if (c == quote)
        quote = 0;
    } else if (c == '"' || (python && c == '\'')) {
      quote = c;
    } else if (c == '{' || c == '[' || (python && c == '(')) {
      if (++depth > kMaxDepth) return {End::invalid, i + 1};
    } else if (c == '}' || c == ']' || (python && c == ')')) {
      if (--depth == 0) return {End::done, i + 1};
      if (depth < 0) return {End::invalid, i + 1};
    } else if (depth == 0) {
      return {End::invalid, i};  // text before the opening bracket
    }
  }
  return {};
}

const Spec& function_spec() {
  static const Spec function{{}, true, "", object_end, no_calls};
  return function;
}

const Spec& array_spec() {
  static const Spec array{{}, true, "", array_end, no_calls};
  return array;
}

const Spec& spec_for(Format f) {
  static const Spec hermes{{{"<tool_call>", false}}, false, "", hermes_end, hermes_parse};
  static const Spec llama3{{{"<|python_tag|>", false}, {"{", true}}, true, ";", llama3_end, llama3_parse};
  static const Spec pythonic{{{"[", true}}, true, "", pythonic_end, parse_pythonic};
  static const Spec mistral{{{"[TOOL_CALLS]", false}}, false, "", mistral_end, mistral_parse};
  static const Spec deepseek{{{kDsBegin, false}}, false, "", deepseek_end, deepseek_parse};
  static const Spec gemma4{{{"<|tool_call>", false}}, false, "", gemma4_end, parse_gemma4};
  switch (f) {
    case Format::hermes: return hermes;
    case Format::llama3_json: return llama3;
    case Format::pythonic: return pythonic;
    case Format::mistral: return mistral;
    case Format::deepseek_v3: return deepseek;
    case Format::gemma4: return gemma4;
    case Format::harmony: break;  // read by HarmonyParser, never by this machine
  }
  return hermes;
}

}  // namespace pagoda::toolcall::detail

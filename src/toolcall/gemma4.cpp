// Gemma 4's calls: <|tool_call>call:NAME{key:VALUE,..}<tool_call|>, the
// arguments in the object syntax its chat template writes (format_argument):
// keys bare (or quoted), strings between <|"|> quotes with nothing escaped,
// objects, arrays, numbers, true, false, null. They become a JSON object's
// text; anything else is not a call, so its text stays content.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>

#include "toolcall/formats.h"

namespace pagoda::toolcall::detail {
namespace gemma {  // named: a unity batch holds formats.cpp's file-local helpers too
namespace {

using json = nlohmann::ordered_json;

constexpr std::string_view kQuote = "<|\"|>";  // one control token in Gemma 4's vocabulary
constexpr std::string_view kCallEnd = "<tool_call|>";
constexpr std::string_view kCall = "call:";

bool ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

class Reader {
 public:
  explicit Reader(std::string_view t) : t_(t) {}

  std::optional<Call> call() {
    skip_ws();
    if (!t_.substr(i_).starts_with(kCall)) return std::nullopt;
    i_ += kCall.size();
    const size_t brace = t_.find('{', i_);
    if (brace == std::string_view::npos) return std::nullopt;
    std::string_view name = t_.substr(i_, brace - i_);
    while (!name.empty() && ws(name.back())) name.remove_suffix(1);
    // A name is one word: markup or a space in it means this is not a call.
    if (name.empty() || name.find_first_of(" \t\r\n<>{}[]():,\"") != std::string_view::npos) return std::nullopt;
    i_ = brace;
    auto args = value(0);
    if (!args || !args->is_object()) return std::nullopt;
    skip_ws();
    if (i_ != t_.size()) return std::nullopt;  // text after the arguments
    return Call{std::string(name), args->dump(-1, ' ', false, json::error_handler_t::replace)};
  }

 private:
  void skip_ws() {
    while (i_ < t_.size() && ws(t_[i_])) ++i_;
  }
  bool eat(char c) {
    skip_ws();
    if (i_ < t_.size() && t_[i_] == c) return ++i_, true;
    return false;
  }
  bool at_quote() const { return t_.substr(i_).starts_with(kQuote); }

  // <|"|>text<|"|>: the text as it stands (the quote token cannot occur in it).
  std::optional<std::string> quoted() {
    const size_t b = i_ + kQuote.size();
    const size_t e = t_.find(kQuote, b);
    if (e == std::string_view::npos) return std::nullopt;
    i_ = e + kQuote.size();
    return std::string(t_.substr(b, e - b));
  }

  // A JSON "string", which a model may write instead of the quote tokens.
  std::optional<std::string> json_string() {
    size_t e = i_ + 1;
    while (e < t_.size() && t_[e] != '"') e += t_[e] == '\\' ? 2 : 1;
    if (e >= t_.size()) return std::nullopt;
    json j = json::parse(t_.substr(i_, e + 1 - i_), nullptr, false);
    if (!j.is_string()) return std::nullopt;
    i_ = e + 1;
    return j.get<std::string>();
  }

  std::optional<json> value(int depth) {
    if (depth > kMaxDepth) return std::nullopt;
    skip_ws();
    if (i_ >= t_.size()) return std::nullopt;
    if (at_quote()) return quoted();
    const char c = t_[i_];
    if (c == '"') return json_string();
    if (c == '{') return object(depth);
    if (c == '[') return array(depth);
    return scalar();
  }

  std::optional<json> object(int depth) {
    ++i_;
    json obj = json::object();
    if (eat('}')) return obj;
    do {
      auto k = key();
      if (!k || !eat(':')) return std::nullopt;
      auto v = value(depth + 1);
      if (!v) return std::nullopt;
      obj[*k] = std::move(*v);
    } while (eat(','));
    if (!eat('}')) return std::nullopt;
    return obj;
  }

  // A bare key runs to its ':'; the template quotes keys only in tool
  // declarations, but a quoted one reads the same.
  std::optional<std::string> key() {
    skip_ws();
    if (at_quote()) return quoted();
    if (i_ < t_.size() && t_[i_] == '"') return json_string();
    const size_t colon = t_.find(':', i_);
    if (colon == std::string_view::npos) return std::nullopt;
    std::string_view k = t_.substr(i_, colon - i_);
    while (!k.empty() && ws(k.back())) k.remove_suffix(1);
    if (k.empty() || k.find_first_of("{}[],<>\"") != std::string_view::npos) return std::nullopt;
    i_ += k.size();
    return std::string(k);
  }

  std::optional<json> array(int depth) {
    ++i_;
    json arr = json::array();
    if (eat(']')) return arr;
    do {
      auto v = value(depth + 1);
      if (!v) return std::nullopt;
      arr.push_back(std::move(*v));
    } while (eat(','));
    if (!eat(']')) return std::nullopt;
    return arr;
  }

  // A number, true, false or null: the run of word characters, read as JSON.
  std::optional<json> scalar() {
    const size_t b = i_;
    while (i_ < t_.size() &&
           (std::isalnum(static_cast<unsigned char>(t_[i_])) || t_[i_] == '.' || t_[i_] == '-' || t_[i_] == '+'))
      ++i_;
    if (i_ == b) return std::nullopt;
    json j = json::parse(t_.substr(b, i_ - b), nullptr, false);
    if (j.is_discarded() || j.is_structured() || j.is_string()) return std::nullopt;
    return j;
  }

  std::string_view t_;
  size_t i_ = 0;
};

}  // namespace
}  // namespace gemma

End gemma4_end(std::string_view t) {
  // The first <tool_call|> outside a quoted string; a string may hold markup.
  // Both markers begin with '<': only those places are looked at (the
  // machine looks again as a call grows, so this stays a fast scan).
  bool in_str = false;
  for (size_t i = t.find('<'); i != std::string_view::npos; i = t.find('<', i + 1)) {
    const std::string_view rest = t.substr(i);
    if (rest.starts_with(gemma::kQuote)) {
      in_str = !in_str;
      i += gemma::kQuote.size() - 1;
    } else if (!in_str && rest.starts_with(gemma::kCallEnd)) {
      return {End::done, i + gemma::kCallEnd.size()};
    }
  }
  return {};
}

std::optional<std::vector<Call>> parse_gemma4(std::string_view text, bool final) {
  // `text` ends with <tool_call|>, or (final) is all the output held when it
  // ended: a call whole but for its closing marker, or part of it, still
  // counts (the cut-off marker is markup, dropped).
  if (text.ends_with(gemma::kCallEnd)) {
    text.remove_suffix(gemma::kCallEnd.size());
  } else if (final) {
    for (size_t k = std::min(text.size(), gemma::kCallEnd.size() - 1); k > 0; --k)
      if (text.ends_with(gemma::kCallEnd.substr(0, k))) {
        text.remove_suffix(k);
        break;
      }
  }
  auto c = gemma::Reader(text).call();
  if (!c) return std::nullopt;
  return std::vector<Call>{std::move(*c)};
}

}  // namespace pagoda::toolcall::detail

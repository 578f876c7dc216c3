// The pythonic format: a Python list of calls with keyword arguments whose
// values are literals ('str', "str", 1, 2.5, True, False, None, [..], {..}),
// turned into JSON. Anything else (positional arguments, expressions) is not
// a call, so the text stays content.
#include <nlohmann/json.hpp>

#include "toolcall/formats.h"

namespace pagoda::toolcall::detail {
namespace {

using json = nlohmann::json;

class Reader {
 public:
  explicit Reader(std::string_view t) : t_(t) {}

  std::optional<std::vector<Call>> calls() {
    std::vector<Call> out;
    if (!eat('[')) return std::nullopt;
    if (eat(']')) return std::nullopt;  // an empty list calls nothing
    do {
      auto c = call();
      if (!c) return std::nullopt;
      out.push_back(std::move(*c));
    } while (eat(','));
    if (!eat(']')) return std::nullopt;
    skip_ws();
    if (i_ != t_.size()) return std::nullopt;
    return out;
  }

 private:
  void skip_ws() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\n' || t_[i_] == '\t' || t_[i_] == '\r')) ++i_;
  }
  bool eat(char c) {
    skip_ws();
    if (i_ < t_.size() && t_[i_] == c) return ++i_, true;
    return false;
  }
  std::string ident() {
    skip_ws();
    const size_t b = i_;
    while (i_ < t_.size() && (std::isalnum(static_cast<unsigned char>(t_[i_])) || t_[i_] == '_' ||
                              (i_ > b && (t_[i_] == '.' || t_[i_] == '-'))))
      ++i_;
    return std::string(t_.substr(b, i_ - b));
  }

  std::optional<Call> call() {
    const std::string name = ident();
    if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0])) || !eat('(')) return std::nullopt;
    json args = json::object();
    if (!eat(')')) {
      do {
        const std::string key = ident();
        if (key.empty() || !eat('=')) return std::nullopt;
        auto v = value(0);
        if (!v) return std::nullopt;
        args[key] = std::move(*v);
      } while (eat(','));
      if (!eat(')')) return std::nullopt;
    }
    return Call{name, args.dump(-1, ' ', false, json::error_handler_t::replace)};
  }

  std::optional<json> value(int depth) {
    if (depth > kMaxDepth) return std::nullopt;
    skip_ws();
    if (i_ >= t_.size()) return std::nullopt;
    const char c = t_[i_];
    if (c == '\'' || c == '"') return string(c);
    if (c == '[' || c == '(') return list(c == '[' ? ']' : ')', depth);
    if (c == '{') return dict(depth);
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+' || c == '.') return number();
    const std::string word = ident();
    if (word == "True") return json(true);
    if (word == "False") return json(false);
    if (word == "None") return json(nullptr);
    return std::nullopt;
  }

  std::optional<json> string(char quote) {
    std::string s;
    for (++i_; i_ < t_.size(); ++i_) {
      char c = t_[i_];
      if (c == quote) return ++i_, json(std::move(s));
      if (c == '\\' && i_ + 1 < t_.size()) {
        c = t_[++i_];
        s += c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : c;
      } else {
        s += c;
      }
    }
    return std::nullopt;
  }

  std::optional<json> list(char close, int depth) {
    ++i_;
    json arr = json::array();
    if (eat(close)) return arr;
    do {
      if (skip_ws(), i_ < t_.size() && t_[i_] == close) break;  // a trailing comma
      auto v = value(depth + 1);
      if (!v) return std::nullopt;
      arr.push_back(std::move(*v));
    } while (eat(','));
    if (!eat(close)) return std::nullopt;
    return arr;
  }

  std::optional<json> dict(int depth) {
    ++i_;
    json obj = json::object();
    if (eat('}')) return obj;
    do {
      skip_ws();
      if (i_ >= t_.size() || (t_[i_] != '\'' && t_[i_] != '"')) return std::nullopt;  // string keys only
      auto k = string(t_[i_]);
      if (!k || !eat(':')) return std::nullopt;
      auto v = value(depth + 1);
      if (!v) return std::nullopt;
      obj[k->get<std::string>()] = std::move(*v);
    } while (eat(','));
    if (!eat('}')) return std::nullopt;
    return obj;
  }

  std::optional<json> number() {
    const size_t b = i_;
    if (i_ < t_.size() && (t_[i_] == '-' || t_[i_] == '+')) ++i_;
    while (i_ < t_.size() && (std::isdigit(static_cast<unsigned char>(t_[i_])) || t_[i_] == '.' || t_[i_] == 'e' ||
                              t_[i_] == 'E' || ((t_[i_] == '-' || t_[i_] == '+') && (t_[i_ - 1] | 0x20) == 'e')))
      ++i_;
    std::string text(t_.substr(b, i_ - b));
    if (!text.empty() && text[0] == '+') text.erase(0, 1);
    json j = json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_number()) {
      // Python allows "1." and ".5"; JSON does not.
      if (text.ends_with('.')) text += '0';
      const size_t dot = text.find('.');
      if (dot != std::string::npos && (dot == 0 || text[dot - 1] == '-'))
        text = text.substr(0, dot) + "0" + text.substr(dot);
      j = json::parse(text, nullptr, false);
      if (j.is_discarded() || !j.is_number()) return std::nullopt;
    }
    return j;
  }

  std::string_view t_;
  size_t i_ = 0;
};

}  // namespace

std::optional<std::vector<Call>> parse_pythonic(std::string_view text, bool) { return Reader(text).calls(); }

}  // namespace pagoda::toolcall::detail

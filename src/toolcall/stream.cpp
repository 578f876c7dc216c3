// Heads and tails of the streamed formats, and the arguments minifier
// (stream.h).
#include "toolcall/stream.h"

#include <initializer_list>
#include <nlohmann/json.hpp>

#include "toolcall/formats.h"

namespace pagoda::toolcall::detail {
namespace {

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_ws(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_ws(s.back())) s.remove_suffix(1);
  return s;
}

// A sticky scanner: the first step that is not ok (text ended: more; a
// character that cannot be there: no) stops it where it stood. Scans at
// most kMaxSyntax characters from its start.
class Scan {
 public:
  enum State { ok, more, no };

  Scan(std::string_view text, size_t at)
      : t_(text.substr(0, at + kMaxSyntax)), i_(at), capped_(text.size() > at + kMaxSyntax) {}

  Scan& ws() {
    while (state_ == ok && i_ < t_.size() && is_ws(t_[i_])) ++i_;
    if (state_ == ok && i_ == t_.size()) state_ = more;
    return *this;
  }
  Scan& lit(std::string_view s) { return lit_any({s}), *this; }
  // Which of the literals is here (-1 unless ok).
  int lit_any(std::initializer_list<std::string_view> options) {
    if (state_ != ok) return -1;
    const std::string_view rest = t_.substr(i_);
    int k = 0;
    bool prefix = false;
    for (auto s : options) {
      if (rest.starts_with(s)) return i_ += s.size(), k;
      prefix |= s.starts_with(rest);
      ++k;
    }
    state_ = prefix ? more : no;
    return -1;
  }
  // A JSON string token, decoded into out.
  Scan& str(std::string& out) {
    if (lit("\""), state_ != ok) return *this;
    const size_t b = i_ - 1;
    for (bool esc = false; i_ < t_.size(); ++i_) {
      const char c = t_[i_];
      if (esc)
        esc = false;
      else if (c == '\\')
        esc = true;
      else if (c == '"')
        return decode(t_.substr(b, ++i_ - b), out);
    }
    state_ = more;
    return *this;
  }
  // Characters until one of stop (which is left); empty or ended: not ok.
  Scan& until(std::string_view stop, std::string& out) {
    if (state_ != ok) return *this;
    const size_t b = i_;
    while (i_ < t_.size() && stop.find(t_[i_]) == std::string_view::npos) ++i_;
    out.assign(t_.substr(b, i_ - b));
    if (i_ == t_.size()) state_ = more;
    return *this;
  }
  bool at(char c) const { return state_ == ok && i_ < t_.size() && t_[i_] == c; }
  size_t pos() const { return i_; }
  bool is_ok() const { return state_ == ok; }

  // The step this scan ends in, when it did not find what it looked for.
  Step stopped() const {
    if (state_ == more && !capped_) return {};
    return Step::of(Step::fail, i_);
  }
  // A head read up to and including the arguments' '{'.
  Step commit(std::string name, bool array) const {
    if (state_ != ok) return stopped();
    if (name.empty()) return Step::of(Step::fail, i_);
    Step c = Step::of(Step::commit, i_ - 1);
    c.name = std::move(name);
    c.array = array;
    return c;
  }

 private:
  Scan& decode(std::string_view token, std::string& out) {
    const auto j = nlohmann::json::parse(token, nullptr, /*allow_exceptions=*/false);
    if (j.is_string())
      out = j.get<std::string>();
    else
      state_ = no;
    return *this;
  }

  std::string_view t_;
  size_t i_;
  bool capped_;
  State state_ = ok;
};

// {"name": "f", "arguments": {   ("parameters" is Llama 3's key)
Step object_head(std::string_view t, size_t at, bool array) {
  Scan s(t, at);
  std::string name;
  s.ws().lit("{").ws().lit("\"name\"").ws().lit(":").ws().str(name).ws().lit(",").ws();
  s.lit_any({"\"arguments\"", "\"parameters\""});
  s.ws().lit(":").ws().lit("{");
  return s.commit(std::move(name), array);
}

Step hermes_first(std::string_view t) { return object_head(t, 0, false); }
Step mistral_next(std::string_view t, size_t at) { return object_head(t, at, true); }
Step no_next(std::string_view, size_t at) { return Step::of(Step::fail, at); }

Step hermes_tail(std::string_view t, size_t at, bool) {
  Scan s(t, at);
  s.ws().lit("}").ws().lit("</tool_call>");
  return s.is_ok() ? Step::of(Step::done, s.pos()) : s.stopped();
}

Step llama3_tail(std::string_view t, size_t at, bool) {
  Scan s(t, at);
  s.ws().lit("}");
  return s.is_ok() ? Step::of(Step::done, s.pos()) : s.stopped();
}

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
}

// [{"name": .. }, ..]  or  name[ARGS]{
Step mistral_first(std::string_view t) {
  Scan s(t, 0);
  s.ws();
  if (s.at('[')) return object_head(t, s.pos() + 1, true);
  if (!s.is_ok()) return s.stopped();
  size_t e = s.pos();
  while (e < t.size() && e < kMaxSyntax && name_char(t[e])) ++e;
  if (e == t.size()) return {};
  if (e == s.pos()) return Step::of(Step::fail, e);
  Scan rest(t, e);
  rest.lit("[ARGS]").ws().lit("{");
  return rest.commit(std::string(t.substr(s.pos(), e - s.pos())), false);
}

Step array_first(std::string_view t) {
  Scan s(t, 0);
  s.ws().lit("[");
  if (!s.is_ok()) return s.stopped();
  return object_head(t, s.pos(), true);
}

Step mistral_tail(std::string_view t, size_t at, bool array) {
  if (!array) return Step::of(Step::done, at);
  Scan s(t, at);
  s.ws().lit("}").ws();
  const int k = s.lit_any({",", "]"});
  if (k < 0) return s.stopped();
  return Step::of(k == 0 ? Step::next : Step::done, s.pos());
}

// <call begin>function<sep>NAME\n```json\n{   or   <call begin>NAME<sep>{
Step deepseek_head(std::string_view t, size_t at) {
  Scan s(t, at);
  std::string head, name;
  s.ws().lit(kDsCall).until("<\n", head).lit(kDsSep);
  if (s.is_ok() && trim(head) == "function") {
    s.until("\n<{", name).lit("\n").ws();
    if (s.at('`')) s.lit("```json").ws();
  } else {
    name = head;
    s.ws();
  }
  s.lit("{");
  return s.commit(std::string(trim(name)), false);
}
Step deepseek_first(std::string_view t) { return deepseek_head(t, 0); }

Step deepseek_tail(std::string_view t, size_t at, bool) {
  Scan s(t, at);
  s.ws();
  if (s.at('`')) s.lit("```").ws();
  s.lit(kDsCallEnd).ws();
  const size_t next = s.pos();
  const int k = s.lit_any({kDsCall, kDsEnd});
  if (k < 0) return s.stopped();
  return k == 0 ? Step::of(Step::next, next) : Step::of(Step::done, s.pos());
}

Step object_only(std::string_view t) {
  Scan s(t, 0);
  s.ws().lit("{");
  return s.commit("-", false);  // the name is the parser's own
}
Step done_at_close(std::string_view, size_t at, bool) { return Step::of(Step::done, at); }

bool scalar_char(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == ',' || c == ':' ||
         c == '.' || c == '-' || c == '+';
}

}  // namespace

const StreamSpec* stream_spec_for(Format f) {
  static const StreamSpec hermes{hermes_first, no_next, hermes_tail};
  static const StreamSpec llama3{hermes_first, no_next, llama3_tail};
  static const StreamSpec mistral{mistral_first, mistral_next, mistral_tail};
  static const StreamSpec deepseek{deepseek_first, deepseek_head, deepseek_tail};
  switch (f) {
    case Format::hermes: return &hermes;
    case Format::llama3_json: return &llama3;
    case Format::mistral: return &mistral;
    case Format::deepseek_v3: return &deepseek;
    case Format::pythonic:
    case Format::gemma4:  // its arguments are not JSON: whole calls only
    case Format::harmony: return nullptr;
  }
  return nullptr;
}

const StreamSpec* function_stream_spec() {
  static const StreamSpec function{object_only, no_next, done_at_close};
  return &function;
}

const StreamSpec* array_stream_spec() {
  static const StreamSpec array{array_first, mistral_next, mistral_tail};
  return &array;
}

ArgsMinifier::Result ArgsMinifier::feed(std::string_view t, size_t& pos, std::string& out) {
  for (; pos < t.size(); ++pos) {
    const char c = t[pos];
    if (in_string_) {
      if (static_cast<unsigned char>(c) < 0x20) return broken;  // JSON strings hold no raw control characters
      if (escaped_)
        escaped_ = false;
      else if (c == '\\')
        escaped_ = true;
      else if (c == '"')
        in_string_ = false;
    } else if (is_ws(c)) {
      continue;
    } else if (c == '{' || c == '[') {
      if (open_.size() >= static_cast<size_t>(kMaxDepth)) return broken;
      open_.push_back(c);
    } else if (c == '}' || c == ']') {
      if (open_.empty() || open_.back() != (c == '}' ? '{' : '[')) return broken;
      open_.pop_back();
      if (open_.empty()) return out += c, ++pos, closed;
    } else if (c == '"') {
      in_string_ = true;
    } else if (!scalar_char(c)) {
      return broken;
    }
    out += c;
  }
  return more;
}

}  // namespace pagoda::toolcall::detail

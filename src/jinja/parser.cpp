// Recursive-descent parser over the token list.
#include "jinja/parser.h"

#include <cerrno>
#include <cstdlib>
#include <initializer_list>

#include "jinja/error.h"

namespace pagoda::jinja {

namespace {

class Parser {
 public:
  Parser(const std::vector<Token>& t, int max_depth) : t_(t), max_depth_(max_depth) {}

  std::vector<NodePtr> program() {
    std::vector<NodePtr> out;
    while (pos_ < t_.size()) add(out, any());
    return out;
  }

 private:
  const std::vector<Token>& t_;
  size_t pos_ = 0;
  int depth_ = 0;
  const int max_depth_;

  // Guards recursion: every nested statement or expression passes through one.
  struct Depth {
    Parser& p;
    explicit Depth(Parser& parser) : p(parser) {
      if (++p.depth_ > p.max_depth_) p.error("template nested too deeply");
    }
    ~Depth() { --p.depth_; }
  };

  [[noreturn]] void error(const std::string& what) const {
    const int line = pos_ < t_.size() ? t_[pos_].line : (t_.empty() ? 1 : t_.back().line);
    throw SyntaxError("template syntax error at line " + std::to_string(line) + ": " + what);
  }
  bool is(Tok type, size_t ahead = 0) const { return pos_ + ahead < t_.size() && t_[pos_ + ahead].type == type; }
  bool is_word(std::string_view w, size_t ahead = 0) const {
    return is(Tok::identifier, ahead) && t_[pos_ + ahead].value == w;
  }
  bool is_statement(std::initializer_list<std::string_view> names) const {
    if (!is(Tok::open_statement) || !is(Tok::identifier, 1)) return false;
    for (auto n : names)
      if (t_[pos_ + 1].value == n) return true;
    return false;
  }
  const Token& next(const char* what) {
    if (pos_ >= t_.size()) error(std::string("unexpected end of template, expected ") + what);
    return t_[pos_++];
  }
  const Token& expect(Tok type, const char* what) {
    if (!is(type)) error(std::string("expected ") + what);
    return t_[pos_++];
  }
  void expect_word(std::string_view w) {
    if (!is_word(w)) error("expected '" + std::string(w) + "'");
    ++pos_;
  }
  void end_tag(std::string_view w) {
    expect(Tok::open_statement, "{%");
    expect_word(w);
    expect(Tok::close_statement, "%}");
  }
  NodePtr node(NodeKind k) {
    auto n = std::make_unique<Node>();
    n->kind = k;
    n->line = pos_ < t_.size() ? t_[pos_].line : 0;
    return n;
  }
  static void add(std::vector<NodePtr>& out, NodePtr n) {
    if (n) out.push_back(std::move(n));
  }
  // Statements up to one of `ends`; the last of them names the missing tag.
  std::vector<NodePtr> body_until(std::initializer_list<std::string_view> ends) {
    std::vector<NodePtr> out;
    while (!is_statement(ends)) {
      if (pos_ >= t_.size()) error("missing {% " + std::string(*(ends.end() - 1)) + " %}");
      add(out, any());
    }
    return out;
  }

  NodePtr any() {
    Depth d(*this);
    const Token& tok = t_[pos_];
    switch (tok.type) {
      case Tok::comment: ++pos_; return nullptr;
      case Tok::text: {
        auto n = node(NodeKind::text);
        n->name = t_[pos_++].value;
        return n;
      }
      case Tok::open_statement: return statement();
      case Tok::open_expression: {
        ++pos_;
        auto n = node(NodeKind::output);
        n->a = expression();
        expect(Tok::close_expression, "}}");
        return n;
      }
      default: error("unexpected '" + tok.value + "'");
    }
  }

  NodePtr statement() {
    ++pos_;  // {%
    if (!is(Tok::identifier)) error("expected a statement name");
    const std::string name = t_[pos_++].value;
    if (name == "set") return set_statement();
    if (name == "if") {
      auto n = if_statement();
      end_tag("endif");
      return n;
    }
    if (name == "for") return for_statement();
    if (name == "macro") return macro_statement();
    if (name == "call") return call_statement();
    if (name == "filter") return filter_statement();
    if (name == "break" || name == "continue") {
      auto n = node(name == "break" ? NodeKind::break_ : NodeKind::continue_);
      expect(Tok::close_statement, "%}");
      return n;
    }
    --pos_;
    error("unknown statement '" + name + "'");
  }

  NodePtr set_statement() {
    auto n = node(NodeKind::set);
    NodePtr target = expression_sequence();
    if (target->kind == NodeKind::identifier) {
      n->targets.push_back(target->name);
    } else if (target->kind == NodeKind::tuple) {
      for (auto& item : target->items) {
        if (item->kind != NodeKind::identifier) error("can only assign to names");
        n->targets.push_back(item->name);
      }
      n->flag = true;
    } else if (target->kind == NodeKind::member && !target->flag) {
      n->b = std::move(target);
    } else {
      error("invalid assignment target");
    }
    if (is(Tok::equals)) {
      ++pos_;
      n->a = expression_sequence();
      expect(Tok::close_statement, "%}");
    } else {
      expect(Tok::close_statement, "%}");
      n->body = body_until({"endset"});
      end_tag("endset");
    }
    return n;
  }

  NodePtr if_statement() {
    auto n = node(NodeKind::if_);
    n->a = expression();
    expect(Tok::close_statement, "%}");
    n->body = body_until({"elif", "else", "endif"});
    if (is_statement({"elif"})) {
      pos_ += 2;
      n->else_body.push_back(if_statement());
    } else if (is_statement({"else"})) {
      pos_ += 2;
      expect(Tok::close_statement, "%}");
      n->else_body = body_until({"endif"});
    }
    return n;
  }

  NodePtr for_statement() {
    auto n = node(NodeKind::for_);
    NodePtr target = primary_sequence();
    if (target->kind == NodeKind::identifier) {
      n->targets.push_back(target->name);
    } else if (target->kind == NodeKind::tuple) {
      for (auto& item : target->items) {
        if (item->kind != NodeKind::identifier) error("loop variables must be names");
        n->targets.push_back(item->name);
      }
      n->flag = true;
    } else {
      error("expected loop variable names");
    }
    expect_word("in");
    NodePtr iterable = expression();
    if (iterable->kind == NodeKind::select) {
      n->a = std::move(iterable->a);
      n->c = std::move(iterable->c);
    } else {
      n->a = std::move(iterable);
    }
    expect(Tok::close_statement, "%}");
    n->body = body_until({"else", "endfor"});
    if (is_statement({"else"})) {
      pos_ += 2;
      expect(Tok::close_statement, "%}");
      n->else_body = body_until({"endfor"});
    }
    end_tag("endfor");
    return n;
  }

  NodePtr macro_statement() {
    auto n = node(NodeKind::macro);
    n->name = expect(Tok::identifier, "a macro name").value;
    n->params = parameters();
    expect(Tok::close_statement, "%}");
    n->body = body_until({"endmacro"});
    end_tag("endmacro");
    return n;
  }

  NodePtr call_statement() {
    auto n = node(NodeKind::call_block);
    if (is(Tok::lparen)) n->params = parameters();
    auto callee = node(NodeKind::identifier);
    callee->name = expect(Tok::identifier, "a macro name after call").value;
    auto call = node(NodeKind::call);
    call->a = std::move(callee);
    call->args = arguments();
    n->a = std::move(call);
    expect(Tok::close_statement, "%}");
    n->body = body_until({"endcall"});
    end_tag("endcall");
    return n;
  }

  NodePtr filter_statement() {
    auto n = node(NodeKind::filter_block);
    auto f = node(NodeKind::filter);
    f->name = expect(Tok::identifier, "a filter name").value;
    if (is(Tok::lparen)) {
      f->args = arguments();
      f->flag = true;
    }
    n->a = std::move(f);
    expect(Tok::close_statement, "%}");
    n->body = body_until({"endfilter"});
    end_tag("endfilter");
    return n;
  }

  std::vector<Param> parameters() {
    std::vector<Param> out;
    for (Arg& a : arguments()) {
      if (a.spread) error("argument unpacking is not allowed in parameters");
      Param p;
      if (!a.name.empty()) {
        p.name = a.name;
        p.default_value = std::move(a.value);
      } else if (a.value->kind == NodeKind::identifier) {
        if (!out.empty() && out.back().default_value) error("non-default parameter follows default parameter");
        p.name = a.value->name;
      } else {
        error("expected a parameter name");
      }
      for (const Param& q : out)
        if (q.name == p.name) error("duplicate parameter " + p.name);
      out.push_back(std::move(p));
    }
    return out;
  }

  std::vector<Arg> arguments() {
    Depth d(*this);
    expect(Tok::lparen, "(");
    std::vector<Arg> out;
    while (!is(Tok::rparen)) {
      if (pos_ >= t_.size()) error("expected )");
      Arg a;
      if (is(Tok::power) || (is(Tok::multiplicative) && t_[pos_].value == "*")) {
        a.spread = t_[pos_++].type == Tok::power ? 2 : 1;
        a.value = expression();
      } else if (is(Tok::identifier) && is(Tok::equals, 1)) {
        a.name = t_[pos_].value;
        pos_ += 2;
        a.value = expression();
      } else {
        if (!out.empty() && (!out.back().name.empty() || out.back().spread == 2))
          error("positional argument follows keyword argument");
        a.value = expression();
      }
      out.push_back(std::move(a));
      if (!is(Tok::comma)) break;
      ++pos_;
    }
    expect(Tok::rparen, ")");
    return out;
  }

  // Expressions, loosest first.
  NodePtr expression_sequence(bool primary_only = false) {
    NodePtr first = primary_only ? primary() : expression();
    if (!is(Tok::comma)) return first;
    auto t = node(NodeKind::tuple);
    t->items.push_back(std::move(first));
    while (is(Tok::comma)) {
      ++pos_;
      t->items.push_back(primary_only ? primary() : expression());
    }
    return t;
  }
  NodePtr primary_sequence() { return expression_sequence(true); }

  NodePtr expression() {
    Depth d(*this);
    NodePtr a = logical_or();
    if (!is_word("if")) return a;
    ++pos_;
    NodePtr cond = logical_or();
    auto n = node(NodeKind::select);
    n->a = std::move(a);
    n->c = std::move(cond);
    if (is_word("else")) {
      ++pos_;
      n->kind = NodeKind::ternary;
      n->b = expression();
    }
    return n;
  }
  NodePtr binary(std::string op, NodePtr a, NodePtr b) {
    auto n = node(NodeKind::binary);
    n->name = std::move(op);
    n->a = std::move(a);
    n->b = std::move(b);
    return n;
  }
  NodePtr logical_or() {
    NodePtr left = logical_and();
    while (is_word("or")) {
      ++pos_;
      left = binary("or", std::move(left), logical_and());
    }
    return left;
  }
  NodePtr logical_and() {
    NodePtr left = logical_not();
    while (is_word("and")) {
      ++pos_;
      left = binary("and", std::move(left), logical_not());
    }
    return left;
  }
  NodePtr logical_not() {
    if (!is_word("not")) return comparison();
    Depth d(*this);
    ++pos_;
    auto n = node(NodeKind::unary);
    n->name = "not";
    n->a = logical_not();
    return n;
  }
  NodePtr comparison() {
    NodePtr left = additive();
    while (true) {
      std::string op;
      if (is_word("not") && is_word("in", 1)) {
        op = "not in";
        pos_ += 2;
      } else if (is_word("in") || is(Tok::comparison)) {
        op = t_[pos_++].value;
      } else {
        return left;
      }
      left = binary(op, std::move(left), additive());
    }
  }
  NodePtr additive() {
    NodePtr left = multiplicative();
    while (is(Tok::additive)) {
      const std::string op = t_[pos_++].value;
      left = binary(op, std::move(left), multiplicative());
    }
    return left;
  }
  NodePtr multiplicative() {
    NodePtr left = power();
    while (is(Tok::multiplicative)) {
      const std::string op = t_[pos_++].value;
      left = binary(op, std::move(left), power());
    }
    return left;
  }
  NodePtr power() {
    NodePtr left = test();
    while (is(Tok::power)) {
      ++pos_;
      left = binary("**", std::move(left), test());
    }
    return left;
  }
  NodePtr test() {
    NodePtr operand = filter();
    while (is_word("is")) {
      ++pos_;
      auto n = node(NodeKind::test);
      if (is_word("not")) {
        ++pos_;
        n->flag = true;
      }
      n->name = expect(Tok::identifier, "a test name").value;
      if (is(Tok::lparen)) {
        n->args = arguments();
      } else if (is(Tok::number) || is(Tok::string) ||
                 (is(Tok::identifier) && !is_word("and") && !is_word("or") && !is_word("if") && !is_word("else") &&
                  !is_word("is") && !is_word("in") && !is_word("not"))) {
        Arg a;  // `is equalto 3`: one argument without parentheses, as Python's Jinja allows
        a.value = unary_sign();
        n->args.push_back(std::move(a));
      }
      n->a = std::move(operand);
      operand = std::move(n);
    }
    return operand;
  }
  NodePtr filter() {
    NodePtr operand = unary_sign();
    while (is(Tok::pipe)) {
      ++pos_;
      auto n = node(NodeKind::filter);
      n->name = expect(Tok::identifier, "a filter name").value;
      if (is(Tok::lparen)) {
        n->args = arguments();
        n->flag = true;
      }
      n->a = std::move(operand);
      operand = std::move(n);
    }
    return operand;
  }
  NodePtr unary_sign() {
    if ((is(Tok::unary) || is(Tok::additive)) && (t_[pos_].value == "-" || t_[pos_].value == "+")) {
      Depth d(*this);
      auto n = node(NodeKind::unary);
      n->name = t_[pos_++].value;
      n->a = unary_sign();
      return n;
    }
    return postfix(primary());
  }
  NodePtr postfix(NodePtr object) {
    while (true) {
      if (is(Tok::dot)) {
        ++pos_;
        auto n = node(NodeKind::member);
        const Token& p = next("an attribute name");
        if (p.type == Tok::identifier) {
          n->name = p.value;
        } else if (p.type == Tok::number && p.value.find('.') == std::string::npos && p.value[0] != '-' &&
                   p.value[0] != '+') {
          n->flag = true;
          auto idx = node(NodeKind::literal);
          idx->value = Value(static_cast<int64_t>(std::strtoll(p.value.c_str(), nullptr, 10)));
          n->b = std::move(idx);
        } else {
          error("expected a name after '.'");
        }
        n->a = std::move(object);
        object = std::move(n);
      } else if (is(Tok::lbracket)) {
        object = subscript(std::move(object));
      } else if (is(Tok::lparen)) {
        auto n = node(NodeKind::call);
        n->args = arguments();
        n->a = std::move(object);
        object = std::move(n);
      } else {
        return object;
      }
    }
  }
  NodePtr subscript(NodePtr object) {
    Depth d(*this);
    ++pos_;  // [
    std::vector<NodePtr> parts(1);
    bool is_slice = false;
    while (!is(Tok::rbracket)) {
      if (pos_ >= t_.size()) error("expected ]");
      if (is(Tok::colon)) {
        ++pos_;
        is_slice = true;
        parts.emplace_back();
        if (parts.size() > 3) error("a slice takes at most 3 parts");
      } else {
        if (parts.back()) error("expected ]");
        parts.back() = expression();
      }
    }
    ++pos_;
    if (!is_slice && !parts[0]) error("expected an index");
    auto n = node(is_slice ? NodeKind::slice : NodeKind::member);
    n->a = std::move(object);
    if (is_slice) {
      parts.resize(3);
      n->items = std::move(parts);
    } else {
      n->flag = true;
      n->b = std::move(parts[0]);
    }
    return n;
  }

  NodePtr primary() {
    Depth d(*this);
    const Token& tok = next("an expression");
    switch (tok.type) {
      case Tok::number: {
        auto n = node(NodeKind::literal);
        if (tok.value.find('.') != std::string::npos)
          n->value = Value(std::strtod(tok.value.c_str(), nullptr));
        else
          n->value = integer_literal(tok.value);
        return n;
      }
      case Tok::string: {
        auto n = node(NodeKind::literal);
        std::string s = tok.value;
        while (is(Tok::string)) s += t_[pos_++].value;
        n->value = Value(std::move(s));
        return n;
      }
      case Tok::identifier: {
        auto n = node(NodeKind::identifier);
        n->name = tok.value;
        return n;
      }
      case Tok::lparen: {
        NodePtr e = expression_sequence();
        expect(Tok::rparen, ")");
        return e;
      }
      case Tok::lbracket: return collection(NodeKind::list, Tok::rbracket);
      case Tok::lbrace: return collection(NodeKind::dict, Tok::rbrace);
      default: --pos_; error("unexpected '" + tok.value + "'");
    }
  }
  Value integer_literal(const std::string& text) {
    errno = 0;
    const long long v = std::strtoll(text.c_str(), nullptr, 10);
    if (errno == ERANGE) return Value(std::strtod(text.c_str(), nullptr));
    return Value(static_cast<int64_t>(v));
  }
  NodePtr collection(NodeKind kind, Tok close) {
    auto n = node(kind);
    while (!is(close)) {
      if (pos_ >= t_.size()) error("unclosed bracket");
      n->items.push_back(expression());
      if (kind == NodeKind::dict) {
        expect(Tok::colon, "':' in a dict literal");
        n->items.push_back(expression());
      }
      if (!is(Tok::comma)) break;
      ++pos_;
    }
    expect(close, kind == NodeKind::dict ? "}" : "]");
    return n;
  }
};

}  // namespace

std::vector<NodePtr> parse(const std::vector<Token>& tokens, int max_depth) {
  return Parser(tokens, max_depth).program();
}

}  // namespace pagoda::jinja

#include "hub/model_ref.h"

#include "util/error.h"

namespace pagoda::hub {
namespace {

constexpr std::string_view kScheme = "hf://";

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
}

// The hub's own rule for an ORG or REPO name; "--" is also what separates
// them in the cache's folder names, so it must not occur inside one.
bool valid_name(std::string_view s) {
  if (s.empty() || s.size() > 96) return false;
  for (char c : s)
    if (!name_char(c)) return false;
  if (s.front() == '-' || s.front() == '.' || s.back() == '-' || s.back() == '.') return false;
  return s.find("--") == std::string_view::npos && s.find("..") == std::string_view::npos;
}

bool valid_quant(std::string_view q) {
  if (q.size() > 32) return false;
  for (char c : q)
    if (!name_char(c)) return false;
  return true;
}

// "ORG/REPO[:QUANT]" after the scheme, if any, is removed.
HubRef repo_and_quant(std::string_view s, std::string_view original) {
  HubRef r;
  const size_t colon = s.find(':');
  r.repo = std::string(s.substr(0, colon));
  if (colon != std::string_view::npos) {
    r.quant = std::string(s.substr(colon + 1));
    if (r.quant.empty() || !valid_quant(r.quant))
      fail<InvalidArgument>("'{}': the quant after ':' must be a name like Q4_K_M", original);
  }
  if (!valid_repo_id(r.repo))
    fail<InvalidArgument>("'{}' is not a hub repository: expected ORG/REPO[:QUANT] (letters, digits, '-', '_', '.')",
                          original);
  return r;
}

}  // namespace

bool valid_repo_id(std::string_view repo) {
  const size_t slash = repo.find('/');
  return slash != std::string_view::npos && valid_name(repo.substr(0, slash)) && valid_name(repo.substr(slash + 1));
}

bool valid_repo_file(std::string_view file) {
  if (file.empty() || file.size() > 1024) return false;
  size_t start = 0;
  while (true) {
    const size_t slash = file.find('/', start);
    const std::string_view seg = file.substr(start, slash == std::string_view::npos ? slash : slash - start);
    if (seg.empty() || seg == "." || seg == "..") return false;
    for (unsigned char c : seg)
      if (c < 0x20 || c == 0x7f || c == '\\') return false;
    if (slash == std::string_view::npos) return true;
    start = slash + 1;
  }
}

bool valid_revision(std::string_view rev) {
  if (rev.empty() || rev.size() > 128 || rev == "." || rev == "..") return false;
  for (char c : rev)
    if (!name_char(c)) return false;
  return true;
}

std::string HubRef::to_string() const {
  if (!file.empty()) return std::string(kScheme) + repo + "/" + file;
  return quant.empty() ? repo : repo + ":" + quant;
}

ModelRef parse_model_arg(std::string_view arg) {
  ModelRef m;
  if (arg.substr(0, kScheme.size()) != kScheme) {
    m.path = std::string(arg);
    return m;
  }
  m.hub = true;
  const std::string_view rest = arg.substr(kScheme.size());
  // ORG/REPO is the first two segments; whatever follows is the file.
  const size_t first = rest.find('/');
  const size_t second = first == std::string_view::npos ? first : rest.find('/', first + 1);
  if (second == std::string_view::npos) {
    m.ref = repo_and_quant(rest, arg);
    return m;
  }
  m.ref.repo = std::string(rest.substr(0, second));
  m.ref.file = std::string(rest.substr(second + 1));
  if (!valid_repo_id(m.ref.repo))
    fail<InvalidArgument>("'{}': '{}' is not a hub repository (ORG/REPO: letters, digits, '-', '_', '.')", arg,
                          m.ref.repo);
  if (!valid_repo_file(m.ref.file))
    fail<InvalidArgument>("'{}': '{}' is not a file path in a repository", arg, m.ref.file);
  return m;
}

HubRef parse_hf_repo(std::string_view arg) {
  if (arg.substr(0, kScheme.size()) == kScheme) arg.remove_prefix(kScheme.size());
  return repo_and_quant(arg, arg);
}

}  // namespace pagoda::hub

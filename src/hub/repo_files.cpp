#include "hub/repo_files.h"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "gguf/split.h"
#include "hub/errors.h"
#include "hub/model_ref.h"

namespace pagoda::hub {
namespace {

char lower(char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; }

std::string lowered(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = lower(c);
  return out;
}

bool alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

std::string_view base_name(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace

RepoInfo parse_repo_info(std::string_view json) {
  const auto j = nlohmann::json::parse(json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) fail<FormatError>("the hub's file list is not a JSON object");
  RepoInfo info;
  if (auto it = j.find("sha"); it != j.end() && it->is_string()) info.sha = it->get<std::string>();
  auto sib = j.find("siblings");
  if (sib == j.end() || sib->is_null()) return info;
  if (!sib->is_array()) fail<FormatError>("the hub's file list: 'siblings' is not an array");
  for (const auto& s : *sib) {
    auto name = s.is_object() ? s.find("rfilename") : s.end();
    if (!s.is_object() || name == s.end() || !name->is_string())
      fail<FormatError>("the hub's file list: a sibling without a string 'rfilename'");
    std::string f = name->get<std::string>();
    if (valid_repo_file(f)) info.files.push_back(std::move(f));
  }
  std::sort(info.files.begin(), info.files.end());
  info.files.erase(std::unique(info.files.begin(), info.files.end()), info.files.end());
  return info;
}

std::vector<std::string> loadable_ggufs(const std::vector<std::string>& files) {
  std::vector<std::string> out;
  for (const auto& f : files) {
    const std::string name = lowered(base_name(f));
    if (name.size() < 5 || name.compare(name.size() - 5, 5, ".gguf") != 0) continue;
    if (name.find("mmproj") != std::string::npos) continue;  // vision projectors, not language models
    if (const auto split = parse_split_name(f); split && split->no != 1) continue;
    out.push_back(f);
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool carries_quant(std::string_view file, std::string_view quant) {
  if (quant.empty()) return false;
  std::string name = lowered(base_name(file));
  if (const auto split = parse_split_name(name)) name = split->prefix + ".gguf";
  const std::string q = lowered(quant);
  // A word ends where a letter, digit or '_' does not follow ("q4_k" is not in "q4_k_m").
  for (size_t at = name.find(q); at != std::string::npos; at = name.find(q, at + 1)) {
    const bool start_ok = at == 0 || !(alnum(name[at - 1]) || name[at - 1] == '_');
    const size_t end = at + q.size();
    const bool end_ok = end == name.size() || !(alnum(name[end]) || name[end] == '_');
    if (start_ok && end_ok) return true;
  }
  return false;
}

std::string list_for_message(const std::vector<std::string>& files) {
  if (files.empty()) return "none";
  std::string out;
  const size_t shown = std::min<size_t>(files.size(), 20);
  for (size_t i = 0; i < shown; ++i) out += (i ? ", " : "") + files[i];
  if (files.size() > shown) out += ", and " + std::to_string(files.size() - shown) + " more";
  return out;
}

std::string select_gguf(const std::vector<std::string>& files, std::string_view quant, std::string_view repo) {
  const auto ggufs = loadable_ggufs(files);
  if (ggufs.empty()) fail<NotFound>("{} has no GGUF files (files: {})", repo, list_for_message(files));
  if (!quant.empty()) {
    for (const auto& f : ggufs)
      if (carries_quant(f, quant)) return f;
    fail<NotFound>("{} has no GGUF file for quant {}; its GGUF files: {}", repo, quant, list_for_message(ggufs));
  }
  for (const auto& f : ggufs)
    if (carries_quant(f, "Q4_K_M")) return f;
  return ggufs.front();
}

std::vector<std::string> model_parts(const std::string& file) {
  const auto split = parse_split_name(file);
  if (!split || split->no != 1) return {file};
  std::vector<std::string> parts;
  for (int i = 1; i <= split->count; ++i) parts.push_back(split_name(split->prefix, i, split->count));
  return parts;
}

}  // namespace pagoda::hub

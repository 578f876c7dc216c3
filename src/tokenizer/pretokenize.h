// The pre-tokenizer splits of byte-level BPE vocabularies (tokenizer.ggml.pre):
// text is cut into pieces by the model's split regex before BPE merges run
// inside each piece. The regexes are written out as hand-made scanners that
// give exactly the regex's leftmost-first matches:
//   gpt-2:     's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//   llama-bpe: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
//              ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//   qwen2:     as llama-bpe with \p{N} (one digit per piece)
//   default:   llama.cpp's fallback, four splits in turn: [\p{P}\$\+<=>\^~\|]+,
//              then the gpt-2 regex, then \p{N}+, then [0-9][0-9][0-9]
// Text between matches (only possible in `default`) is a piece of its own.
#pragma once

#include <string_view>
#include <vector>

namespace pagoda {

enum class PreTokenizer { Default, Gpt2, Llama3, Qwen2 };

// The pre-tokenizer for a tokenizer.ggml.pre value, with llama.cpp's aliases
// ("llama3", "llama-bpe", "phi-2", "deepseek-r1-qwen"...); an empty name is
// `default`. Unsupported (naming it) for any other.
PreTokenizer pre_tokenizer_from_name(std::string_view name);
const char* pre_tokenizer_name(PreTokenizer p);  // canonical: "default", "gpt-2", "llama-bpe", "qwen2"

// The pieces of `text`, in order; together they are exactly `text` and none
// is empty. Invalid UTF-8 bytes are kept, each counting as a symbol that is
// neither letter, number nor space. Views point into `text`.
std::vector<std::string_view> pre_tokenize(PreTokenizer p, std::string_view text);

}  // namespace pagoda

// SentencePiece-style ("llama") encoding, as llama.cpp's SPM tokenizer does it:
// a dummy-prefix space, spaces written as U+2581, a bigram merge driven by the
// token scores, and <0xNN> byte tokens for whatever the merge cannot cover.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "tokenizer/special_split.h"
#include "tokenizer/vocab.h"

namespace pagoda {

// The defaults llama.cpp assumes for a SentencePiece vocabulary.
VocabDefaults spm_defaults();

// Appends the ids of already-split input: special fragments as they are, raw
// text with the dummy prefix where it starts the input or follows a special
// token (when the vocabulary's add_space_prefix is on).
void spm_encode(const Vocab& v, std::span<const Fragment> fragments, std::vector<int32_t>& out);

// Appends the ids of one piece of text that is already prefixed and escaped
// (spaces as U+2581). Exposed for tests.
void spm_encode_escaped(const Vocab& v, std::string_view text, std::vector<int32_t>& out);

}  // namespace pagoda

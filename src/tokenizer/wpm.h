// WordPiece ("bert") encoding, as llama.cpp's WPM tokenizer does it for the
// vocabularies of BERT-family embedding models: a BERT normalizer (lowercase,
// accents stripped, control characters dropped), words split on whitespace,
// punctuation, ASCII symbols and CJK ideographs, then greedy longest-match
// pieces per word. Converted vocabularies store a word-start piece with a
// U+2581 prefix ("▁play") and a continuation piece bare ("ing" for "##ing");
// a word the pieces cannot cover becomes the unknown token.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/special_split.h"
#include "tokenizer/vocab.h"

namespace pagoda {

// The defaults llama.cpp assumes for a WordPiece vocabulary (BERT's ids:
// [UNK] 100, [CLS] 101, [SEP] 102; [CLS] and [SEP] added by default).
VocabDefaults wpm_defaults();

// Appends the ids of already-split input: special fragments as they are, each
// raw fragment split into words and pieces on its own. max_token_bytes: the
// longest token text, which bounds the match search.
void wpm_encode(const Vocab& v, size_t max_token_bytes, std::span<const Fragment> fragments, std::vector<int32_t>& out);

// The normalized words of one piece of raw text, before the piece search.
// Exposed for tests.
std::vector<std::string> wpm_words(std::string_view text, bool lowercase, bool strip_accents);

// llama.cpp's clean-up of decoded WordPiece text (clean_up_tokenization_spaces):
// no space before ? ! . , nor around a lone apostrophe, none before 's 'm 're 've.
// Tokenizer::decode applies it; IncrementalDecoder does not (it would have to
// hold back every space), so streamed text keeps those spaces.
std::string wpm_clean_spaces(std::string_view text);

}  // namespace pagoda

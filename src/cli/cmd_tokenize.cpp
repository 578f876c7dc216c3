// `pagoda tokenize`: prints the ids a text tokenizes to, exactly as a prompt is
// tokenized (BOS when the vocabulary asks for it).
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/model_option.h"
#include "gguf/file.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::cli {

Command add_tokenize(CLI::App& app) {
  struct Opts {
    ModelOption model;
    std::string text;
    bool no_bos = false;
    bool special = false;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("tokenize", "Print the token ids of a text, space separated");
  o->model.add(cmd);
  cmd->add_option("text", o->text, "Text to tokenize")->required();
  cmd->add_flag("--no-bos", o->no_bos, "Do not add the BOS token");
  cmd->add_flag("--special", o->special, "Parse special-token text (<s>, <|user|>) as special tokens");
  return {cmd, [o] {
            const auto file = GgufFile::open(o->model.resolve());
            const auto tok = Tokenizer::from_gguf(file);
            const auto ids = tok.encode(o->text, !o->no_bos && tok.add_bos_by_default(), o->special);
            fmt::print("{}\n", fmt::join(ids, " "));
            return 0;
          }};
}

}  // namespace pagoda::cli

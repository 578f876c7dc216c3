#include "testing/build_paths.h"
#include "oracle.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "testing/process.h"
#include "testing/shared_data.h"

namespace pagoda::testing {

namespace fs = std::filesystem;

namespace {

const char* kSetup = "install Node.js and run `npm ci --prefix tests/chat/oracle` (scripts/test.sh does)";

// run_process takes a path, not a name to look up, so search $PATH here.
std::string find_node() {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    const std::string dir = dirs.substr(start, end - start);
    for (const char* name : {"node", "nodejs"}) {
      const fs::path p = fs::path(dir.empty() ? "." : dir) / name;
      if (access(p.c_str(), X_OK) == 0 && !fs::is_directory(p)) return p.string();
    }
    start = end + 1;
  }
  throw std::runtime_error(std::string("chat-template oracle: `node` is not on PATH; ") + kSetup);
}

nlohmann::ordered_json to_json(const OracleCase& c) {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  for (const auto& m : c.messages) messages.push_back({{"role", m.role}, {"content", m.content}});
  return {{"template", c.template_text},
          {"messages", messages},
          {"bos_token", c.opts.bos_text},
          {"eos_token", c.opts.eos_text},
          {"add_generation_prompt", c.opts.add_generation_prompt}};
}

}  // namespace

std::string chat_tests_dir() { return (fs::path(PAGODA_SOURCE_DIR) / "tests" / "chat").string(); }

std::string read_template_fixture(const std::string& name) {
  return read_file(chat_tests_dir() + "/templates/" + name + ".jinja");
}

namespace {

std::vector<OracleResult> run_oracle_json(const nlohmann::ordered_json& input, size_t n) {
  const std::string dir = chat_tests_dir() + "/oracle";
  if (!fs::exists(dir + "/node_modules/@huggingface/jinja/package.json"))
    throw std::runtime_error("chat-template oracle: " + dir + "/node_modules lacks @huggingface/jinja; " + kSetup);
  const std::string node = find_node();
  const fs::path file = fs::temp_directory_path() / ("pagoda_chat_oracle_" + std::to_string(getpid()) + ".json");
  std::ofstream(file, std::ios::binary) << input.dump();
  const ProcessResult r = run_process({node, dir + "/render.mjs", file.string()});
  fs::remove(file);
  if (r.exit_code != 0)
    throw std::runtime_error("chat-template oracle failed (exit " + std::to_string(r.exit_code) + "): " + r.err +
                             "\n(" + kSetup + ")");

  const nlohmann::json out = nlohmann::json::parse(r.out);
  if (!out.is_array() || out.size() != n)
    throw std::runtime_error("chat-template oracle: unexpected output " + r.out.substr(0, 200));
  std::vector<OracleResult> results;
  for (const auto& o : out) {
    OracleResult res;
    if (o.contains("text"))
      res.text = o["text"].get<std::string>();
    else
      res.error = o.value("error", std::string("(no message)"));
    results.push_back(std::move(res));
  }
  return results;
}

}  // namespace

std::vector<OracleResult> run_oracle(const std::vector<OracleCase>& cases) {
  nlohmann::ordered_json input = nlohmann::ordered_json::array();
  for (const auto& c : cases) input.push_back(to_json(c));
  return run_oracle_json(input, cases.size());
}

std::vector<OracleResult> run_oracle(const std::vector<ContextCase>& cases) {
  nlohmann::ordered_json input = nlohmann::ordered_json::array();
  for (const auto& c : cases) input.push_back({{"template", c.template_text}, {"context", c.context}});
  return run_oracle_json(input, cases.size());
}

}  // namespace pagoda::testing

// libFuzzer target for the hub's parsers: model arguments (a path, hf://...,
// -hf ORG/REPO[:QUANT]) and the file-list JSON with the choice of a GGUF file
// in it. Anything accepted must be safe as a cache path and URL segment (no
// "..", "--" in a name, empty segment or control character); anything else
// must be refused with pagoda::Error, never a crash.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_shared.h"
#include "hub/errors.h"
#include "hub/model_ref.h"
#include "hub/repo_files.h"

namespace {

using pagoda::fuzz::check;

void check_ref(const pagoda::hub::HubRef& r) {
  check(pagoda::hub::valid_repo_id(r.repo), "a valid ORG/REPO");
  const size_t slash = r.repo.find('/');
  check(r.repo.find("--") == std::string::npos && r.repo.find("..") == std::string::npos, "no -- or .. in the repo");
  check(r.repo.find('/', slash + 1) == std::string::npos, "one slash in the repo");
  if (!r.file.empty()) {
    check(pagoda::hub::valid_repo_file(r.file), "a valid file");
    check(("/" + r.file + "/").find("/../") == std::string::npos, "no .. segment");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return 0;  // names and lists this long say nothing new
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  // The first byte picks the parser.
  const uint8_t mode = size ? data[0] % 3 : 0;
  const std::string_view rest = size ? in.substr(1) : in;
  try {
    if (mode == 0) {
      const auto m = pagoda::hub::parse_model_arg(rest);
      if (m.hub)
        check_ref(m.ref);
      else
        check(m.path == rest, "a path is returned untouched");
    } else if (mode == 1) {
      check_ref(pagoda::hub::parse_hf_repo(rest));
    } else {
      // "QUANT\n" then the JSON.
      const size_t nl = rest.find('\n');
      const std::string quant(rest.substr(0, nl == std::string_view::npos ? 0 : std::min<size_t>(nl, 40)));
      const auto info = pagoda::hub::parse_repo_info(nl == std::string_view::npos ? rest : rest.substr(nl + 1));
      for (const auto& f : info.files) check(pagoda::hub::valid_repo_file(f), "listed files are valid paths");
      try {
        const std::string chosen = pagoda::hub::select_gguf(info.files, quant, "o/r");
        bool listed = false;
        for (const auto& f : info.files) listed = listed || f == chosen;
        check(listed, "the chosen file is in the list");
        for (const auto& part : pagoda::hub::model_parts(chosen))
          check(pagoda::hub::valid_repo_file(part), "parts are valid");
      } catch (const pagoda::hub::NotFound&) {
      }
    }
  } catch (const pagoda::Error&) {
  }
  return 0;
}

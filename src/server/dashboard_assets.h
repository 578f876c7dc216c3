// The dashboard page's files (web/dashboard/), embedded in the binary at
// build time (cmake/embed_files.cmake writes the table), so the page works
// offline and the binary serves it alone.
#pragma once

#include <optional>
#include <string_view>

namespace pagoda::server {

struct DashboardAsset {
  std::string_view name;  // file name, e.g. "index.html"
  std::string_view content_type;
  std::string_view body;
};

// The file named `name`; nothing for an unknown name.
std::optional<DashboardAsset> dashboard_asset(std::string_view name);

}  // namespace pagoda::server

// The dashboard's routes: the page (GET /, /dashboard, /dashboard/FILE), its
// data (GET /debug/state) and its stream (GET /debug/events). With
// --no-dashboard all of them are 404. The page itself loads without the API
// key (it asks for it); /debug/* needs it (the route table says so).
#include "server/api_error.h"
#include "server/connection.h"
#include "server/dashboard_assets.h"
#include "server/dashboard_stream.h"
#include "server/openai_response.h"

namespace pagoda::server {

void Connection::dashboard_page(RequestReader::Request&, std::string_view path, std::string_view) {
  if (!state_->config.dashboard) throw ApiError(404, fmt::format("no such endpoint: GET {}", path));
  const std::string_view name =
      path.starts_with("/dashboard/") ? path.substr(std::string_view("/dashboard/").size()) : "index.html";
  const auto asset = dashboard_asset(name);
  if (!asset) throw ApiError(404, fmt::format("no such file: {}", path));
  respond(200, asset->content_type, asset->body, {{"Cache-Control", "no-cache"}});
}

void Connection::debug_state(RequestReader::Request&, std::string_view path, std::string_view) {
  if (!state_->config.dashboard) throw ApiError(404, fmt::format("no such endpoint: GET {}", path));
  const ServedModel* m = state_->model();
  if (!m) throw ApiError(503, "the model is still loading");
  if (!m->engine->state_snapshot()) throw ApiError(404, "the engine takes no snapshots");
  await_fresh_snapshot(state_, socket_.get_executor(), [weak = weak_from_this()](auto snap) {
    auto self = weak.lock();  // a client that left is not answered
    if (!self) return;
    const ServedModel* model = self->state_->model();
    if (!snap || !model) return self->respond_error(ApiError(503, "the server is shutting down"));
    self->respond(200, "application/json", dump(state_json(*snap, dashboard_info(*self->state_, *model))),
                  {{"Cache-Control", "no-store"}});
  });
}

void Connection::debug_events(RequestReader::Request&, std::string_view path, std::string_view) {
  if (!state_->config.dashboard) throw ApiError(404, fmt::format("no such endpoint: GET {}", path));
  if (!state_->model()) throw ApiError(503, "the model is still loading");
  auto stream = std::make_shared<DashboardStream>(state_, weak_from_this(), socket_.get_executor());
  stream->start();
}

}  // namespace pagoda::server

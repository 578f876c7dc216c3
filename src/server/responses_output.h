// The Responses API's response object (responses_request.h has the request
// side), built from the chat pipeline's output:
//
//   {id: resp_..., object: response, created_at, status completed | incomplete
//    (cut by max_output_tokens: incomplete_details {reason: max_output_tokens}),
//    model, output [items], usage {input_tokens, output_tokens, total_tokens,
//    input_tokens_details {cached_tokens}, output_tokens_details {reasoning_tokens}},
//    and the request fields OpenAI echoes (instructions, tools, tool_choice, text, ...)}
//
// Output items, in the order the model wrote them: reasoning {id: rs_...,
// summary [], content [{type: reasoning_text, text}]} when the model reasoned
// (a reasoning parser, or harmony); message {id: msg_..., role: assistant,
// status, content [{type: output_text, text, annotations []}]}; function_call
// {id: fc_..., call_id, name, arguments, status: completed, or incomplete when
// cut by max_output_tokens}. A response with
// nothing else holds one empty message, so output_text is "".
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/response_store.h"

namespace pagoda::server {

// A new id for a response or an item: `prefix` and 32 hex digits.
std::string responses_id(const char* prefix);

// reasoning_tokens is 0: the engine does not count reasoning tokens apart.
json responses_usage(const Usage& u);

// The response object around `output`. status: in_progress, completed,
// incomplete or failed; usage null while in progress.
json response_object(const ResponseIdentity& id, const GenerationRequest& req, const std::string& status, json output,
                     const json& usage);

// A response's output items as the one assistant chat message they were, so
// that previous_response_id can continue the conversation (less a call cut
// off by max_output_tokens: its arguments are not JSON).
nlohmann::ordered_json output_as_chat(const json& output);

// Keeps a finished response and its conversation in `store`, unless the request said store: false.
void store_response(ResponseStore& store, const GenerationRequest& req, const json& response);

// GET /v1/responses/{id}/input_items: a page of a stored response's input
// items, oldest first when `ascending` (OpenAI's default is newest first),
// after the item `after` (none: from the start).
json input_items_page(const json& items, bool ascending, size_t limit, const std::string& after);

}  // namespace pagoda::server

// Errors of the Jinja engine. Each is a pagoda::Error, so callers map them
// without parsing messages:
//   SyntaxError    the template text does not parse (a bad GGUF template or
//                  --chat-template file): FormatError
//   RenderError    rendering failed: the template raised (raise_exception), or
//                  an operation on the given data is invalid: InvalidArgument,
//                  so a chat request whose messages a template refuses gets 400
//   LimitExceeded  a resource limit (Limits in template.h) was hit: a hostile
//                  or runaway template stops cleanly; also a RenderError
#pragma once

#include "util/error.h"

namespace pagoda::jinja {

struct SyntaxError : FormatError {
  using FormatError::FormatError;
};

struct RenderError : InvalidArgument {
  using InvalidArgument::InvalidArgument;
};

struct LimitExceeded : RenderError {
  using RenderError::RenderError;
};

}  // namespace pagoda::jinja

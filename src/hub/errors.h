// The errors of a pull from the Hugging Face hub, one class per thing the user
// must do differently; each message already says what that is (the CLI
// prints it as its one line).
#pragma once

#include "util/error.h"

namespace pagoda::hub {

// The endpoint could not be reached, or the transfer broke off or timed out.
struct NetworkError : Error {
  using Error::Error;
};

// 401/403: a gated or private repository (HF_TOKEN, the licence).
struct AccessDenied : Error {
  using Error::Error;
};

// 404, or a file or quant the repository (or the cache, offline) lacks.
struct NotFound : Error {
  using Error::Error;
};

// The bytes do not match the size or sha256 the hub publishes.
struct ChecksumMismatch : FormatError {
  using FormatError::FormatError;
};

}  // namespace pagoda::hub

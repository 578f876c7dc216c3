// Pagoda's one error convention: exceptions derived from pagoda::Error.
// Each subclass says who is at fault, so callers (the CLI, later the HTTP
// server) can map it to an exit code or a status without parsing messages.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace pagoda {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The caller passed a bad value (a flag, a sampling parameter, a prompt): HTTP 400.
struct InvalidArgument : Error {
  using Error::Error;
};

// A file is malformed, truncated or hostile.
struct FormatError : Error {
  using Error::Error;
};

// A well-formed file asks for something Pagoda does not implement.
struct Unsupported : Error {
  using Error::Error;
};

// Memory or another resource ran out; the caller may retry with less work.
struct ResourceExhausted : Error {
  using Error::Error;
};

// The device the model runs on can no longer compute (a sticky GPU fault, a
// step past its deadline): nothing is retried; every request ends with an
// error and the server exits for its supervisor to restart it.
struct DeviceLost : Error {
  using Error::Error;
};

// The service is at capacity (a full waiting queue); the client may retry: HTTP 429.
struct Overloaded : Error {
  using Error::Error;
};

template <class E = Error, class... Args>
[[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) {
  throw E(fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace pagoda

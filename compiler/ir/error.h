// error.h - the one exception type of the compiler: a message meant for the user.
// The driver prints it as "aotc: error: <message>" and exits with status 1.
#pragma once

#include <stdexcept>
#include <string>

namespace aotc {

class CompileError : public std::runtime_error {
 public:
  explicit CompileError(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace aotc

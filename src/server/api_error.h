// Errors the HTTP API reports, as OpenAI does: an HTTP status and a JSON body
//   {"error": {"message", "type", "param", "code"}}
// naming the parameter at fault where there is one.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "base/error.h"

namespace glass::server {

class ApiError : public Error {
 public:
  ApiError(int status, std::string message, std::string type, std::optional<std::string> param = std::nullopt,
           std::optional<std::string> code = std::nullopt);

  int status() const { return status_; }
  const std::string& type() const { return type_; }
  const std::optional<std::string>& param() const { return param_; }
  const std::optional<std::string>& code() const { return code_; }

  // {"error": {...}}, null for an absent param or code.
  nlohmann::ordered_json body() const;

 private:
  int status_;
  std::string type_;
  std::optional<std::string> param_;
  std::optional<std::string> code_;
};

// 400 invalid_request_error naming `param` (code "invalid_value" unless given).
ApiError invalid_parameter(const std::string& param, const std::string& message,
                           const std::string& code = "invalid_value");
// 404 for an unknown route or model.
ApiError not_found(const std::string& message, std::optional<std::string> param = std::nullopt,
                   std::optional<std::string> code = std::nullopt);

}  // namespace glass::server

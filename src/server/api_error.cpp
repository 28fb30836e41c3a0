#include "server/api_error.h"

namespace glass::server {

ApiError::ApiError(int status, std::string message, std::string type, std::optional<std::string> param,
                   std::optional<std::string> code)
    : Error(std::move(message)), status_(status), type_(std::move(type)), param_(std::move(param)), code_(std::move(code)) {}

nlohmann::ordered_json ApiError::body() const {
  nlohmann::ordered_json error = {{"message", what()}, {"type", type_}, {"param", nullptr}, {"code", nullptr}};
  if (param_) error["param"] = *param_;
  if (code_) error["code"] = *code_;
  return {{"error", error}};
}

ApiError invalid_parameter(const std::string& param, const std::string& message, const std::string& code) {
  return ApiError(400, message, "invalid_request_error", param, code);
}

ApiError not_found(const std::string& message, std::optional<std::string> param, std::optional<std::string> code) {
  return ApiError(404, message, "invalid_request_error", std::move(param), std::move(code));
}

}  // namespace glass::server

#include "webui/web_assets.h"

namespace glass::webui {

const WebAsset* find_asset(std::string_view name) {
  for (const WebAsset& a : builtin_assets())
    if (a.name == name) return &a;
  return nullptr;
}

}  // namespace glass::webui

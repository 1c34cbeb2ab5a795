#include "template_text.h"

#include "../compiler/ir/error.h"

namespace aotc::codegen {

std::string fill_template(std::string_view text, const std::map<std::string, std::string>& values) {
  std::string out;
  size_t pos = 0;
  while (true) {
    const size_t open = text.find("{{", pos);
    if (open == std::string_view::npos) break;
    const size_t close = text.find("}}", open);
    if (close == std::string_view::npos) break;
    out.append(text.substr(pos, open - pos));
    const std::string key(text.substr(open + 2, close - open - 2));
    auto it = values.find(key);
    if (it == values.end()) throw CompileError("internal: template placeholder {{" + key + "}} has no value");
    out += it->second;
    pos = close + 2;
  }
  out.append(text.substr(pos));
  return out;
}

}  // namespace aotc::codegen

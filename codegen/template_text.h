// template_text.h - {{NAME}} substitution for the text templates in templates/.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace aotc::codegen {

// Replaces every {{KEY}} with its value; a placeholder without a value is an internal
// error (a template and its caller disagree).
std::string fill_template(std::string_view text, const std::map<std::string, std::string>& values);

}  // namespace aotc::codegen

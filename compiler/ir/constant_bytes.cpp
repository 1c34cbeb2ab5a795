#include "constant_bytes.h"

namespace aotc::ir {

ConstantBytes DerivedConstants::get(const std::string& recipe, const std::vector<ConstantBytes>& sources,
                                    const std::function<ConstantBytes()>& make) {
  std::pair<std::string, std::vector<const void*>> key{recipe, {}};
  for (const ConstantBytes& s : sources) key.second.push_back(s.identity());
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = entries_.find(key);
    if (found != entries_.end()) return found->second.product;
  }
  ConstantBytes product = make();
  std::lock_guard<std::mutex> lock(mutex_);
  // Made by another thread meanwhile: the same bytes, and the first stays the shared one.
  return entries_.try_emplace(std::move(key), Entry{sources, product}).first->second.product;
}

}  // namespace aotc::ir

// constant_bytes.h - the bytes of a constant (a weight), immutable once made and shared
// between graphs. aotc --dim lowers a model at ~30 sample sizes whose weights are the same
// bytes: the graphs lowered from one model file hold the same buffers (frontend::ModuleFile),
// and what a pass computes from them (a packed or transformed weight) is computed once
// (DerivedConstants). Sharing also lets a comparison of two graphs' weights see that they
// are the same buffer instead of reading both.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace aotc::ir {

class ConstantBytes {
 public:
  ConstantBytes() = default;
  explicit ConstantBytes(std::vector<uint8_t> bytes)
      : buffer_(std::make_shared<const std::vector<uint8_t>>(std::move(bytes))) {}

  size_t size() const { return buffer_ ? buffer_->size() : 0; }
  bool empty() const { return size() == 0; }
  const uint8_t* data() const { return buffer_ ? buffer_->data() : nullptr; }
  const uint8_t* begin() const { return data(); }
  const uint8_t* end() const { return data() + size(); }
  uint8_t operator[](size_t i) const { return (*buffer_)[i]; }
  // The same buffer, not merely equal bytes: then the bytes are equal without reading them.
  bool same_buffer(const ConstantBytes& other) const { return buffer_ && buffer_ == other.buffer_; }
  // Identifies the buffer while some ConstantBytes holds it (DerivedConstants' keys).
  const void* identity() const { return buffer_.get(); }
  // Drops this holder's share (a graph's constant that nothing reads); the bytes are freed
  // with the last share.
  void release() { buffer_.reset(); }

 private:
  std::shared_ptr<const std::vector<uint8_t>> buffer_;
};

// What passes computed from constants' bytes, for graphs that share those bytes (the
// samples of aotc --dim): each product is made once. A product is found by its recipe (the
// pass and every parameter its bytes depend on, written by the pass) and its sources'
// buffers. The entry keeps the sources alive, so that no other buffer can take their
// address while the key names them.
class DerivedConstants {
 public:
  ConstantBytes get(const std::string& recipe, const std::vector<ConstantBytes>& sources,
                    const std::function<ConstantBytes()>& make);

 private:
  struct Entry {
    std::vector<ConstantBytes> sources;
    ConstantBytes product;
  };
  std::mutex mutex_;
  std::map<std::pair<std::string, std::vector<const void*>>, Entry> entries_;
};

}  // namespace aotc::ir

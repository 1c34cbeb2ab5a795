// run_lowered: runs a TorchScript module lowered to aotc (aotc.to_backend, then
// torch.jit.save) from C++, in a program linked against LibTorch and the aotc backend
// library only. The backend registers itself when its library is loaded, so the program
// links it with --no-as-needed (it calls nothing in it by name).
//
//   run_lowered LOWERED.pt DIMS     e.g. run_lowered lowered.pt 1x3x224x224
//
// The input is linspace(-1, 1) over its elements, reshaped to DIMS; every output is printed
// as its shape, then one value a line.
#include <torch/script.h>

#include <cstdio>
#include <string>
#include <vector>

namespace {

std::vector<int64_t> parse_dims(const std::string& text) {
  std::vector<int64_t> dims;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t x = text.find('x', pos);
    dims.push_back(std::stoll(text.substr(pos, x == std::string::npos ? std::string::npos : x - pos)));
    if (x == std::string::npos) break;
    pos = x + 1;
  }
  return dims;
}

void print_tensor(int index, const at::Tensor& tensor) {
  const at::Tensor t = tensor.to(at::kDouble).contiguous();
  std::printf("output %d: [", index);
  for (int64_t d = 0; d < t.dim(); ++d)
    std::printf("%s%lld", d ? ", " : "", static_cast<long long>(t.size(d)));
  std::printf("]\n");
  const double* values = t.data_ptr<double>();
  for (int64_t i = 0; i < t.numel(); ++i) std::printf("%.9g\n", values[i]);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: run_lowered LOWERED.pt DIMS (e.g. 1x3x224x224)\n");
    return 2;
  }
  try {
    torch::jit::Module module = torch::jit::load(argv[1]);
    const std::vector<int64_t> dims = parse_dims(argv[2]);
    int64_t count = 1;
    for (int64_t d : dims) count *= d;
    const at::Tensor input = torch::linspace(-1.0, 1.0, count).reshape(dims);
    const c10::IValue result = module.forward({input});
    if (result.isTuple()) {
      int index = 0;
      for (const c10::IValue& item : result.toTupleRef().elements()) print_tensor(index++, item.toTensor());
    } else {
      print_tensor(0, result.toTensor());
    }
  } catch (const c10::Error& e) {
    std::fprintf(stderr, "run_lowered: %s\n", e.what_without_backtrace());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "run_lowered: %s\n", e.what());
    return 1;
  }
  return 0;
}

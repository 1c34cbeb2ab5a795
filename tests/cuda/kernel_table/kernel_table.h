// kernel_table.h - the per-op table of CUDA kernels against the CPU's (the way ggml's
// test-backend-ops checks every backend against the CPU): each case builds a random input
// of odd sizes, optionally with NaNs, infinities, -0 and float32's largest values, runs the
// CPU kernel (aotc/rt/kernels.h) and the CUDA kernel (aotc/rt/cuda/kernels_cuda.h) with the
// same parameter struct, and compares the results: bit for bit where the kernels move or
// select elements, within a relative tolerance where they compute. Non-finite values must
// sit at the same places. CUDA outputs start poisoned (all bytes 0xFF: NaN, -1), so an
// element a kernel does not write fails.
//
// A family of cases is one file beside this one (<family>_cases.cpp) with a function
// `void <family>_cases(KernelTable& t)`, listed in main.cpp and tests/meson.build.
#pragma once

#include <aotc/rt/cuda/kernels_cuda.h>
#include <aotc/rt/kernels.h>
#include <aotc/rt/thread_pool.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace aotc::test {

class KernelTable {
 public:
  KernelTable();
  ~KernelTable();
  KernelTable(const KernelTable&) = delete;
  KernelTable& operator=(const KernelTable&) = delete;

  rt::ThreadPool& pool() { return pool_; }  // the CPU kernels' (2 threads)
  cudaStream_t stream() const { return exec_.stream; }
  const rt::cuda::Exec& exec() const { return exec_; }  // cuBLAS on stream(), fp32
  std::mt19937_64& rng() { return rng_; }
  // Seeds the generator from a family's name, so that a family's data stay the same when
  // families before it add or drop cases.
  void begin_family(const char* name);

  // n floats, normal(0, scale). With specials, about 1 in 16 (at least one where n > 0) is
  // NaN, +inf, -inf, -0 or +-float32's largest.
  std::vector<float> floats(size_t n, bool specials = false, float scale = 1.0f);
  // n integers uniform in [lo, hi].
  std::vector<int64_t> ints(size_t n, int64_t lo, int64_t hi);

  // A device copy of v; device<T>(n) is n poisoned elements. Both live to the table's end.
  template <class T>
  T* upload(const std::vector<T>& v) {
    void* d = alloc(v.size() * sizeof(T));
    if (!v.empty()) cudaMemcpy(d, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice);
    return static_cast<T*>(d);
  }
  template <class T>
  T* device(size_t n) {
    void* d = alloc(n * sizeof(T));
    cudaMemset(d, 0xFF, n * sizeof(T));
    return static_cast<T*>(d);
  }
  // Waits for the stream; a launch error (rt::cuda::first_error) fails the case.
  template <class T>
  std::vector<T> download(const T* d, size_t n) {
    std::vector<T> v(n);
    sync();
    if (n) cudaMemcpy(v.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost);
    return v;
  }

  // One row of the table. `op` is the IR op kind (and the variant), `what` the case's shape.
  // Floats: non-finite values at the same places; finite ones within tol of the CPU's,
  // relative to the largest finite CPU value (reported: that max error).
  void expect_close(const std::string& op, const std::string& what, const std::vector<float>& cpu,
                    const std::vector<float>& gpu, double tol = 1e-5);
  // The same, relative to `scale` where that is larger than the largest finite CPU value: a
  // clamped output's error grows with the values before the clamp, which the clamp hides.
  void expect_close_to_scale(const std::string& op, const std::string& what, const std::vector<float>& cpu,
                             const std::vector<float>& gpu, double tol, double scale);
  // Bit for bit (data movement, integers, indices, selections).
  template <class T>
  void expect_equal(const std::string& op, const std::string& what, const std::vector<T>& cpu,
                    const std::vector<T>& gpu) {
    size_t bad = cpu.size() == gpu.size() ? 0 : 1, first = 0;
    for (size_t i = 0; !bad && i < cpu.size(); ++i)
      if (std::memcmp(&cpu[i], &gpu[i], sizeof(T)) != 0) {
        bad = 1;
        first = i;
      }
    record(op, what, bad ? 1.0 : 0.0, !bad,
           bad ? "first difference at element " + std::to_string(first) : std::string());
  }

  // Prints the summary line "N passed, M failed"; returns the exit status.
  int finish();
  void sync();

 private:
  void* alloc(size_t bytes);
  void record(const std::string& op, const std::string& what, double error, bool ok, const std::string& note);

  rt::ThreadPool pool_{2};
  rt::cuda::Exec exec_{};
  std::mt19937_64 rng_{20261128};
  std::vector<void*> buffers_;
  int passed_ = 0, failed_ = 0;
};

// "2x3x5" for a list of sizes.
std::string dims_str(std::initializer_list<int64_t> dims);

// Values in the 16-bit type of fp16 / bf16 as raw bits (nearest even), and back; and the
// precision's name.
uint16_t bits_of(float v, rt::cuda::Precision precision);
float value_of(uint16_t bits, rt::cuda::Precision precision);
std::vector<uint16_t> to_bits(const std::vector<float>& v, rt::cuda::Precision precision);
std::vector<float> to_floats(const std::vector<uint16_t>& v, rt::cuda::Precision precision);
const char* name_of(rt::cuda::Precision precision);

// x (n, c, h, w) -> (n, h, w, c), and back.
std::vector<float> to_nhwc(const std::vector<float>& x, int64_t n, int64_t c, int64_t h, int64_t w);
std::vector<float> to_nchw(const std::vector<float>& y, int64_t n, int64_t c, int64_t h, int64_t w);

}  // namespace aotc::test

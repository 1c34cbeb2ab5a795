// host_copy_bench.cu - how a run with host-memory inputs and outputs should move its bytes:
// the ways a CUDA context can copy a caller's pageable buffer to the GPU and back, timed on
// their own (wall clock, each copy synchronised as aotc_run does), at the sizes of the GPU
// benchmark's models (resnet50's input at batch 1 and 32, a classifier's output):
//   pageable     cudaMemcpyAsync straight from the caller's buffer (the driver stages it)
//   pinned       the caller's buffer is pinned already (the copy's floor)
//   staged       memcpy into a pinned buffer, then one copy
//   chunked C    memcpy and copy in chunks of C bytes, the copy of one overlapping the memcpy
//                of the next
//   threads T    the chunked form with T threads doing the memcpys
//   graph        memcpy into pinned, then a graph of one copy node and an empty kernel
// Each way is checked: the bytes on the GPU (and back) must equal the caller's.
//
//   nvcc -std=c++20 -O3 -arch=sm_90 bench/cuda/host_copy_bench.cu -o host_copy_bench
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "check.cuh"

__global__ void touch(unsigned char* p) {
  if (threadIdx.x == 0 && blockIdx.x == 0) p[0] ^= 0;
}

using Clock = std::chrono::steady_clock;

template <class F>
double median_us(F&& f, int iters) {
  for (int i = 0; i < 5; ++i) f();
  std::vector<double> t;
  for (int i = 0; i < iters; ++i) {
    auto a = Clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::micro>(Clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// memcpy of [0, n) by `threads` threads, chunk by chunk; after each chunk's bytes are in
// pinned memory the copy of that chunk is enqueued (by thread 0, in order).
struct Chunked {
  size_t chunk;
  int threads;
};

void copy_in(const unsigned char* src, unsigned char* pinned, unsigned char* dev, size_t n, Chunked c,
             cudaStream_t s) {
  const size_t chunks = (n + c.chunk - 1) / c.chunk;
  if (c.threads <= 1) {
    for (size_t k = 0; k < chunks; ++k) {
      const size_t off = k * c.chunk, len = std::min(c.chunk, n - off);
      std::memcpy(pinned + off, src + off, len);
      CHECK(cudaMemcpyAsync(dev + off, pinned + off, len, cudaMemcpyHostToDevice, s));
    }
  } else {
    std::vector<std::atomic<int>> done(chunks);
    for (auto& d : done) d.store(0);
    std::atomic<size_t> next{0};
    auto work = [&] {
      for (size_t k; (k = next.fetch_add(1)) < chunks;) {
        const size_t off = k * c.chunk, len = std::min(c.chunk, n - off);
        std::memcpy(pinned + off, src + off, len);
        done[k].store(1, std::memory_order_release);
      }
    };
    std::vector<std::thread> pool;
    for (int t = 1; t < c.threads; ++t) pool.emplace_back(work);
    work();
    for (size_t k = 0; k < chunks; ++k) {
      while (!done[k].load(std::memory_order_acquire)) {
      }
      const size_t off = k * c.chunk, len = std::min(c.chunk, n - off);
      CHECK(cudaMemcpyAsync(dev + off, pinned + off, len, cudaMemcpyHostToDevice, s));
    }
    for (auto& th : pool) th.join();
  }
  CHECK(cudaStreamSynchronize(s));
}

void copy_out(unsigned char* dst, unsigned char* pinned, const unsigned char* dev, size_t n, size_t chunk,
              cudaStream_t s, std::vector<cudaEvent_t>& events) {
  const size_t chunks = std::min<size_t>((n + chunk - 1) / chunk, events.size());
  const size_t step = (n + chunks - 1) / chunks;
  for (size_t k = 0; k < chunks; ++k) {
    const size_t off = k * step, len = std::min(step, n - off);
    CHECK(cudaMemcpyAsync(pinned + off, dev + off, len, cudaMemcpyDeviceToHost, s));
    CHECK(cudaEventRecord(events[k], s));
  }
  for (size_t k = 0; k < chunks; ++k) {
    const size_t off = k * step, len = std::min(step, n - off);
    CHECK(cudaEventSynchronize(events[k]));
    std::memcpy(dst + off, pinned + off, len);
  }
}

int main() {
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  std::vector<cudaEvent_t> events(16);
  for (auto& e : events) CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  const size_t sizes[] = {4000, 602112, 32 * 602112};
  int failed = 0;
  std::printf("%-22s %10s %12s %12s\n", "way", "bytes", "in us", "out us");
  for (size_t n : sizes) {
    const int iters = n > 1000000 ? 50 : 300;
    std::vector<unsigned char> src(n), back(n);
    for (size_t i = 0; i < n; ++i) src[i] = static_cast<unsigned char>(std::rand());
    unsigned char *dev, *pinned, *pinned_src;
    CHECK(cudaMalloc(&dev, n));
    CHECK(cudaHostAlloc(&pinned, n, cudaHostAllocDefault));
    CHECK(cudaHostAlloc(&pinned_src, n, cudaHostAllocDefault));
    std::memcpy(pinned_src, src.data(), n);
    auto verify = [&](const char* way) {
      std::vector<unsigned char> got(n);
      CHECK(cudaMemcpy(got.data(), dev, n, cudaMemcpyDeviceToHost));
      const bool in_ok = std::memcmp(got.data(), src.data(), n) == 0;
      const bool out_ok = std::memcmp(back.data(), src.data(), n) == 0;
      if (!in_ok || !out_ok) {
        std::printf("FAIL %s (%zu bytes): %s\n", way, n, in_ok ? "output" : "input");
        ++failed;
      }
      CHECK(cudaMemset(dev, 0, n));
      std::memset(back.data(), 0, n);
    };
    auto row = [&](const char* way, double in, double out) {
      std::printf("%-22s %10zu %12.1f %12.1f\n", way, n, in, out);
    };
    {
      double in = median_us(
          [&] {
            CHECK(cudaMemcpyAsync(dev, src.data(), n, cudaMemcpyHostToDevice, s));
            CHECK(cudaStreamSynchronize(s));
          },
          iters);
      double out = median_us(
          [&] {
            CHECK(cudaMemcpyAsync(back.data(), dev, n, cudaMemcpyDeviceToHost, s));
            CHECK(cudaStreamSynchronize(s));
          },
          iters);
      verify("pageable");
      row("pageable", in, out);
    }
    {
      double in = median_us(
          [&] {
            CHECK(cudaMemcpyAsync(dev, pinned_src, n, cudaMemcpyHostToDevice, s));
            CHECK(cudaStreamSynchronize(s));
          },
          iters);
      double out = median_us(
          [&] {
            CHECK(cudaMemcpyAsync(pinned, dev, n, cudaMemcpyDeviceToHost, s));
            CHECK(cudaStreamSynchronize(s));
          },
          iters);
      std::memcpy(back.data(), pinned, n);
      verify("pinned");
      row("pinned (floor)", in, out);
    }
    const Chunked ways[] = {{n, 1},         {64 << 10, 1},  {256 << 10, 1}, {1 << 20, 1},
                            {256 << 10, 2}, {256 << 10, 4}, {1 << 20, 4},   {1 << 20, 8}};
    for (const Chunked& c : ways) {
      if (c.chunk > n && c.chunk != n) continue;
      double in = median_us([&] { copy_in(src.data(), pinned, dev, n, c, s); }, iters);
      double out = median_us([&] { copy_out(back.data(), pinned, dev, n, c.chunk, s, events); }, iters);
      char name[64];
      if (c.chunk == n)
        std::snprintf(name, sizeof name, "staged");
      else
        std::snprintf(name, sizeof name, "chunked %zuK x%d", c.chunk >> 10, c.threads);
      verify(name);
      row(name, in, out);
    }
    {
      // A graph: one copy node from pinned memory, then a kernel after it, as a model's
      // graph with its input copy inside would be.
      cudaGraph_t g;
      cudaGraphExec_t ge;
      CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
      CHECK(cudaMemcpyAsync(dev, pinned, n, cudaMemcpyHostToDevice, s));
      touch<<<1, 32, 0, s>>>(dev);
      CHECK(cudaMemcpyAsync(pinned, dev, n, cudaMemcpyDeviceToHost, s));
      CHECK(cudaStreamEndCapture(s, &g));
      CHECK(cudaGraphInstantiate(&ge, g, 0));
      double both = median_us(
          [&] {
            std::memcpy(pinned, src.data(), n);
            CHECK(cudaGraphLaunch(ge, s));
            CHECK(cudaStreamSynchronize(s));
            std::memcpy(back.data(), pinned, n);
          },
          iters);
      verify("graph");
      row("graph in+kernel+out", both, 0.0);
      CHECK(cudaGraphExecDestroy(ge));
      CHECK(cudaGraphDestroy(g));
    }
    CHECK(cudaFree(dev));
    CHECK(cudaFreeHost(pinned));
    CHECK(cudaFreeHost(pinned_src));
  }
  std::printf("host_copy_bench: %d failed\n", failed);
  return failed ? 1 : 0;
}

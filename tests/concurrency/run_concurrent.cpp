// run_concurrent: runs one model .so from many threads at once, each thread with its own
// context, and checks that every output is bit-identical to a serial run.
//   run_concurrent MODEL.so [THREADS=8] [RUNS_PER_THREAD=200] [THREADS_PER_CONTEXT=1]
// Inputs are filled deterministically (by dtype); exit status 0 only when all runs match.
#include <aotc/aotc.h>
#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

struct Api {
  decltype(&aotc_model_create) model_create;
  decltype(&aotc_model_destroy) model_destroy;
  decltype(&aotc_model_num_inputs) num_inputs;
  decltype(&aotc_model_num_outputs) num_outputs;
  decltype(&aotc_model_input_info) input_info;
  decltype(&aotc_model_output_info) output_info;
  decltype(&aotc_context_create) context_create;
  decltype(&aotc_context_destroy) context_destroy;
  decltype(&aotc_run) run;
  decltype(&aotc_last_error) last_error;
};

template <class F>
void load(void* lib, const char* name, F& fn) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  if (!fn) {
    std::fprintf(stderr, "run_concurrent: %s not found\n", name);
    std::exit(1);
  }
}

struct Buffers {
  std::vector<std::vector<unsigned char>> data;
  std::vector<aotc_tensor> tensors;
};

Buffers make_buffers(const std::vector<aotc_tensor_info>& infos, bool fill) {
  Buffers b;
  b.data.resize(infos.size());
  for (size_t i = 0; i < infos.size(); ++i) {
    b.data[i].assign(infos[i].size_bytes, 0);
    if (fill && infos[i].dtype == AOTC_DTYPE_FLOAT32) {
      auto* f = reinterpret_cast<float*>(b.data[i].data());
      uint32_t state = 12345u + static_cast<uint32_t>(i);
      for (size_t k = 0; k < infos[i].size_bytes / 4; ++k) {
        state = state * 1664525u + 1013904223u;
        f[k] = static_cast<float>(state >> 8) / 16777216.0f * 2.0f - 1.0f;
      }
    }
    aotc_tensor t{};
    t.data = b.data[i].data();
    t.dtype = infos[i].dtype;
    t.rank = infos[i].rank;
    t.dims = infos[i].dims;
    t.size_bytes = infos[i].size_bytes;
    b.tensors.push_back(t);
  }
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: run_concurrent MODEL.so [THREADS] [RUNS] [THREADS_PER_CONTEXT]\n");
    return 2;
  }
  const int threads = argc > 2 ? std::atoi(argv[2]) : 8;
  const int runs = argc > 3 ? std::atoi(argv[3]) : 200;
  const int per_context = argc > 4 ? std::atoi(argv[4]) : 1;
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    std::fprintf(stderr, "run_concurrent: %s\n", dlerror());
    return 1;
  }
  Api api{};
  load(lib, "aotc_model_create", api.model_create);
  load(lib, "aotc_model_destroy", api.model_destroy);
  load(lib, "aotc_model_num_inputs", api.num_inputs);
  load(lib, "aotc_model_num_outputs", api.num_outputs);
  load(lib, "aotc_model_input_info", api.input_info);
  load(lib, "aotc_model_output_info", api.output_info);
  load(lib, "aotc_context_create", api.context_create);
  load(lib, "aotc_context_destroy", api.context_destroy);
  load(lib, "aotc_run", api.run);
  load(lib, "aotc_last_error", api.last_error);

  aotc_model* model = nullptr;
  if (api.model_create(&model) != AOTC_OK) return std::fprintf(stderr, "%s\n", api.last_error()), 1;
  size_t n_in = 0, n_out = 0;
  api.num_inputs(model, &n_in);
  api.num_outputs(model, &n_out);
  std::vector<aotc_tensor_info> in_info(n_in), out_info(n_out);
  for (size_t i = 0; i < n_in; ++i) api.input_info(model, i, &in_info[i]);
  for (size_t i = 0; i < n_out; ++i) api.output_info(model, i, &out_info[i]);

  // The serial reference.
  const Buffers inputs = make_buffers(in_info, true);
  Buffers reference = make_buffers(out_info, false);
  aotc_context* ctx = nullptr;
  aotc_context_options serial{};
  serial.num_threads = 1;
  if (api.context_create(model, &serial, &ctx) != AOTC_OK ||
      api.run(model, ctx, inputs.tensors.data(), n_in, reference.tensors.data(), n_out) != AOTC_OK)
    return std::fprintf(stderr, "%s\n", api.last_error()), 1;
  api.context_destroy(ctx);

  std::atomic<long> mismatches{0}, failures{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      aotc_context* c = nullptr;
      aotc_context_options options{};
      options.num_threads = per_context;
      if (api.context_create(model, &options, &c) != AOTC_OK) {
        ++failures;
        return;
      }
      Buffers out = make_buffers(out_info, false);
      for (int r = 0; r < runs; ++r) {
        for (auto& d : out.data) std::memset(d.data(), 0xA5, d.size());  // stale results must not pass
        if (api.run(model, c, inputs.tensors.data(), n_in, out.tensors.data(), n_out) != AOTC_OK) {
          ++failures;
          continue;
        }
        for (size_t i = 0; i < n_out; ++i)
          if (std::memcmp(out.data[i].data(), reference.data[i].data(), out.data[i].size()) != 0)
            ++mismatches;
      }
      api.context_destroy(c);
    });
  }
  for (auto& th : pool) th.join();
  api.model_destroy(model);
  std::printf(
      "%d threads x %d runs (%d thread(s) per context): %ld failed runs, %ld outputs differing from the "
      "serial run\n",
      threads, runs, per_context, failures.load(), mismatches.load());
  return failures == 0 && mismatches == 0 ? 0 : 1;
}

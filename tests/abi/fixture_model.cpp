// fixture_model.cpp - a hand-written "generated" model for testing the C ABI and aotc-run
// without the compiler. Linked with aotc_runtime and templates/exports.map exactly like a
// real model .so.
//
//   inputs:  x: float32 [2, 3], ids: int64 [4]
//   outputs: y = x * 2 + 1 (float32 [2, 3]), s = float(sum(ids)) (float32 [1])
//
// The scale and bias come from the weights, and the run goes through the arena, each
// thread's scratch and the thread pool, so that each of those paths is exercised.
// Built twice: with the weights embedded, and with AOTC_FIXTURE_EXTERNAL_WEIGHTS as a
// model whose weights are external (a file or a caller's buffer holding kWeights).
// Deliberate traps:
//   - the run throws if the runtime hands it a misaligned arena, weights or per-thread
//     scratch (a runtime bug that the ABI turns into AOTC_ERR_INTERNAL);
//   - ids[0] == kThrowSentinel makes the run throw, to test that no exception crosses
//     the ABI (AOTC_ERR_INTERNAL instead);
//   - ids[0] == kSlowSentinel makes the run take 200 ms, to test concurrent use of a context.
#include <aotc/rt/model_desc.h>

#include <chrono>
#include <thread>

#include <aotc/rt/thread_pool.h>

#include <cstdint>
#include <stdexcept>

namespace {

constexpr int64_t kThrowSentinel = -777;
constexpr int64_t kSlowSentinel = -555;

// Weights: {scale, bias}, padded to one 64-byte line like generated code aligns them.
alignas(64) const float kWeights[16] = {2.0f, 1.0f};

const aotc::rt::TensorDesc kInputs[] = {
    {"x", AOTC_DTYPE_FLOAT32, 2, {2, 3}},
    {"ids", AOTC_DTYPE_INT64, 1, {4}},
};

const aotc::rt::TensorDesc kOutputs[] = {
    {"y", AOTC_DTYPE_FLOAT32, 2, {2, 3}},
    {"s", AOTC_DTYPE_FLOAT32, 1, {1}},
};

// Arena layout: [0, 24) x * scale, [64, 72) the int64 sum. Deliberately bigger than used.
constexpr uint64_t kArenaBytes = 256;
// Scratch of each pool thread, after the arena: the run writes the elements each thread
// scales into its own scratch first.
constexpr uint64_t kThreadScratchBytes = 128;

bool aligned64(const void* p) { return reinterpret_cast<uintptr_t>(p) % 64 == 0; }

void run(const aotc::rt::RunArgs& args) {
  if (!args.arena || !aligned64(args.arena) || !aligned64(args.weights) || !args.pool)
    throw std::logic_error("runtime passed a bad arena, weights or pool");
  aotc::rt::ThreadPool& pool = *args.pool;
  if (pool.thread_scratch_bytes() < kThreadScratchBytes || pool.thread_scratch_bytes() % 64 != 0)
    throw std::logic_error("runtime passed no or too little per-thread scratch");
  for (int t = 0; t < pool.size(); ++t) {
    unsigned char* scratch = pool.thread_scratch(t);
    if (!aligned64(scratch) || scratch < args.arena + kArenaBytes)
      throw std::logic_error("runtime passed misplaced per-thread scratch");
  }
  const auto* x = static_cast<const float*>(args.inputs[0]);
  const auto* ids = static_cast<const int64_t*>(args.inputs[1]);
  auto* y = static_cast<float*>(args.outputs[0]);
  auto* s = static_cast<float*>(args.outputs[1]);
  if (ids[0] == kThrowSentinel) throw std::runtime_error("fixture: sentinel id");
  if (ids[0] == kSlowSentinel) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const auto* weights = reinterpret_cast<const float*>(args.weights);
  auto* scaled = reinterpret_cast<float*>(args.arena);
  auto* sum = reinterpret_cast<int64_t*>(args.arena + 64);

  // Chunks of one element, so that with 2 threads both really take part.
  args.pool->parallel_for(6, 1, [&](int64_t begin, int64_t end, int thread) {
    auto* mine = reinterpret_cast<float*>(pool.thread_scratch(thread));
    for (int64_t i = begin; i < end; ++i) mine[i - begin] = x[i] * weights[0];
    for (int64_t i = begin; i < end; ++i) scaled[i] = mine[i - begin];
  });
  args.pool->parallel_for(6, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) y[i] = scaled[i] + weights[1];
  });
  uint64_t total = 0;  // unsigned: hostile ids must not overflow a signed sum (UB)
  for (int i = 0; i < 4; ++i) total += static_cast<uint64_t>(ids[i]);
  *sum = static_cast<int64_t>(total);
  s[0] = static_cast<float>(*sum);
}

#ifdef AOTC_FIXTURE_EXTERNAL_WEIGHTS
constexpr bool kExternal = true;
#else
constexpr bool kExternal = false;
#endif

const aotc::rt::ModelDesc kModel = {
    AOTC_ABI_VERSION,
    kInputs,
    2,
    kOutputs,
    2,
    kArenaBytes,
    kExternal ? nullptr : reinterpret_cast<const unsigned char*>(kWeights),
    sizeof kWeights,
    &run,
    kThreadScratchBytes,
    kExternal,
    aotc::rt::weights_checksum(reinterpret_cast<const unsigned char*>(kWeights), sizeof kWeights),
    nullptr,
    nullptr,
    // aotc_compiler_version: what generated code records; the external-weights fixture
    // records none, as hand-written model code may not ("").
    kExternal ? nullptr : "0.1.0 (fixture)",
};

}  // namespace

extern "C" __attribute__((visibility("hidden"))) const aotc::rt::ModelDesc* aotc_internal_model_desc(void) {
  return &kModel;
}

// gemm_tuning.cpp - the per-context table of GEMM algorithms chosen by timing (gemm_tuning.h).
//
// A context's creation times every GEMM shape of its model (20-430 ms on an H200,
// docs/CUDA.md). A server that creates a context per worker would time the same shapes on
// the same GPU again; so each choice is also kept per device for the life of the loaded
// library (every model library links its own copy of this runtime), and a table of that
// device takes it from there instead of timing. The first choice recorded for a shape
// stays (contexts created at once may both time it): every later context of the device
// then runs the same algorithm, and so sums in the same order. AOTC_CUDA_TUNING_CACHE=0
// (read at context creation) keeps a context's table to itself, for comparisons.
#include "gemm_tuning.h"

#include <aotc/rt/cuda/kernels_cuda.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <tuple>
#include <utility>
#include <vector>

namespace aotc::rt::cuda {
namespace {

struct KeyLess {
  bool operator()(const GemmTuningKey& a, const GemmTuningKey& b) const {
    return std::lexicographical_compare(a.fields, a.fields + GemmTuningKey::kFields, b.fields,
                                        b.fields + GemmTuningKey::kFields);
  }
};

struct DeviceKeyLess {
  bool operator()(const std::pair<int, GemmTuningKey>& a, const std::pair<int, GemmTuningKey>& b) const {
    if (a.first != b.first) return a.first < b.first;
    return KeyLess{}(a.second, b.second);
  }
};

// What the tables of each device chose while this library has been loaded.
struct DeviceChoices {
  std::mutex mutex;
  std::map<std::pair<int, GemmTuningKey>, cublasLtMatmulAlgo_t, DeviceKeyLess> algos;
  std::map<std::pair<int, GemmTuningKey>, int, DeviceKeyLess> configs;
};

// Never destroyed: a context may still be created or destroyed while static objects are.
DeviceChoices& device_choices() {
  static DeviceChoices* const choices = new DeviceChoices();
  return *choices;
}

// The device's choice for key in `choices` (algos or configs), if any.
template <class Map, class Value>
bool shared_find(Map& choices, int device, const GemmTuningKey& key, Value* value) {
  std::lock_guard<std::mutex> lock(device_choices().mutex);
  const auto it = choices.find({device, key});
  if (it == choices.end()) return false;
  *value = it->second;
  return true;
}

// Records value for key unless the device has a choice already.
template <class Map, class Value>
void shared_add(Map& choices, int device, const GemmTuningKey& key, const Value& value) {
  try {
    std::lock_guard<std::mutex> lock(device_choices().mutex);
    choices.emplace(std::make_pair(device, key), value);
  } catch (const std::bad_alloc&) {
    // The context keeps its own choice; others will time the shape again.
  }
}

}  // namespace

struct GemmTuning {
  using Less = KeyLess;
  int device = -1;  // the device whose shared choices this table reads and adds to; -1: none
  std::map<GemmTuningKey, cublasLtMatmulAlgo_t, Less> chosen;
  std::map<GemmTuningKey, int, Less> chosen_3xtf32;
  // (weight, n, k, ldb) -> the weight's gemm_f16x2 split (owned, or null), and whether a
  // product chose gemm_f16x2 over it
  struct Split {
    void* buffer = nullptr;
    bool used = false;
  };
  std::map<std::tuple<const void*, int64_t, int64_t, int64_t>, Split> splits;
  int64_t candidates_timed = 0;
  void* flush = nullptr;
  size_t flush_bytes = 0;
};

GemmTuning* gemm_tuning_create(int device) {
  GemmTuning* tuning = new (std::nothrow) GemmTuning();
  const char* env = std::getenv("AOTC_CUDA_TUNING_CACHE");
  if (tuning && !(env && std::strcmp(env, "0") == 0)) tuning->device = device;
  return tuning;
}

void gemm_tuning_destroy(GemmTuning* tuning) {
  if (!tuning) return;
  for (const auto& entry : tuning->splits)
    if (entry.second.buffer) cudaFree(entry.second.buffer);
  delete tuning;
}

void gemm_tuning_counts(const GemmTuning* tuning, int64_t* shapes, int64_t* candidates) {
  *shapes = tuning ? static_cast<int64_t>(tuning->chosen.size()) : 0;
  *candidates = tuning ? tuning->candidates_timed : 0;
}

bool gemm_tuning_find(GemmTuning* tuning, const GemmTuningKey& key, cublasLtMatmulAlgo_t* algo) {
  if (!tuning) return false;
  if (const auto it = tuning->chosen.find(key); it != tuning->chosen.end()) {
    *algo = it->second;
    return true;
  }
  cublasLtMatmulAlgo_t shared{};
  if (tuning->device < 0 || !shared_find(device_choices().algos, tuning->device, key, &shared)) return false;
  try {
    tuning->chosen.emplace(key, shared);
  } catch (const std::bad_alloc&) {
    return false;  // the caller times the shape instead
  }
  *algo = shared;
  return true;
}

bool gemm_tuning_add(GemmTuning* tuning, const GemmTuningKey& key, const cublasLtMatmulAlgo_t& algo) {
  try {
    tuning->chosen.insert_or_assign(key, algo);
  } catch (const std::bad_alloc&) {
    return false;
  }
  if (tuning->device >= 0) shared_add(device_choices().algos, tuning->device, key, algo);
  return true;
}

bool gemm_tuning_find_3xtf32(GemmTuning* tuning, const GemmTuningKey& key, int* config) {
  if (!tuning) return false;
  if (const auto it = tuning->chosen_3xtf32.find(key); it != tuning->chosen_3xtf32.end()) {
    *config = it->second;
    return true;
  }
  int shared = -1;
  if (tuning->device < 0 || !shared_find(device_choices().configs, tuning->device, key, &shared))
    return false;
  try {
    tuning->chosen_3xtf32.emplace(key, shared);
  } catch (const std::bad_alloc&) {
    return false;
  }
  *config = shared;
  return true;
}

bool gemm_tuning_add_3xtf32(GemmTuning* tuning, const GemmTuningKey& key, int config) {
  try {
    tuning->chosen_3xtf32.insert_or_assign(key, config);
  } catch (const std::bad_alloc&) {
    return false;
  }
  if (tuning->device >= 0) shared_add(device_choices().configs, tuning->device, key, config);
  return true;
}

bool gemm_tuning_find_split(const GemmTuning* tuning, const void* weight, int64_t n, int64_t k, int64_t ldb,
                            void** split) {
  if (!tuning) return false;
  const auto it = tuning->splits.find({weight, n, k, ldb});
  if (it == tuning->splits.end()) return false;
  *split = it->second.buffer;
  return true;
}

bool gemm_tuning_add_split(GemmTuning* tuning, const void* weight, int64_t n, int64_t k, int64_t ldb,
                           void* split) {
  try {
    tuning->splits.insert_or_assign({weight, n, k, ldb}, GemmTuning::Split{split, false});
    return true;
  } catch (const std::bad_alloc&) {
    return false;
  }
}

void gemm_tuning_use_split(GemmTuning* tuning, const void* weight, int64_t n, int64_t k, int64_t ldb) {
  if (!tuning) return;
  const auto it = tuning->splits.find({weight, n, k, ldb});
  if (it != tuning->splits.end()) it->second.used = true;
}

int64_t gemm_tuning_free_unused_splits(GemmTuning* tuning) {
  int64_t freed = 0;
  if (!tuning) return freed;
  for (auto& entry : tuning->splits) {
    GemmTuning::Split& split = entry.second;
    if (split.buffer && !split.used) {
      cudaFree(split.buffer);
      split.buffer = nullptr;
      ++freed;
    }
  }
  return freed;
}

void gemm_tuning_set_flush(GemmTuning* tuning, void* buffer, size_t bytes) {
  tuning->flush = buffer;
  tuning->flush_bytes = buffer ? bytes : 0;
}

void gemm_tuning_flush(const GemmTuning* tuning, void** buffer, size_t* bytes) {
  *buffer = tuning->flush;
  *bytes = tuning->flush_bytes;
}

void gemm_tuning_count_candidate(GemmTuning* tuning) { ++tuning->candidates_timed; }

}  // namespace aotc::rt::cuda

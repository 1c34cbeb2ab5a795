// gemm_tuning.cpp - the per-context table of GEMM algorithms chosen by timing (gemm_tuning.h).
#include "gemm_tuning.h"

#include <aotc/rt/cuda/kernels_cuda.h>

#include <algorithm>
#include <map>
#include <new>
#include <tuple>
#include <vector>

namespace aotc::rt::cuda {

struct GemmTuning {
  struct Less {
    bool operator()(const GemmTuningKey& a, const GemmTuningKey& b) const {
      return std::lexicographical_compare(a.fields, a.fields + GemmTuningKey::kFields, b.fields,
                                          b.fields + GemmTuningKey::kFields);
    }
  };
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

GemmTuning* gemm_tuning_create() { return new (std::nothrow) GemmTuning(); }

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

bool gemm_tuning_find(const GemmTuning* tuning, const GemmTuningKey& key, cublasLtMatmulAlgo_t* algo) {
  if (!tuning) return false;
  const auto it = tuning->chosen.find(key);
  if (it == tuning->chosen.end()) return false;
  *algo = it->second;
  return true;
}

bool gemm_tuning_add(GemmTuning* tuning, const GemmTuningKey& key, const cublasLtMatmulAlgo_t& algo) {
  try {
    tuning->chosen.insert_or_assign(key, algo);
    return true;
  } catch (const std::bad_alloc&) {
    return false;
  }
}

bool gemm_tuning_find_3xtf32(const GemmTuning* tuning, const GemmTuningKey& key, int* config) {
  if (!tuning) return false;
  const auto it = tuning->chosen_3xtf32.find(key);
  if (it == tuning->chosen_3xtf32.end()) return false;
  *config = it->second;
  return true;
}

bool gemm_tuning_add_3xtf32(GemmTuning* tuning, const GemmTuningKey& key, int config) {
  try {
    tuning->chosen_3xtf32.insert_or_assign(key, config);
    return true;
  } catch (const std::bad_alloc&) {
    return false;
  }
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

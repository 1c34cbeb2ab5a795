// gemm_tuning.h - the per-context table of GEMM algorithms chosen by timing (GemmTuning,
// kernels_cuda.h), and the choices shared by the tables of one device, for gemm_cublas.cu.
// Internal to the CUDA runtime. The tables live in a host-compiled file (gemm_tuning.cpp):
// nvcc 13.0's front end fails on the standard containers' destructors under C++20.
#pragma once

#include <cublasLt.h>

#include <cstddef>
#include <cstdint>

namespace aotc::rt::cuda {

struct GemmTuning;

// Everything that makes two products the same problem for cuBLASLt's algorithms.
struct GemmTuningKey {
  // 0-20 the product (key_of), 21-23 a convolution's geometry (choose_implicit_conv), 24 set
  // for a product whose B is a weight (gemm_weight_f32: it may run on B's split).
  static constexpr int kFields = 25;
  int64_t fields[kFields] = {};
};

// The algorithm chosen for key, if any: by this table, or by another of its device (then
// recorded in this one too, so that its capture runs what its tuning run ran).
bool gemm_tuning_find(GemmTuning* tuning, const GemmTuningKey& key, cublasLtMatmulAlgo_t* algo);
// Records the algorithm chosen for key; false when out of memory.
bool gemm_tuning_add(GemmTuning* tuning, const GemmTuningKey& key, const cublasLtMatmulAlgo_t& algo);
// Float32 products that gemm_3xtf32 can compute: the config chosen for key (-1: cuBLAS's
// float32 GEMM was faster), if chosen.
bool gemm_tuning_find_3xtf32(GemmTuning* tuning, const GemmTuningKey& key, int* config);
bool gemm_tuning_add_3xtf32(GemmTuning* tuning, const GemmTuningKey& key, int config);
// A device buffer larger than the GPU's L2 cache, which the timing overwrites before each
// timed launch so that every candidate reads its weights from memory, as in a run (a
// model's weights do not stay in L2 from one layer's use to the next run). Owned by the
// caller; null: candidates are timed warm.
void gemm_tuning_set_flush(GemmTuning* tuning, void* buffer, size_t bytes);
void gemm_tuning_flush(const GemmTuning* tuning, void** buffer, size_t* bytes);
// A weight's split for gemm_f16x2 (device memory that the table owns and frees with
// gemm_tuning_destroy, or after the tuning run where no product chose it), found by the weight's address and
// the n x k matrix (rows ldb apart) read there: *split is null where the weight could not be split (an
// infinity or a NaN in it). False when none was recorded.
bool gemm_tuning_find_split(const GemmTuning* tuning, const void* weight, int64_t n, int64_t k, int64_t ldb,
                            void** split);
// Records that split (null: none); false when out of memory (the caller keeps split).
bool gemm_tuning_add_split(GemmTuning* tuning, const void* weight, int64_t n, int64_t k, int64_t ldb,
                           void* split);
// Marks the weight's split as read by a product that chose gemm_f16x2.
void gemm_tuning_use_split(GemmTuning* tuning, const void* weight, int64_t n, int64_t k, int64_t ldb);
// After the tuning run: frees the splits that no product chose (their entries stay, as
// "no split", so that the capture does not make them again); the number freed.
int64_t gemm_tuning_free_unused_splits(GemmTuning* tuning);
// Counts a candidate timed (for AOTC_CUDA_TRACE).
void gemm_tuning_count_candidate(GemmTuning* tuning);

}  // namespace aotc::rt::cuda

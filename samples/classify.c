/*
 * classify.c - how to use a model .so built by aotc from plain C.
 *
 * Loads the model with dlopen, prints its signature, fills the first input with
 * deterministic values (or reads it from a raw float32 file), runs it once to warm up
 * and then N times, and prints the top-5 classes of output 0 with the latency.
 *
 *   classify MODEL.so [--runs N] [--threads N] [--input FILE.raw] [--seed S]
 *
 * Everything goes through the C ABI in aotc/aotc.h; every status is checked and
 * aotc_last_error() printed on failure. Linking the model directly (-l) works too; dlopen
 * shows how to load any model at run time.
 */
#define _POSIX_C_SOURCE 200809L

#include <aotc/aotc.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The ABI functions, looked up by name. */
typedef struct Api {
  uint32_t (*abi_version)(void);
  const char* (*last_error)(void);
  const char* (*status_name)(aotc_status);
  const char* (*dtype_name)(aotc_dtype);
  aotc_status (*model_create)(aotc_model**);
  aotc_status (*model_destroy)(aotc_model*);
  aotc_status (*model_num_inputs)(const aotc_model*, size_t*);
  aotc_status (*model_num_outputs)(const aotc_model*, size_t*);
  aotc_status (*model_input_info)(const aotc_model*, size_t, aotc_tensor_info*);
  aotc_status (*model_output_info)(const aotc_model*, size_t, aotc_tensor_info*);
  aotc_status (*model_arena_size)(const aotc_model*, uint64_t*);
  aotc_status (*context_create)(aotc_model*, const aotc_context_options*, aotc_context**);
  aotc_status (*context_destroy)(aotc_context*);
  aotc_status (*run)(const aotc_model*, aotc_context*, const aotc_tensor*, size_t, aotc_tensor*, size_t);
} Api;

static Api api;

/* Looks up one symbol; memcpy because ISO C has no cast from void* to a function pointer. */
static int resolve(void* handle, const char* name, void* fn_ptr, size_t fn_size) {
  void* symbol = dlsym(handle, name);
  if (!symbol) {
    fprintf(stderr, "classify: the library does not export %s: not an aotc model?\n", name);
    return 0;
  }
  memcpy(fn_ptr, &symbol, fn_size);
  return 1;
}

#define RESOLVE(field, name) resolve(handle, name, &api.field, sizeof api.field)

static int load_api(void* handle) {
  /* Check the ABI version before trusting any other signature. */
  if (!RESOLVE(abi_version, "aotc_abi_version")) return 0;
  if (api.abi_version() != AOTC_ABI_VERSION) {
    fprintf(stderr, "classify: model ABI version %u, this program was built for %u\n",
            (unsigned)api.abi_version(), (unsigned)AOTC_ABI_VERSION);
    return 0;
  }
  return RESOLVE(last_error, "aotc_last_error") && RESOLVE(status_name, "aotc_status_name") &&
         RESOLVE(dtype_name, "aotc_dtype_name") && RESOLVE(model_create, "aotc_model_create") &&
         RESOLVE(model_destroy, "aotc_model_destroy") && RESOLVE(model_num_inputs, "aotc_model_num_inputs") &&
         RESOLVE(model_num_outputs, "aotc_model_num_outputs") &&
         RESOLVE(model_input_info, "aotc_model_input_info") &&
         RESOLVE(model_output_info, "aotc_model_output_info") &&
         RESOLVE(model_arena_size, "aotc_model_arena_size") &&
         RESOLVE(context_create, "aotc_context_create") && RESOLVE(context_destroy, "aotc_context_destroy") &&
         RESOLVE(run, "aotc_run");
}

/* Prints the failure of an ABI call; returns 0 so call sites read `if (!ok(...)) goto done;`. */
static int ok(aotc_status status, const char* call) {
  if (status == AOTC_OK) return 1;
  fprintf(stderr, "classify: %s failed: %s: %s\n", call, api.status_name(status), api.last_error());
  return 0;
}

static void print_tensor(const char* role, size_t index, const aotc_tensor_info* info) {
  int32_t d;
  printf("  %s %zu '%s': %s [", role, index, info->name, api.dtype_name(info->dtype));
  for (d = 0; d < info->rank; ++d) printf(d ? ", %lld" : "%lld", (long long)info->dims[d]);
  printf("] (%llu bytes)\n", (unsigned long long)info->size_bytes);
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int compare_doubles(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

/* A 64-bit LCG (Knuth's MMIX constants): the same input on every machine for a seed. */
static float next_uniform(uint64_t* state) {
  *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
  return (float)((double)(*state >> 40) / (double)(1ULL << 24) * 2.0 - 1.0); /* [-1, 1) */
}

static int read_raw_file(const char* path, void* data, uint64_t bytes) {
  FILE* file = fopen(path, "rb");
  long size;
  if (!file) {
    fprintf(stderr, "classify: cannot open %s: %s\n", path, strerror(errno));
    return 0;
  }
  if (fseek(file, 0, SEEK_END) != 0 || (size = ftell(file)) < 0 || fseek(file, 0, SEEK_SET) != 0) {
    fprintf(stderr, "classify: cannot read %s: %s\n", path, strerror(errno));
    fclose(file);
    return 0;
  }
  if ((uint64_t)size != bytes) {
    fprintf(stderr, "classify: %s has %ld bytes, input 0 needs exactly %llu (raw float32)\n", path, size,
            (unsigned long long)bytes);
    fclose(file);
    return 0;
  }
  if (bytes && fread(data, 1, (size_t)bytes, file) != (size_t)bytes) {
    fprintf(stderr, "classify: cannot read %s\n", path);
    fclose(file);
    return 0;
  }
  fclose(file);
  return 1;
}

static int parse_int(const char* text, long min, long max, long* out) {
  char* end = NULL;
  long value;
  errno = 0;
  value = strtol(text, &end, 10);
  if (!*text || *end || errno || value < min || value > max) return 0;
  *out = value;
  return 1;
}

static void usage(FILE* out) {
  fprintf(out,
          "usage: classify MODEL.so [--runs N] [--threads N] [--input FILE.raw] [--seed S]\n"
          "  --runs N        timed runs after one warm-up run (default 20)\n"
          "  --threads N     threads per run (default: the number of online CPUs)\n"
          "  --input FILE    raw little-endian float32 data for input 0 (default: seeded\n"
          "                  pseudo-random values in [-1, 1); other inputs are zero)\n"
          "  --seed S        seed of the pseudo-random input (default 1)\n");
}

int main(int argc, char** argv) {
  const char* model_path = NULL;
  const char* input_path = NULL;
  long runs = 20, threads = sysconf(_SC_NPROCESSORS_ONLN), seed = 1;
  void* handle = NULL;
  aotc_model* model = NULL;
  aotc_context* context = NULL;
  aotc_tensor_info* in_info = NULL;
  aotc_tensor_info* out_info = NULL;
  aotc_tensor* inputs = NULL;
  aotc_tensor* outputs = NULL;
  double* times = NULL;
  size_t num_inputs = 0, num_outputs = 0, i;
  uint64_t arena_bytes = 0;
  aotc_context_options options;
  int status = 1;
  int a;

  if (threads < 1 || threads > 1024) threads = 1;
  for (a = 1; a < argc; ++a) {
    const char* arg = argv[a];
    const int has_value = a + 1 < argc;
    if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(arg, "--runs") && has_value) {
      if (!parse_int(argv[++a], 1, 1000000, &runs)) return usage(stderr), 2;
    } else if (!strcmp(arg, "--threads") && has_value) {
      if (!parse_int(argv[++a], 1, 1024, &threads)) return usage(stderr), 2;
    } else if (!strcmp(arg, "--seed") && has_value) {
      if (!parse_int(argv[++a], 0, 2147483647L, &seed)) return usage(stderr), 2;
    } else if (!strcmp(arg, "--input") && has_value) {
      input_path = argv[++a];
    } else if (arg[0] != '-' && !model_path) {
      model_path = arg;
    } else {
      fprintf(stderr, "classify: unexpected argument '%s'\n", arg);
      usage(stderr);
      return 2;
    }
  }
  if (!model_path) {
    usage(stderr);
    return 2;
  }

  /* A name without '/' would make dlopen search the library path, not the current dir. */
  if (!strchr(model_path, '/')) {
    char* local = malloc(strlen(model_path) + 3);
    if (!local) return 1;
    strcpy(local, "./");
    strcat(local, model_path);
    handle = dlopen(local, RTLD_NOW | RTLD_LOCAL);
    free(local);
  } else {
    handle = dlopen(model_path, RTLD_NOW | RTLD_LOCAL);
  }
  if (!handle) {
    fprintf(stderr, "classify: cannot load %s: %s\n", model_path, dlerror());
    return 1;
  }
  if (!load_api(handle)) goto done;
  printf("model %s, ABI version %u\n", model_path, (unsigned)api.abi_version());

  if (!ok(api.model_create(&model), "aotc_model_create")) goto done;
  if (!ok(api.model_num_inputs(model, &num_inputs), "aotc_model_num_inputs")) goto done;
  if (!ok(api.model_num_outputs(model, &num_outputs), "aotc_model_num_outputs")) goto done;
  if (!ok(api.model_arena_size(model, &arena_bytes), "aotc_model_arena_size")) goto done;
  if (num_outputs == 0) {
    fprintf(stderr, "classify: the model has no outputs\n");
    goto done;
  }
  in_info = calloc(num_inputs + 1, sizeof *in_info);
  out_info = calloc(num_outputs, sizeof *out_info);
  inputs = calloc(num_inputs + 1, sizeof *inputs);
  outputs = calloc(num_outputs, sizeof *outputs);
  times = calloc((size_t)runs, sizeof *times);
  if (!in_info || !out_info || !inputs || !outputs || !times) {
    fprintf(stderr, "classify: out of memory\n");
    goto done;
  }

  printf("inputs:\n");
  for (i = 0; i < num_inputs; ++i) {
    if (!ok(api.model_input_info(model, i, &in_info[i]), "aotc_model_input_info")) goto done;
    print_tensor("input", i, &in_info[i]);
  }
  printf("outputs:\n");
  for (i = 0; i < num_outputs; ++i) {
    if (!ok(api.model_output_info(model, i, &out_info[i]), "aotc_model_output_info")) goto done;
    print_tensor("output", i, &out_info[i]);
  }
  printf("arena: %llu bytes\n", (unsigned long long)arena_bytes);

  /* Buffers: each tensor exactly as its info describes it. Zero-filled by calloc. */
  for (i = 0; i < num_inputs; ++i) {
    aotc_tensor* t = &inputs[i];
    t->data = calloc(1, in_info[i].size_bytes ? (size_t)in_info[i].size_bytes : 1);
    t->dtype = in_info[i].dtype;
    t->rank = in_info[i].rank;
    t->dims = in_info[i].dims;
    t->size_bytes = in_info[i].size_bytes;
    if (!t->data) {
      fprintf(stderr, "classify: out of memory for input %zu\n", i);
      goto done;
    }
  }
  for (i = 0; i < num_outputs; ++i) {
    aotc_tensor* t = &outputs[i];
    t->data = calloc(1, out_info[i].size_bytes ? (size_t)out_info[i].size_bytes : 1);
    t->dtype = out_info[i].dtype;
    t->rank = out_info[i].rank;
    t->dims = out_info[i].dims;
    t->size_bytes = out_info[i].size_bytes;
    if (!t->data) {
      fprintf(stderr, "classify: out of memory for output %zu\n", i);
      goto done;
    }
  }
  if (num_inputs > 0) {
    if (in_info[0].dtype != AOTC_DTYPE_FLOAT32) {
      printf("note: input 0 is %s, not float32: leaving it zero\n", api.dtype_name(in_info[0].dtype));
    } else if (input_path) {
      if (!read_raw_file(input_path, inputs[0].data, inputs[0].size_bytes)) goto done;
      printf("input 0 from %s\n", input_path);
    } else {
      uint64_t state = (uint64_t)seed;
      float* x = inputs[0].data;
      const uint64_t count = inputs[0].size_bytes / sizeof(float);
      uint64_t k;
      for (k = 0; k < count; ++k) x[k] = next_uniform(&state);
      printf("input 0: pseudo-random in [-1, 1), seed %ld\n", seed);
    }
  }

  memset(&options, 0, sizeof options); /* reserved fields must be zero */
  options.num_threads = (int32_t)threads;
  if (!ok(api.context_create(model, &options, &context), "aotc_context_create")) goto done;

  /* One warm-up run (page faults, thread start-up, caches), then the timed runs. */
  if (!ok(api.run(model, context, inputs, num_inputs, outputs, num_outputs), "aotc_run")) goto done;
  for (a = 0; a < runs; ++a) {
    const double start = now_ms();
    if (!ok(api.run(model, context, inputs, num_inputs, outputs, num_outputs), "aotc_run")) goto done;
    times[a] = now_ms() - start;
  }
  qsort(times, (size_t)runs, sizeof *times, compare_doubles);

  if (out_info[0].dtype != AOTC_DTYPE_FLOAT32) {
    printf("output 0 is %s, not float32: no top-5\n", api.dtype_name(out_info[0].dtype));
  } else {
    /* Top-5 over all elements of output 0 (for [1, classes] logits: the classes). */
    const float* scores = outputs[0].data;
    const size_t count = (size_t)(outputs[0].size_bytes / sizeof(float));
    size_t best[5];
    size_t found = 0, k, j;
    for (k = 0; k < count; ++k) {
      /* Insertion into a sorted list of at most 5; ties keep the lower index first. */
      size_t pos = found;
      while (pos > 0 && scores[k] > scores[best[pos - 1]]) --pos;
      if (pos >= 5) continue;
      if (found < 5) ++found;
      for (j = found - 1; j > pos; --j) best[j] = best[j - 1];
      best[pos] = k;
    }
    printf("top-%zu of output 0 '%s':\n", found, out_info[0].name);
    for (k = 0; k < found; ++k)
      printf("  %zu. class %zu  score %.6g\n", k + 1, best[k], (double)scores[best[k]]);
  }
  printf("latency over %ld runs with %ld threads: median %.3f ms, min %.3f ms\n", runs, threads,
         runs % 2 ? times[runs / 2] : (times[runs / 2 - 1] + times[runs / 2]) / 2.0, times[0]);
  status = 0;

done:
  if (context && !ok(api.context_destroy(context), "aotc_context_destroy")) status = 1;
  if (model && !ok(api.model_destroy(model), "aotc_model_destroy")) status = 1;
  for (i = 0; inputs && i < num_inputs; ++i) free(inputs[i].data);
  for (i = 0; outputs && i < num_outputs; ++i) free(outputs[i].data);
  free(in_info);
  free(out_info);
  free(inputs);
  free(outputs);
  free(times);
  dlclose(handle);
  return status;
}

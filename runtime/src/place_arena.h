// place_arena.h - a context's arena for a model with dynamic dims, placed for the largest
// sizes the context allows (aotc_context_options.dim_limits).
#pragma once

#include <aotc/rt/model_desc.h>

#include <cstdint>

namespace aotc::rt {

// Places every bucket's buffers (DynamicDesc::arena_plans) for named dims of at most
// `limits` (a valid size of each dim, DynamicDesc::dims order): each buffer at its size
// there, in the order of aotc's plan, at the lowest 64-byte aligned offset free of the
// buffers placed before it that are alive at the same time. A bucket that serves no size
// within the limits gets offsets 0 (it never runs). Writes num_arena_offsets offsets and
// returns the activation bytes: at most ModelDesc::arena_bytes, since every size is at
// most the plan's and the plan's own offsets stay free (each buffer's offset is at most
// its offset there). Returns -1 when out of memory.
int64_t place_arena(const DynamicDesc& dyn, const int64_t* limits, int64_t* offsets);

}  // namespace aotc::rt

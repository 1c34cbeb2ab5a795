// torch's type promotion as compiler/ops/elementwise.h implements it, on the cases torch
// documents and a few it does not (0-d tensors against numbers, bool against integers).
#include <doctest/doctest.h>

#include "../../compiler/ops/elementwise.h"

namespace {

using aotc::ir::DType;
using aotc::ops::ElemArg;

ElemArg tensor(DType t) { return ElemArg{0, 0.0, t, false}; }
ElemArg zero_dim(DType t) { return ElemArg{0, 0.0, t, true}; }
ElemArg number(DType t) { return ElemArg{-1, 1.0, t, false}; }

}  // namespace

TEST_CASE("promote_types: the lattice bool < int32 < int64 < float32") {
  using aotc::ops::promote_types;
  CHECK(promote_types(DType::Bool, DType::Bool) == DType::Bool);
  CHECK(promote_types(DType::Bool, DType::Int32) == DType::Int32);
  CHECK(promote_types(DType::Int32, DType::Int64) == DType::Int64);
  CHECK(promote_types(DType::Int64, DType::Float32) == DType::Float32);
  CHECK(promote_types(DType::Bool, DType::Float32) == DType::Float32);
}

TEST_CASE("result_type: dimensioned tensors, 0-d tensors and numbers") {
  using aotc::ops::result_type;
  // Numbers only raise the category.
  CHECK(result_type({tensor(DType::Int64), number(DType::Float32)}) == DType::Float32);  // ids * 0.5
  CHECK(result_type({tensor(DType::Int32), number(DType::Int64)}) == DType::Int32);      // counts + 1
  CHECK(result_type({tensor(DType::Bool), number(DType::Int64)}) == DType::Int64);       // mask + 1
  CHECK(result_type({tensor(DType::Bool), number(DType::Bool)}) == DType::Bool);
  CHECK(result_type({tensor(DType::Float32), number(DType::Int64)}) == DType::Float32);
  // 0-d tensors behave like numbers of their dtype.
  CHECK(result_type({tensor(DType::Int32), zero_dim(DType::Int64)}) == DType::Int32);
  CHECK(result_type({tensor(DType::Int32), zero_dim(DType::Float32)}) == DType::Float32);
  CHECK(result_type({tensor(DType::Bool), zero_dim(DType::Int64)}) == DType::Int64);
  // ...but promote fully against other 0-d tensors and numbers.
  CHECK(result_type({zero_dim(DType::Int32), zero_dim(DType::Int64)}) == DType::Int64);
  CHECK(result_type({zero_dim(DType::Int32), number(DType::Float32)}) == DType::Float32);
  CHECK(result_type({zero_dim(DType::Int64), number(DType::Int64)}) == DType::Int64);
  // Dimensioned tensors promote among themselves.
  CHECK(result_type({tensor(DType::Int32), tensor(DType::Int64)}) == DType::Int64);
  CHECK(result_type({tensor(DType::Bool), tensor(DType::Int32)}) == DType::Int32);
  CHECK(result_type({tensor(DType::Int64), tensor(DType::Float32), number(DType::Bool)}) == DType::Float32);
  // Numbers alone: an int and a float give the default float dtype.
  CHECK(result_type({number(DType::Int64), number(DType::Float32)}) == DType::Float32);
}

// BatchRowsIndependent: whether a planned model computes each batch row on
// its own, so that a batch may be padded with extra rows (to the size of a
// captured device graph) without changing the real rows' outputs.
//
// A value is "batched" when its axis 0 is the batch: the model inputs, and
// what the rules below derive from them. The plan is independent when every
// node that reads a batched value keeps row i of its output a function of
// row i of its batched inputs (and of unbatched values), and every model
// output is batched. The rules are an allow-list over the operators the
// device registry lowers (device_ops.h): elementwise functions and
// broadcasting arithmetic whose other operands do not span the batch,
// convolution and pooling families, Gemm/MatMul with the batch in the
// rows or the stacked matrices, Softmax/LayerNormalization/Concat away from
// axis 0, Transpose keeping axis 0 first, views keeping dim 0, Gather on
// another axis or of an unbatched table by batched indices. Anything else
// that touches a batched value makes the answer false (never a false true).
//
// The plan must be bound for a batch of at least 2, so that dim 0 tells the
// batch apart from broadcast dims of 1.
#ifndef COALESCE_ENGINE_DEVICE_BATCH_ROWS_H_
#define COALESCE_ENGINE_DEVICE_BATCH_ROWS_H_

#include "engine/neutral_plan.h"

namespace coalesce {

bool BatchRowsIndependent(const NeutralPlan& plan);

}  // namespace coalesce

#endif  // COALESCE_ENGINE_DEVICE_BATCH_ROWS_H_

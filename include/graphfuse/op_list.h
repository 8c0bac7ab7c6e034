// The op table: the one list every stage reads (enum, names, kinds, arity).
// X(Name, Kind, min_inputs, max_inputs, min_outputs, max_outputs)
// Names and semantics follow the newest ONNX opset of each op: inputs that older opsets passed
// as attributes (axes, split, pads, ...) are inputs here, and the importer converts.
// kVariadic stands for "any number".
#pragma once

// clang-format off
#define GF_OP_LIST(X)                                         \
  /* unary elementwise */                                     \
  X(Abs, kElementwise, 1, 1, 1, 1)                            \
  X(Neg, kElementwise, 1, 1, 1, 1)                            \
  X(Exp, kElementwise, 1, 1, 1, 1)                            \
  X(Log, kElementwise, 1, 1, 1, 1)                            \
  X(Sqrt, kElementwise, 1, 1, 1, 1)                           \
  X(Reciprocal, kElementwise, 1, 1, 1, 1)                     \
  X(Tanh, kElementwise, 1, 1, 1, 1)                           \
  X(Erf, kElementwise, 1, 1, 1, 1)                            \
  X(Sigmoid, kElementwise, 1, 1, 1, 1)                        \
  X(Relu, kElementwise, 1, 1, 1, 1)                           \
  X(LeakyRelu, kElementwise, 1, 1, 1, 1)                      \
  X(Elu, kElementwise, 1, 1, 1, 1)                            \
  X(Selu, kElementwise, 1, 1, 1, 1)                           \
  X(Celu, kElementwise, 1, 1, 1, 1)                           \
  X(ThresholdedRelu, kElementwise, 1, 1, 1, 1)                \
  X(Gelu, kElementwise, 1, 1, 1, 1)                           \
  X(HardSigmoid, kElementwise, 1, 1, 1, 1)                    \
  X(HardSwish, kElementwise, 1, 1, 1, 1)                      \
  X(Softplus, kElementwise, 1, 1, 1, 1)                       \
  X(Softsign, kElementwise, 1, 1, 1, 1)                       \
  X(Mish, kElementwise, 1, 1, 1, 1)                           \
  X(Sin, kElementwise, 1, 1, 1, 1)                            \
  X(Cos, kElementwise, 1, 1, 1, 1)                            \
  X(Tan, kElementwise, 1, 1, 1, 1)                            \
  X(Asin, kElementwise, 1, 1, 1, 1)                           \
  X(Acos, kElementwise, 1, 1, 1, 1)                           \
  X(Atan, kElementwise, 1, 1, 1, 1)                           \
  X(Sinh, kElementwise, 1, 1, 1, 1)                           \
  X(Cosh, kElementwise, 1, 1, 1, 1)                           \
  X(Asinh, kElementwise, 1, 1, 1, 1)                          \
  X(Acosh, kElementwise, 1, 1, 1, 1)                          \
  X(Atanh, kElementwise, 1, 1, 1, 1)                          \
  X(Floor, kElementwise, 1, 1, 1, 1)                          \
  X(Ceil, kElementwise, 1, 1, 1, 1)                           \
  X(Round, kElementwise, 1, 1, 1, 1)                          \
  X(Sign, kElementwise, 1, 1, 1, 1)                           \
  X(Not, kElementwise, 1, 1, 1, 1)                            \
  X(BitwiseNot, kElementwise, 1, 1, 1, 1)                     \
  X(IsNaN, kElementwise, 1, 1, 1, 1)                          \
  X(IsInf, kElementwise, 1, 1, 1, 1)                          \
  X(Cast, kElementwise, 1, 1, 1, 1)                           \
  X(CastLike, kElementwise, 2, 2, 1, 1)                       \
  X(Identity, kElementwise, 1, 1, 1, 1)                       \
  X(Dropout, kElementwise, 1, 3, 1, 2)                        \
  /* binary and n-ary elementwise with numpy broadcasting */  \
  X(Add, kBroadcast, 2, 2, 1, 1)                              \
  X(Sub, kBroadcast, 2, 2, 1, 1)                              \
  X(Mul, kBroadcast, 2, 2, 1, 1)                              \
  X(Div, kBroadcast, 2, 2, 1, 1)                              \
  X(Pow, kBroadcast, 2, 2, 1, 1)                              \
  X(Mod, kBroadcast, 2, 2, 1, 1)                              \
  X(Min, kBroadcast, 1, kVariadic, 1, 1)                      \
  X(Max, kBroadcast, 1, kVariadic, 1, 1)                      \
  X(Sum, kBroadcast, 1, kVariadic, 1, 1)                      \
  X(Mean, kBroadcast, 1, kVariadic, 1, 1)                     \
  X(Equal, kBroadcast, 2, 2, 1, 1)                            \
  X(Less, kBroadcast, 2, 2, 1, 1)                             \
  X(LessOrEqual, kBroadcast, 2, 2, 1, 1)                      \
  X(Greater, kBroadcast, 2, 2, 1, 1)                          \
  X(GreaterOrEqual, kBroadcast, 2, 2, 1, 1)                   \
  X(And, kBroadcast, 2, 2, 1, 1)                              \
  X(Or, kBroadcast, 2, 2, 1, 1)                               \
  X(Xor, kBroadcast, 2, 2, 1, 1)                              \
  X(BitwiseAnd, kBroadcast, 2, 2, 1, 1)                       \
  X(BitwiseOr, kBroadcast, 2, 2, 1, 1)                        \
  X(BitwiseXor, kBroadcast, 2, 2, 1, 1)                       \
  X(PRelu, kBroadcast, 2, 2, 1, 1)                            \
  X(Where, kBroadcast, 3, 3, 1, 1)                            \
  X(Clip, kBroadcast, 1, 3, 1, 1)                             \
  X(BatchNormalization, kBroadcast, 5, 5, 1, 1)               \
  /* reductions and normalizations */                         \
  X(ReduceSum, kReduction, 1, 2, 1, 1)                        \
  X(ReduceMean, kReduction, 1, 2, 1, 1)                       \
  X(ReduceMax, kReduction, 1, 2, 1, 1)                        \
  X(ReduceMin, kReduction, 1, 2, 1, 1)                        \
  X(ReduceProd, kReduction, 1, 2, 1, 1)                       \
  X(ReduceL1, kReduction, 1, 2, 1, 1)                         \
  X(ReduceL2, kReduction, 1, 2, 1, 1)                         \
  X(ReduceSumSquare, kReduction, 1, 2, 1, 1)                  \
  X(ReduceLogSum, kReduction, 1, 2, 1, 1)                     \
  X(ReduceLogSumExp, kReduction, 1, 2, 1, 1)                  \
  X(ArgMax, kReduction, 1, 1, 1, 1)                           \
  X(ArgMin, kReduction, 1, 1, 1, 1)                           \
  X(CumSum, kReduction, 2, 2, 1, 1)                           \
  X(Softmax, kReduction, 1, 1, 1, 1)                          \
  X(LogSoftmax, kReduction, 1, 1, 1, 1)                       \
  X(LayerNormalization, kReduction, 2, 3, 1, 3)               \
  X(RMSNormalization, kReduction, 2, 2, 1, 1)                 \
  X(MaxPool, kReduction, 1, 1, 1, 1)                          \
  X(AveragePool, kReduction, 1, 1, 1, 1)                      \
  X(GlobalAveragePool, kReduction, 1, 1, 1, 1)                \
  X(GlobalMaxPool, kReduction, 1, 1, 1, 1)                    \
  /* layout and indexing (injective) */                       \
  X(Reshape, kInjective, 2, 2, 1, 1)                          \
  X(Transpose, kInjective, 1, 1, 1, 1)                        \
  X(Squeeze, kInjective, 1, 2, 1, 1)                          \
  X(Unsqueeze, kInjective, 2, 2, 1, 1)                        \
  X(Flatten, kInjective, 1, 1, 1, 1)                          \
  X(Concat, kInjective, 1, kVariadic, 1, 1)                   \
  X(Split, kInjective, 1, 2, 1, kVariadic)                    \
  X(Slice, kInjective, 3, 5, 1, 1)                            \
  X(Gather, kInjective, 2, 2, 1, 1)                           \
  X(GatherElements, kInjective, 2, 2, 1, 1)                   \
  X(Expand, kInjective, 2, 2, 1, 1)                           \
  X(Tile, kInjective, 2, 2, 1, 1)                             \
  X(Pad, kInjective, 2, 4, 1, 1)                              \
  X(Trilu, kInjective, 1, 2, 1, 1)                            \
  /* shape producers */                                       \
  X(Shape, kOpaque, 1, 1, 1, 1)                               \
  X(Size, kOpaque, 1, 1, 1, 1)                                \
  X(ConstantOfShape, kOpaque, 1, 1, 1, 1)                     \
  X(Range, kOpaque, 3, 3, 1, 1)                               \
  /* indexing by tuples of positions read from data */        \
  X(GatherND, kInjective, 2, 2, 1, 1)                         \
  /* GEMM-like: fusable with an elementwise epilogue */       \
  X(MatMul, kGemmLike, 2, 2, 1, 1)                            \
  X(Gemm, kGemmLike, 2, 3, 1, 1)                              \
  X(Conv, kGemmLike, 2, 3, 1, 1)                              \
  /* Conv on channels-last data: X [N, spatial..., C], W [M, kernel..., C / group], */ \
  /* Y [N, out spatial..., M]; Conv's attributes (graphfuse's own, for cuDNN) */     \
  X(NhwcConv, kGemmLike, 2, 3, 1, 1)                          \
  /* fused attention: Q, K, V, optional mask */               \
  X(Attention, kAttention, 3, 4, 1, 1)
// clang-format on

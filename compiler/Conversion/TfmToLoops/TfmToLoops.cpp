//===- TfmToLoops.cpp - tfm on tensors -> scf loops on buffers ------------===//
//
// Every tfm op becomes a loop nest over memrefs. Loops are ordered so that
// the innermost one walks contiguous memory (LLVM vectorises it); reductions
// carry reassociation flags so they vectorise too.
//
//===----------------------------------------------------------------------===//
#include "compiler/Conversion/Passes.h"
#include "compiler/Conversion/TfmToLoops/KernelBuilder.h"
#include "dialects/tfm/IR/TfmOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_TFMTOLOOPS
#include "compiler/Conversion/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// Base for the op lowerings: gives the converted result type.
template <typename Op> struct TfmLowering : public OpConversionPattern<Op> {
  using OpConversionPattern<Op>::OpConversionPattern;

  MemRefType resultType(Op op) const {
    return cast<MemRefType>(
        this->getTypeConverter()->convertType(op->getResult(0).getType()));
  }
};

/// Allocates a [B, T, N] buffer whose batch and sequence extents are those
/// of `like`.
static Value allocRows(KernelBuilder &k, MemRefType type, Value like) {
  return k.alloc(type, {k.dim(like, 0), k.dim(like, 1), Value()});
}

/// A readable, unique kernel name: the op, its attributes and the operand
/// shapes ("D" for a dynamic extent), e.g. tfm_linear_relu.DxDx64.128x64.128.
static std::string kernelName(StringRef base, TypeRange types) {
  std::string name = ("tfm_" + base).str();
  for (Type t : types) {
    name += ".";
    auto shaped = dyn_cast<ShapedType>(t);
    if (!shaped) {
      name += "i";
      continue;
    }
    for (auto [i, d] : llvm::enumerate(shaped.getShape()))
      name += (i ? "x" : "") +
              (ShapedType::isDynamic(d) ? std::string("D") : std::to_string(d));
    Type element = shaped.getElementType();
    if (element.isInteger(32))
      name += "i32";
    else if (element.isInteger(8))
      name += "i8";
    else if (element.isF16())
      name += "f16";
  }
  return name;
}

/// Calls the kernel `base` specialised for the types of `args`, creating it
/// on first use with `body` (given the kernel's arguments). Each distinct
/// kernel is compiled once however many layers use it, which keeps JIT time
/// independent of the model's depth.
static void callKernel(ConversionPatternRewriter &rewriter, Operation *op,
                       StringRef base, ValueRange operands,
                       function_ref<void(KernelBuilder &, ValueRange)> body) {
  auto module = op->getParentOfType<ModuleOp>();
  // Batch and sequence extents become dynamic (memref.cast), so a decoder
  // step ([B, 1, D]) and a whole sequence ([B, T, D]) share one kernel.
  SmallVector<Value> args;
  for (Value v : operands) {
    auto type = dyn_cast<MemRefType>(v.getType());
    bool activations = type && type.getRank() == 3;
    bool tokens = type && type.getElementType().isInteger(32);
    if (!activations && !tokens) {
      args.push_back(v);
      continue;
    }
    SmallVector<int64_t> shape(type.getShape());
    shape[0] = ShapedType::kDynamic;
    if (shape.size() > 1)
      shape[1] = ShapedType::kDynamic;
    auto general = MemRefType::get(shape, type.getElementType());
    args.push_back(general == type ? v
                                   : rewriter.create<memref::CastOp>(
                                         op->getLoc(), general, v));
  }
  std::string name = kernelName(base, ValueRange(args).getTypes());
  auto kernel = module.lookupSymbol<func::FuncOp>(name);
  if (!kernel) {
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToEnd(module.getBody());
    Location loc = NameLoc::get(rewriter.getStringAttr(name));
    kernel = rewriter.create<func::FuncOp>(
        loc, name, rewriter.getFunctionType(ValueRange(args).getTypes(), {}));
    kernel.setPrivate();
    kernel->setAttr("passthrough", rewriter.getArrayAttr(
                                       {rewriter.getStringAttr("noinline")}));
    SmallVector<Location> locs(args.size(), loc);
    Block *entry = rewriter.createBlock(&kernel.getBody(), {},
                                        ValueRange(args).getTypes(), locs);
    rewriter.setInsertionPointToStart(entry);
    KernelBuilder k(rewriter, loc);
    body(k, entry->getArguments());
    rewriter.create<func::ReturnOp>(loc);
  }
  rewriter.create<func::CallOp>(op->getLoc(), kernel, args);
}

//===----------------------------------------------------------------------===//
// Embedding and positions
//===----------------------------------------------------------------------===//

struct EmbeddingLowering : public TfmLowering<EmbeddingOp> {
  using TfmLowering::TfmLowering;
  LogicalResult
  matchAndRewrite(EmbeddingOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder caller(rewriter, op.getLoc());
    Value out = allocRows(caller, resultType(op), adaptor.getIds());
    float scale = op.getScale().convertToFloat();
    std::string base = "embedding";
    if (scale != 1.0f)
      base += "_scaled";
    // The scale is a kernel argument only when it is not 1.
    SmallVector<Value> args{adaptor.getIds(), adaptor.getTable(), out};
    callKernel(rewriter, op, base, args, [&](KernelBuilder &k, ValueRange a) {
      Value ids = a[0], table = a[1], result = a[2];
      Value zero = k.index(0);
      Value lastRow = k.addIndex(k.dim(table, 0), k.index(-1));
      Value scaleValue = k.f32(scale);
      k.forEachRow(ids, [&](Value b, Value t) {
        Value row = k.clampedIndex(k.load(ids, {b, t}), zero, lastRow);
        k.loop(zero, k.dim(table, 1), [&](Value d) {
          Value v = k.load(table, {row, d});
          k.store(scale == 1.0f ? v : k.mul(v, scaleValue), result, {b, t, d});
        });
      });
    });
    rewriter.replaceOp(op, out);
    return success();
  }
};

struct PositionalEncodingLowering : public TfmLowering<PositionalEncodingOp> {
  using TfmLowering::TfmLowering;
  LogicalResult
  matchAndRewrite(PositionalEncodingOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder caller(rewriter, op.getLoc());
    Value out = allocRows(caller, resultType(op), adaptor.getInput());
    Value offset = adaptor.getOffset() ? adaptor.getOffset() : caller.index(0);
    SmallVector<Value> args{adaptor.getInput(), adaptor.getTable(), offset,
                            out};
    callKernel(rewriter, op, "positional_encoding", args,
               [&](KernelBuilder &k, ValueRange a) {
                 Value in = a[0], table = a[1], first = a[2], result = a[3];
                 Value zero = k.index(0);
                 Value lastRow = k.addIndex(k.dim(table, 0), k.index(-1));
                 k.forEachRow(in, [&](Value b, Value t) {
                   Value pos = k.minIndex(k.addIndex(first, t), lastRow);
                   k.loop(zero, k.dim(in, 2), [&](Value d) {
                     k.store(
                         k.add(k.load(in, {b, t, d}), k.load(table, {pos, d})),
                         result, {b, t, d});
                   });
                 });
               });
    rewriter.replaceOp(op, out);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Dense layers
//===----------------------------------------------------------------------===//

static Value applyActivation(KernelBuilder &k, Activation act, Value v) {
  switch (act) {
  case Activation::none:
    return v;
  case Activation::relu:
    return k.max(v, k.f32(0.0));
  case Activation::gelu: {
    // Exact form: 0.5 * x * (1 + erf(x / sqrt(2))).
    Value erf = k.builder().create<math::ErfOp>(
        k.location(), k.mul(v, k.f32(0.70710678118654752440)));
    return k.mul(k.mul(k.f32(0.5), v), k.add(k.f32(1.0), erf));
  }
  case Activation::silu: {
    // x * sigmoid(x) = x / (1 + exp(-x)).
    Value e = k.builder().create<math::ExpOp>(k.location(),
                                              k.sub(k.f32(0.0), v));
    return k.div(v, k.add(k.f32(1.0), e));
  }
  }
  llvm_unreachable("unknown activation");
}

/// Calls the loop kernel of a linear layer: out = act(x · wᵀ + bias). An
/// f16 weight is widened to float32 as it is loaded (F16C on the host).
static void callFloatLinearKernel(ConversionPatternRewriter &rewriter,
                                  Operation *op, Activation act, Value x,
                                  Value w, Value bias, Value out) {
  std::string base = ("linear_" + stringifyActivation(act)).str();
  callKernel(rewriter, op, base, {x, w, bias, out},
             [&](KernelBuilder &k, ValueRange a) {
               Value in = a[0], weight = a[1], b = a[2], result = a[3];
               Value zero = k.index(0);
               Value inFeatures = k.dim(weight, 1);
               auto loadWeight = [&](Value n, Value i) -> Value {
                 Value v = k.load(weight, {n, i});
                 if (!v.getType().isF32())
                   v = k.builder().create<arith::ExtFOp>(
                       k.location(), k.builder().getF32Type(), v);
                 return v;
               };
               k.forEachRow(in, [&](Value r, Value t) {
                 k.loop(zero, k.dim(weight, 0), [&](Value n) {
                   Value dot =
                       k.reduce(zero, inFeatures, {k.f32(0.0)},
                                [&](Value i, ValueRange acc) {
                                  Value p = k.mul(k.load(in, {r, t, i}),
                                                  loadWeight(n, i));
                                  return SmallVector<Value>{k.add(acc[0], p)};
                                })[0];
                   Value v = k.add(dot, k.load(b, {n}));
                   k.store(applyActivation(k, act, v), result, {r, t, n});
                 });
               });
             });
}

/// Calls the loop kernel of an int8 linear layer. Each input row is
/// quantized symmetrically to [-kActivationLevels, kActivationLevels]
/// (scale = max|x| / levels, round half to even) into a stack row, the dot
/// products with the i8 weight rows accumulate in int32 (sign-extended
/// multiplies, which LLVM turns into vpmaddwd), and
/// out = act(acc · (x scale · w scale[n]) + bias[n]). The runtime's library
/// kernel (tfm_rt_linear_i8) quantizes the same way, so both paths compute
/// the same integers.
static void callQuantizedLinearKernel(ConversionPatternRewriter &rewriter,
                                      Operation *op, Activation act, Value x,
                                      Value w, Value scale, Value bias,
                                      Value out) {
  std::string base = ("linear_q_" + stringifyActivation(act)).str();
  int64_t inFeatures = cast<MemRefType>(w.getType()).getDimSize(1);
  callKernel(
      rewriter, op, base, {x, w, scale, bias, out},
      [&](KernelBuilder &k, ValueRange a) {
        Value in = a[0], weight = a[1], wScale = a[2], b = a[3],
              result = a[4];
        OpBuilder &ob = k.builder();
        Location loc = k.location();
        Type i8 = ob.getI8Type(), i32 = ob.getI32Type();
        Value zero = k.index(0);
        Value width = k.dim(weight, 1);
        Value levels = k.f32(kActivationLevels);
        Value row = ob.create<memref::AllocaOp>(
            loc, MemRefType::get({inFeatures}, i8), ob.getI64IntegerAttr(64));
        k.forEachRow(in, [&](Value r, Value t) {
          Value amax = k.reduce(zero, width, {k.f32(0.0)},
                                [&](Value i, ValueRange acc) {
                                  Value v = ob.create<math::AbsFOp>(
                                      loc, k.load(in, {r, t, i}));
                                  return SmallVector<Value>{k.max(acc[0], v)};
                                })[0];
          Value any = ob.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OGT,
                                               amax, k.f32(0.0));
          Value inv = ob.create<arith::SelectOp>(loc, any, k.div(levels, amax),
                                                 k.f32(0.0));
          Value xScale = k.div(amax, levels);
          k.loop(zero, width, [&](Value i) {
            Value v = ob.create<math::RoundEvenOp>(
                loc, k.mul(k.load(in, {r, t, i}), inv));
            k.store(ob.create<arith::FPToSIOp>(loc, i8, v), row, {i});
          });
          k.loop(zero, k.dim(weight, 0), [&](Value n) {
            Value zeroI32 =
                ob.create<arith::ConstantOp>(loc, ob.getI32IntegerAttr(0));
            Value acc =
                k.reduce(zero, width, {zeroI32}, [&](Value i, ValueRange s) {
                  Value xq =
                      ob.create<arith::ExtSIOp>(loc, i32, k.load(row, {i}));
                  Value wq = ob.create<arith::ExtSIOp>(
                      loc, i32, k.load(weight, {n, i}));
                  Value p = ob.create<arith::MulIOp>(loc, xq, wq);
                  return SmallVector<Value>{
                      ob.create<arith::AddIOp>(loc, s[0], p)};
                })[0];
            Value dequantize = k.mul(xScale, k.load(wScale, {n}));
            Value accF = ob.create<arith::SIToFPOp>(loc, ob.getF32Type(), acc);
            Value v = k.add(k.mul(accF, dequantize), k.load(b, {n}));
            k.store(applyActivation(k, act, v), result, {r, t, n});
          });
        });
      });
}

/// The loop kernel for any weight type of tfm.linear.
static void callLinearKernel(ConversionPatternRewriter &rewriter, Operation *op,
                             Activation act, Value x, Value w, Value scale,
                             Value bias, Value out) {
  if (scale)
    callQuantizedLinearKernel(rewriter, op, act, x, w, scale, bias, out);
  else
    callFloatLinearKernel(rewriter, op, act, x, w, bias, out);
}

struct LinearLowering : public TfmLowering<LinearOp> {
  using TfmLowering::TfmLowering;
  LogicalResult
  matchAndRewrite(LinearOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder caller(rewriter, op.getLoc());
    Value out = allocRows(caller, resultType(op), adaptor.getInput());
    callLinearKernel(rewriter, op, op.getActivation(), adaptor.getInput(),
                     adaptor.getWeight(), adaptor.getScale(),
                     adaptor.getBias(), out);
    rewriter.replaceOp(op, out);
    return success();
  }
};

/// tfm.linear -> call @tfm_rt_linear(x, w, b, y, activation), operands
/// cast to fully dynamic memrefs so one declaration serves every shape.
/// Below `minRows` rows (batch x sequence) the layer is a matrix-vector
/// product bound by streaming the weights, where the loop kernel is faster
/// than the library call: both are emitted, chosen by the row count at run
/// time.
struct LinearToLibraryCall : public TfmLowering<LinearOp> {
  LinearToLibraryCall(TypeConverter &converter, MLIRContext *ctx,
                      int64_t minRows)
      : TfmLowering(converter, ctx, /*benefit=*/2), minRows(minRows) {}
  int64_t minRows;

  LogicalResult
  matchAndRewrite(LinearOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder k(rewriter, op.getLoc());
    Value out = allocRows(k, resultType(op), adaptor.getInput());
    OpBuilder::InsertionGuard guard(rewriter);
    if (minRows > 1) {
      Value rows = k.mulIndex(k.dim(adaptor.getInput(), 0),
                              k.dim(adaptor.getInput(), 1));
      Value few = rewriter.create<arith::CmpIOp>(
          op.getLoc(), arith::CmpIPredicate::ult, rows, k.index(minRows));
      auto choice = rewriter.create<scf::IfOp>(op.getLoc(), few,
                                               /*withElseRegion=*/true);
      rewriter.setInsertionPoint(choice.thenBlock()->getTerminator());
      callLinearKernel(rewriter, op, op.getActivation(), adaptor.getInput(),
                       adaptor.getWeight(), adaptor.getScale(),
                       adaptor.getBias(), out);
      rewriter.setInsertionPoint(choice.elseBlock()->getTerminator());
    }
    auto dynamic = [&](Value v) -> Value {
      auto type = cast<MemRefType>(v.getType());
      SmallVector<int64_t> shape(type.getRank(), ShapedType::kDynamic);
      return rewriter.create<memref::CastOp>(
          op.getLoc(), MemRefType::get(shape, type.getElementType()), v);
    };
    // One runtime kernel per weight type: float32, f16 (widened per call),
    // i8 (+ the scale after the weight).
    Type element = op.getWeight().getType().getElementType();
    StringRef kernel = element.isF16()        ? kLinearF16Kernel
                       : element.isInteger(8) ? kLinearI8Kernel
                                              : kLinearKernel;
    SmallVector<Value> args{dynamic(adaptor.getInput()),
                            dynamic(adaptor.getWeight())};
    if (adaptor.getScale())
      args.push_back(dynamic(adaptor.getScale()));
    args.append({dynamic(adaptor.getBias()), dynamic(out)});
    args.push_back(rewriter.create<arith::ConstantOp>(
        op.getLoc(),
        rewriter.getI32IntegerAttr(static_cast<int32_t>(op.getActivation()))));
    auto module = op->getParentOfType<ModuleOp>();
    auto callee = module.lookupSymbol<func::FuncOp>(kernel);
    if (!callee) {
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToEnd(module.getBody());
      callee = rewriter.create<func::FuncOp>(
          op.getLoc(), kernel,
          rewriter.getFunctionType(ValueRange(args).getTypes(), {}));
      callee.setPrivate();
      callee->setAttr("llvm.emit_c_interface", rewriter.getUnitAttr());
    }
    rewriter.create<func::CallOp>(op.getLoc(), callee, args);
    rewriter.replaceOp(op, out);
    return success();
  }
};

struct SliceLowering : public TfmLowering<SliceOp> {
  using TfmLowering::TfmLowering;
  LogicalResult
  matchAndRewrite(SliceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder caller(rewriter, op.getLoc());
    Value out = allocRows(caller, resultType(op), adaptor.getInput());
    int64_t offset = op.getOffset();
    std::string base = "slice_at" + std::to_string(offset);
    callKernel(rewriter, op, base, {adaptor.getInput(), out},
               [&](KernelBuilder &k, ValueRange a) {
                 Value in = a[0], result = a[1];
                 Value zero = k.index(0), first = k.index(offset);
                 k.forEachRow(in, [&](Value b, Value t) {
                   k.loop(zero, k.dim(result, 2), [&](Value d) {
                     k.store(k.load(in, {b, t, k.addIndex(first, d)}), result,
                             {b, t, d});
                   });
                 });
               });
    rewriter.replaceOp(op, out);
    return success();
  }
};

struct NarrowLowering : public TfmLowering<NarrowOp> {
  using TfmLowering::TfmLowering;
  LogicalResult
  matchAndRewrite(NarrowOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder caller(rewriter, op.getLoc());
    Value out = allocRows(caller, resultType(op), adaptor.getInput());
    callKernel(rewriter, op, "narrow", {adaptor.getInput(), out},
               [&](KernelBuilder &k, ValueRange a) {
                 Value in = a[0], result = a[1];
                 Value zero = k.index(0);
                 k.forEachRow(in, [&](Value b, Value t) {
                   k.loop(zero, k.dim(result, 2), [&](Value d) {
                     k.storeNarrowing(k.load(in, {b, t, d}), result, {b, t, d});
                   });
                 });
               });
    rewriter.replaceOp(op, out);
    return success();
  }
};

struct AddLowering : public TfmLowering<AddOp> {
  using TfmLowering::TfmLowering;
  LogicalResult
  matchAndRewrite(AddOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder caller(rewriter, op.getLoc());
    Value out = allocRows(caller, resultType(op), adaptor.getLhs());
    SmallVector<Value> args{adaptor.getLhs(), adaptor.getRhs(), out};
    callKernel(rewriter, op, "add", args, [&](KernelBuilder &k, ValueRange a) {
      Value lhs = a[0], rhs = a[1], result = a[2];
      Value zero = k.index(0);
      k.forEachRow(lhs, [&](Value b, Value t) {
        k.loop(zero, k.dim(lhs, 2), [&](Value d) {
          k.store(k.add(k.load(lhs, {b, t, d}), k.load(rhs, {b, t, d})), result,
                  {b, t, d});
        });
      });
    });
    rewriter.replaceOp(op, out);
    return success();
  }
};

/// Normalises row (b, t) of `out` in place (after `out` holds the input, or
/// input + residual).
static void normaliseRow(KernelBuilder &k, Value out, Value weight, Value bias,
                         double epsilon, Value b, Value t) {
  Value zero = k.index(0);
  Value width = k.dim(out, 2);
  Value widthF = k.builder().create<arith::UIToFPOp>(
      k.location(), k.builder().getF32Type(),
      k.builder().create<arith::IndexCastUIOp>(
          k.location(), k.builder().getI64Type(), width));
  Value sum = k.reduce(zero, width, {k.f32(0.0)}, [&](Value d, ValueRange acc) {
    return SmallVector<Value>{k.add(acc[0], k.load(out, {b, t, d}))};
  })[0];
  Value mean = k.div(sum, widthF);
  Value sq = k.reduce(zero, width, {k.f32(0.0)}, [&](Value d, ValueRange acc) {
    Value c = k.sub(k.load(out, {b, t, d}), mean);
    return SmallVector<Value>{k.add(acc[0], k.mul(c, c))};
  })[0];
  Value var = k.div(sq, widthF);
  Value rstd = k.div(k.f32(1.0), k.sqrt(k.add(var, k.f32(epsilon))));
  k.loop(zero, width, [&](Value d) {
    Value c = k.mul(k.sub(k.load(out, {b, t, d}), mean), rstd);
    k.store(k.add(k.mul(c, k.load(weight, {d})), k.load(bias, {d})), out,
            {b, t, d});
  });
}

/// Layer norm of `input` (+ `residual` when given) into `out`, row by row.
static void buildLayerNorm(ConversionPatternRewriter &rewriter, Operation *op,
                           Value input, Value residual, Value weight,
                           Value bias, double eps, Value out) {
  SmallVector<Value> args{input};
  if (residual)
    args.push_back(residual);
  args.append({weight, bias, out});
  // The epsilon is baked into the kernel: make it part of the name.
  std::string base = residual ? "add_layer_norm" : "layer_norm";
  base += "_eps" + std::to_string(eps);
  callKernel(rewriter, op, base, args, [&](KernelBuilder &k, ValueRange a) {
    Value in = a[0];
    Value res = residual ? a[1] : Value();
    ValueRange rest = a.drop_front(residual ? 2 : 1);
    Value w = rest[0], beta = rest[1], result = rest[2];
    Value zero = k.index(0);
    k.forEachRow(in, [&](Value b, Value t) {
      k.loop(zero, k.dim(in, 2), [&](Value d) {
        Value v = k.load(in, {b, t, d});
        if (res)
          v = k.add(v, k.load(res, {b, t, d}));
        k.store(v, result, {b, t, d});
      });
      normaliseRow(k, result, w, beta, eps, b, t);
    });
  });
}

struct LayerNormLowering : public TfmLowering<LayerNormOp> {
  using TfmLowering::TfmLowering;
  LogicalResult
  matchAndRewrite(LayerNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder caller(rewriter, op.getLoc());
    Value out = allocRows(caller, resultType(op), adaptor.getInput());
    buildLayerNorm(rewriter, op, adaptor.getInput(), Value(),
                   adaptor.getWeight(), adaptor.getBias(),
                   op.getEpsilon().convertToDouble(), out);
    rewriter.replaceOp(op, out);
    return success();
  }
};

struct AddLayerNormLowering : public TfmLowering<AddLayerNormOp> {
  using TfmLowering::TfmLowering;
  LogicalResult
  matchAndRewrite(AddLayerNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder caller(rewriter, op.getLoc());
    Value out = allocRows(caller, resultType(op), adaptor.getInput());
    buildLayerNorm(rewriter, op, adaptor.getInput(), adaptor.getResidual(),
                   adaptor.getWeight(), adaptor.getBias(),
                   op.getEpsilon().convertToDouble(), out);
    rewriter.replaceOp(op, out);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

struct AttentionLowering : public TfmLowering<AttentionOp> {
  using TfmLowering::TfmLowering;
  LogicalResult
  matchAndRewrite(AttentionOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder caller(rewriter, op.getLoc());
    Value out = allocRows(caller, resultType(op), adaptor.getQuery());
    int64_t dModel = resultType(op).getDimSize(2);
    int64_t heads = op.getNumHeads();
    float scaleValue = op.getScale().convertToFloat();
    MaskKind mask = op.getMaskKind();
    Value zero = caller.index(0);
    // Every variant takes the same arguments; absent bounds are passed as
    // values that never bind (the key count, offset 0).
    Value keyCount = caller.dim(adaptor.getKey(), 1);
    Value kvLength = adaptor.getKvLength() ? adaptor.getKvLength() : keyCount;
    Value queryOffset =
        adaptor.getQueryOffset() ? adaptor.getQueryOffset() : zero;
    bool hasLengths = static_cast<bool>(adaptor.getKeyLengths());
    bool hasRows = static_cast<bool>(adaptor.getKeyRows());
    SmallVector<Value> args{adaptor.getQuery(), adaptor.getKey(),
                            adaptor.getValue()};
    if (hasLengths)
      args.push_back(adaptor.getKeyLengths());
    if (hasRows)
      args.push_back(adaptor.getKeyRows());
    args.append({queryOffset, kvLength, out});
    std::string base = ("attention_" + stringifyMaskKind(mask)).str() + "_h" +
                       std::to_string(heads) + (hasRows ? "_rows" : "");
    callKernel(rewriter, op, base, args, [&](KernelBuilder &k, ValueRange a) {
      Value q = a[0], key = a[1], value = a[2];
      Value lengths = hasLengths ? a[3] : Value();
      Value rows = hasRows ? a[hasLengths ? 4 : 3] : Value();
      ValueRange rest = a.drop_front(3 + hasLengths + hasRows);
      Value offset = rest[0], kvLimit = rest[1], result = rest[2];
      Operands in{q, key, value, lengths, rows, offset, kvLimit, result};
      bool causal = mask == MaskKind::causal;
      if ((dModel / heads) % kLanes == 0)
        emitVectorAttention(k, in, dModel, heads, scaleValue, causal);
      else
        emitAttention(k, in, dModel, heads, scaleValue, causal);
    });
    rewriter.replaceOp(op, out);
    return success();
  }

  /// One loop nest per (row, head, query) with the visible keys as a loop
  /// bound and an online softmax over blocks of kKeyBlock keys: per block,
  /// the scaled dot products go to a scratch row of kKeyBlock floats (never
  /// a [batch, heads, q, k] buffer), the running maximum m and sum l and the
  /// partial weighted sum in `out` are rescaled once, and the block's
  /// exponentials and value updates are vectorisable loops.
  static constexpr int64_t kKeyBlock = 16;
  /// Floats per vector register in the explicit-SIMD variant (AVX2).
  static constexpr int64_t kLanes = 8;
  /// Keys whose dot products are computed together there.
  static constexpr int64_t kKeyGroup = 4;

  /// The kernel's arguments; `lengths` and `rows` may be null.
  struct Operands {
    Value q, key, value, lengths, rows, queryOffset, kvLimit, out;
  };

  /// The row of keys/values query row `b` reads: `rows[b]` clamped to the
  /// key rows there are, or `b` itself.
  static Value keyRow(KernelBuilder &k, const Operands &in, Value b) {
    if (!in.rows)
      return b;
    Value last = k.addIndex(k.dim(in.key, 0), k.index(-1));
    return k.clampedIndex(k.load(in.rows, {b}), k.index(0), last);
  }

  /// The same algorithm with explicit vectors, for head sizes that are a
  /// multiple of kLanes. Left to the loop vectoriser, a dot product over
  /// one head is a single chain of dependent FMAs per key and the weighted
  /// sum of values goes through memory for every key; here the query of the
  /// head stays in registers, kKeyGroup keys are scored at once (independent
  /// chains), and the weighted sum is a set of register accumulators
  /// carried through the key loop and stored once at the end.
  static void emitVectorAttention(KernelBuilder &k, const Operands &in,
                                  int64_t dModel, int64_t heads,
                                  float scaleValue, bool causal) {
    Value q = in.q, key = in.key, value = in.value, lengths = in.lengths,
          queryOffset = in.queryOffset, kvLimit = in.kvLimit, out = in.out;
    OpBuilder &ob = k.builder();
    int64_t chunks = dModel / heads / kLanes;
    Value zero = k.index(0);
    Value block = k.index(kKeyBlock);
    Value scale = k.f32(scaleValue);
    Value keyCount = k.minIndex(k.dim(key, 1), kvLimit);
    Value lowest = k.f32(-std::numeric_limits<float>::max());
    Value zeros = k.splat(k.f32(0.0), kLanes);
    Value scores = ob.create<memref::AllocaOp>(
        k.location(), MemRefType::get({kKeyBlock}, ob.getF32Type()),
        ob.getI64IntegerAttr(64));
    k.loop(zero, k.dim(q, 0), [&](Value b) {
      Value kb = keyRow(k, in, b);
      Value rowKeys = keyCount;
      if (lengths)
        rowKeys = k.clampedIndex(k.load(lengths, {b}), zero, keyCount);
      k.loop(zero, k.index(heads), [&](Value h) {
        Value base = k.mulIndex(h, k.index(dModel / heads));
        auto column = [&](int64_t c) {
          return k.addIndex(base, k.index(c * kLanes));
        };
        k.loop(zero, k.dim(q, 1), [&](Value t) {
          Value visible = rowKeys;
          if (causal)
            visible = k.minIndex(
                visible, k.addIndex(k.addIndex(queryOffset, t), k.index(1)));
          SmallVector<Value> query;
          for (int64_t c = 0; c < chunks; ++c)
            query.push_back(k.vload(q, {b, t, column(c)}, kLanes));
          // Scores of keys first..first+count-1 into scores[j0..].
          auto scoreKeys = [&](Value first, Value j0, int64_t count) {
            SmallVector<Value> acc(count, zeros);
            for (int64_t c = 0; c < chunks; ++c)
              for (int64_t i = 0; i < count; ++i) {
                Value kj = k.addIndex(k.addIndex(first, j0), k.index(i));
                acc[i] = k.fma(query[c], k.vload(key, {kb, kj, column(c)}, kLanes),
                               acc[i]);
              }
            for (int64_t i = 0; i < count; ++i)
              k.store(k.mul(k.sumElements(acc[i]), scale), scores,
                      {k.addIndex(j0, k.index(i))});
          };
          auto blockStep = [&](Value first, ValueRange carried) {
            Value m = carried[0], l = carried[1];
            Value n = k.minIndex(
                block, k.addIndex(visible, k.mulIndex(first, k.index(-1))));
            // n rounded down to whole groups.
            Value grouped = k.mulIndex(
                ob.create<arith::DivUIOp>(k.location(), n,
                                          k.index(kKeyGroup)),
                k.index(kKeyGroup));
            k.loop(
                zero, grouped,
                [&](Value j) { scoreKeys(first, j, kKeyGroup); },
                k.index(kKeyGroup));
            k.loop(grouped, n, [&](Value j) { scoreKeys(first, j, 1); });
            Value blockMax = k.reduce(zero, n, {lowest},
                                      [&](Value j, ValueRange bm) {
                                        return SmallVector<Value>{
                                            k.max(bm[0], k.load(scores, {j}))};
                                      })[0];
            Value newMax = k.max(m, blockMax);
            Value rescale = k.exp(k.sub(m, newMax));
            Value blockSum = k.reduce(
                zero, n, {k.f32(0.0)}, [&](Value j, ValueRange acc) {
                  Value w = k.exp(k.sub(k.load(scores, {j}), newMax));
                  k.store(w, scores, {j});
                  return SmallVector<Value>{k.add(acc[0], w)};
                })[0];
            Value rescaleVector = k.splat(rescale, kLanes);
            SmallVector<Value> sums;
            for (int64_t c = 0; c < chunks; ++c)
              sums.push_back(k.mul(carried[2 + c], rescaleVector));
            sums = k.reduce(zero, n, sums, [&](Value j, ValueRange acc) {
              Value w = k.splat(k.load(scores, {j}), kLanes);
              Value kj = k.addIndex(first, j);
              SmallVector<Value> next;
              for (int64_t c = 0; c < chunks; ++c)
                next.push_back(
                    k.fma(w, k.vload(value, {kb, kj, column(c)}, kLanes), acc[c]));
              return next;
            });
            SmallVector<Value> result{newMax,
                                      k.add(k.mul(l, rescale), blockSum)};
            result.append(sums);
            return result;
          };
          SmallVector<Value> init{lowest, k.f32(0.0)};
          init.append(chunks, zeros);
          SmallVector<Value> final =
              k.reduce(zero, visible, init, blockStep, block);
          Value sum = final[1];
          // A query with no visible key keeps zeros.
          Value any = ob.create<arith::CmpFOp>(
              k.location(), arith::CmpFPredicate::OGT, sum, k.f32(0.0));
          Value inv = k.splat(
              ob.create<arith::SelectOp>(k.location(), any,
                                         k.div(k.f32(1.0), sum), k.f32(0.0)),
              kLanes);
          for (int64_t c = 0; c < chunks; ++c)
            k.vstore(k.mul(final[2 + c], inv), out, {b, t, column(c)});
        });
      });
    });
  }

  static void emitAttention(KernelBuilder &k, const Operands &in,
                            int64_t dModel, int64_t heads, float scaleValue,
                            bool causal) {
    Value q = in.q, key = in.key, value = in.value, lengths = in.lengths,
          queryOffset = in.queryOffset, kvLimit = in.kvLimit, out = in.out;
    OpBuilder &ob = k.builder();
    Value zero = k.index(0);
    Value headDim = k.index(dModel / heads);
    Value block = k.index(kKeyBlock);
    Value scale = k.f32(scaleValue);
    Value keyCount = k.minIndex(k.dim(key, 1), kvLimit);
    Value lowest = k.f32(-std::numeric_limits<float>::max());
    Value scores = ob.create<memref::AllocaOp>(
        k.location(), MemRefType::get({kKeyBlock}, ob.getF32Type()),
        ob.getI64IntegerAttr(64));
    k.loop(zero, k.dim(q, 0), [&](Value b) {
      Value kb = keyRow(k, in, b);
      Value rowKeys = keyCount;
      if (lengths)
        rowKeys = k.clampedIndex(k.load(lengths, {b}), zero, keyCount);
      k.loop(zero, k.index(heads), [&](Value h) {
        Value base = k.mulIndex(h, headDim);
        k.loop(zero, k.dim(q, 1), [&](Value t) {
          Value visible = rowKeys;
          if (causal)
            visible = k.minIndex(
                visible, k.addIndex(k.addIndex(queryOffset, t), k.index(1)));
          k.loop(zero, headDim, [&](Value d) {
            k.store(k.f32(0.0), out, {b, t, k.addIndex(base, d)});
          });
          auto blockStep = [&](Value first, ValueRange ml) {
            Value m = ml[0], l = ml[1];
            Value n = k.minIndex(
                block, k.addIndex(visible, k.mulIndex(first, k.index(-1))));
            Value blockMax = k.reduce(
                zero, n, {lowest}, [&](Value j, ValueRange bm) {
                  Value kj = k.addIndex(first, j);
                  Value dot =
                      k.reduce(zero, headDim, {k.f32(0.0)},
                               [&](Value d, ValueRange acc) {
                                 Value c = k.addIndex(base, d);
                                 Value p = k.mul(k.load(q, {b, t, c}),
                                                 k.loadWide(key, {kb, kj, c}));
                                 return SmallVector<Value>{k.add(acc[0], p)};
                               })[0];
                  Value s = k.mul(dot, scale);
                  k.store(s, scores, {j});
                  return SmallVector<Value>{k.max(bm[0], s)};
                })[0];
            Value newMax = k.max(m, blockMax);
            Value rescale = k.exp(k.sub(m, newMax));
            Value blockSum = k.reduce(
                zero, n, {k.f32(0.0)}, [&](Value j, ValueRange acc) {
                  Value w = k.exp(k.sub(k.load(scores, {j}), newMax));
                  k.store(w, scores, {j});
                  return SmallVector<Value>{k.add(acc[0], w)};
                })[0];
            k.loop(zero, headDim, [&](Value d) {
              Value c = k.addIndex(base, d);
              k.store(k.mul(k.load(out, {b, t, c}), rescale), out, {b, t, c});
            });
            k.loop(zero, n, [&](Value j) {
              Value w = k.load(scores, {j});
              Value kj = k.addIndex(first, j);
              k.loop(zero, headDim, [&](Value d) {
                Value c = k.addIndex(base, d);
                k.store(k.add(k.load(out, {b, t, c}),
                              k.mul(w, k.loadWide(value, {kb, kj, c}))),
                        out, {b, t, c});
              });
            });
            return SmallVector<Value>{newMax,
                                      k.add(k.mul(l, rescale), blockSum)};
          };
          Value sum = k.reduce(zero, visible, {lowest, k.f32(0.0)}, blockStep,
                               block)[1];
          // A query with no visible key keeps zeros.
          Value any = ob.create<arith::CmpFOp>(
              k.location(), arith::CmpFPredicate::OGT, sum, k.f32(0.0));
          Value inv = ob.create<arith::SelectOp>(
              k.location(), any, k.div(k.f32(1.0), sum), k.f32(0.0));
          k.loop(zero, headDim, [&](Value d) {
            Value c = k.addIndex(base, d);
            k.store(k.mul(k.load(out, {b, t, c}), inv), out, {b, t, c});
          });
        });
      });
    });
  }
};

struct CacheWriteLowering : public OpConversionPattern<CacheWriteOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(CacheWriteOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    SmallVector<Value> args{adaptor.getValue(), adaptor.getCache(),
                            adaptor.getPosition()};
    callKernel(
        rewriter, op, "cache_write", args, [&](KernelBuilder &k, ValueRange a) {
          Value v = a[0], cache = a[1], position = a[2];
          Value zero = k.index(0);
          // Steps beyond the capacity are dropped (the runtime sizes
          // the cache for its maximum length).
          Value room =
              k.maxIndex(zero, k.addIndex(k.dim(cache, 1),
                                          k.mulIndex(position, k.index(-1))));
          Value steps = k.minIndex(k.dim(v, 1), room);
          k.loop(zero, k.dim(v, 0), [&](Value b) {
            k.loop(zero, steps, [&](Value t) {
              Value pos = k.addIndex(position, t);
              k.loop(zero, k.dim(v, 2), [&](Value d) {
                k.storeNarrowing(k.load(v, {b, t, d}), cache, {b, pos, d});
              });
            });
          });
        });
    rewriter.eraseOp(op);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Functions in destination-passing style
//===----------------------------------------------------------------------===//

/// Tensor arguments become memrefs; each result becomes a trailing memref
/// argument (carrying the result's attributes) and the function returns
/// nothing.
struct FuncToDestinationStyle : public OpConversionPattern<func::FuncOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(func::FuncOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (op.isExternal())
      return failure();
    FunctionType type = op.getFunctionType();
    const TypeConverter &converter = *getTypeConverter();
    TypeConverter::SignatureConversion signature(type.getNumInputs());
    for (auto [i, t] : llvm::enumerate(type.getInputs()))
      signature.addInputs(i, converter.convertType(t));
    SmallVector<Type> outputs;
    for (Type t : type.getResults())
      outputs.push_back(converter.convertType(t));
    signature.addInputs(outputs);

    SmallVector<Attribute> argAttrs;
    for (unsigned i = 0; i < type.getNumInputs(); ++i)
      argAttrs.push_back(op.getArgAttrDict(i) ? Attribute(op.getArgAttrDict(i))
                                              : rewriter.getDictionaryAttr({}));
    for (unsigned i = 0; i < type.getNumResults(); ++i)
      argAttrs.push_back(op.getResultAttrDict(i)
                             ? Attribute(op.getResultAttrDict(i))
                             : rewriter.getDictionaryAttr({}));

    rewriter.modifyOpInPlace(op, [&] {
      // Entry functions are straight-line sequences of kernel calls: nothing
      // to optimise, and code generation for them is the slowest part of
      // the JIT when optimised.
      op->setAttr("passthrough",
                  rewriter.getArrayAttr({rewriter.getStringAttr("noinline"),
                                         rewriter.getStringAttr("optnone")}));
      op.setType(rewriter.getFunctionType(signature.getConvertedTypes(), {}));
      op.setArgAttrsAttr(rewriter.getArrayAttr(argAttrs));
      op.removeResAttrsAttr();
    });
    rewriter.applySignatureConversion(&op.getBody().front(), signature,
                                      &converter);
    return success();
  }
};

/// `return %a, %b` copies each value into its destination argument.
struct ReturnToCopies : public OpConversionPattern<func::ReturnOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(func::ReturnOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto func = op->getParentOfType<func::FuncOp>();
    Block &entry = func.getBody().front();
    auto destinations =
        entry.getArguments().take_back(adaptor.getOperands().size());
    for (auto [value, dest] : llvm::zip(adaptor.getOperands(), destinations))
      rewriter.create<memref::CopyOp>(op.getLoc(), value, dest);
    rewriter.replaceOpWithNewOp<func::ReturnOp>(op);
    return success();
  }
};

struct DimLowering : public OpConversionPattern<tensor::DimOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(tensor::DimOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<memref::DimOp>(op, adaptor.getSource(),
                                               adaptor.getIndex());
    return success();
  }
};

class TensorToMemRefConverter : public TypeConverter {
public:
  TensorToMemRefConverter() {
    addConversion([](Type t) { return t; });
    addConversion([](RankedTensorType t) -> Type {
      return MemRefType::get(t.getShape(), t.getElementType());
    });
  }
};

/// Frees every buffer allocated by the lowering right after its last use in
/// the block that allocated it (uses through memref.cast views count), so a
/// function's peak memory is its live intermediate buffers, not all of them.
/// Lowered tfm ops sit directly in function bodies, so every use lies in
/// (or is nested in an op of) that block.
static void freeBuffers(ModuleOp module) {
  module.walk([](memref::AllocOp alloc) {
    Block *block = alloc->getBlock();
    Operation *last = alloc;
    SmallVector<Value> views{alloc.getResult()};
    while (!views.empty()) {
      Value v = views.pop_back_val();
      for (Operation *user : v.getUsers()) {
        if (auto cast = dyn_cast<memref::CastOp>(user))
          views.push_back(cast.getResult());
        Operation *inBlock = block->findAncestorOpInBlock(*user);
        if (inBlock && last->isBeforeInBlock(inBlock))
          last = inBlock;
      }
    }
    OpBuilder b(alloc->getContext());
    if (last->hasTrait<OpTrait::IsTerminator>())
      b.setInsertionPoint(last);
    else
      b.setInsertionPointAfter(last);
    b.create<memref::DeallocOp>(alloc.getLoc(), alloc.getResult());
  });
}

struct TfmToLoopsPass : public tfm::impl::TfmToLoopsBase<TfmToLoopsPass> {
  using TfmToLoopsBase::TfmToLoopsBase;
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    TensorToMemRefConverter converter;
    RewritePatternSet patterns(ctx);
    populateTfmToLoopsPatterns(converter, patterns);
    if (useLibraryCalls)
      populateTfmToLibraryCallPatterns(converter, patterns, libraryMinRows);

    ConversionTarget target(*ctx);
    target.addLegalDialect<arith::ArithDialect, math::MathDialect,
                           memref::MemRefDialect, scf::SCFDialect,
                           vector::VectorDialect>();
    target.addIllegalDialect<TfmDialect>();
    target.addIllegalOp<tensor::DimOp>();
    target.addDynamicallyLegalOp<func::FuncOp>([&](func::FuncOp f) {
      return f.getFunctionType().getNumResults() == 0 &&
             converter.isSignatureLegal(f.getFunctionType());
    });
    target.addDynamicallyLegalOp<func::ReturnOp>(
        [](func::ReturnOp r) { return r.getNumOperands() == 0; });
    target.addLegalOp<ModuleOp, func::CallOp>();
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      return signalPassFailure();
    freeBuffers(getOperation());
  }
};

} // namespace

void mlir::tfm::populateTfmToLoopsPatterns(TypeConverter &converter,
                                           RewritePatternSet &patterns) {
  patterns.add<EmbeddingLowering, PositionalEncodingLowering, LinearLowering,
               AddLowering, SliceLowering, LayerNormLowering,
               AddLayerNormLowering, AttentionLowering, CacheWriteLowering,
               NarrowLowering,
               FuncToDestinationStyle, ReturnToCopies, DimLowering>(
      converter, patterns.getContext());
}

void mlir::tfm::populateTfmToLibraryCallPatterns(TypeConverter &converter,
                                                 RewritePatternSet &patterns,
                                                 int64_t minRows) {
  patterns.add<LinearToLibraryCall>(converter, patterns.getContext(), minRows);
}

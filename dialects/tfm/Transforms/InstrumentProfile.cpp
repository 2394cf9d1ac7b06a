//===- InstrumentProfile.cpp - profiler calls around every tfm op ---------===//
//
// The profiled variant of a model: each tfm op between an enter and an exit
// call of the runtime's profiler, and a table (module attribute
// `tfm.profile`) that says what each id is and what one call of it costs.
//
//===----------------------------------------------------------------------===//
#include "dialects/tfm/IR/TfmOps.h"
#include "dialects/tfm/Transforms/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include "llvm/ADT/SmallString.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_TFMINSTRUMENTPROFILE
#include "dialects/tfm/Transforms/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

constexpr llvm::StringLiteral kEnter = "tfm_rt_profile_enter";
constexpr llvm::StringLiteral kExit = "tfm_rt_profile_exit";

/// Cost of one call as coefficients of its dynamic extents (see Passes.td).
struct Cost {
  int64_t flopRows = 0, flopRowKeys = 0;
  int64_t bytesCall = 0, bytesRows = 0, bytesRowKeys = 0, bytesBatchKeys = 0;
};

int64_t lastDim(Value v) {
  auto shaped = cast<ShapedType>(v.getType());
  return shaped.getShape().back();
}

int64_t elementBytes(Value v) {
  return (cast<ShapedType>(v.getType()).getElementTypeBitWidth() + 7) / 8;
}

/// FLOP and bytes moved per call, counted as a roofline counts them: the
/// arithmetic of the op's definition and each operand read and result
/// written once (attention reads a batch row's keys and values once for
/// all its queries; masked keys are counted: the mask bounds them by
/// kv_length, not by padding).
Cost costOf(Operation *op) {
  Cost c;
  constexpr int64_t f32 = 4;
  if (auto linear = dyn_cast<LinearOp>(op)) {
    Value w = linear.getWeight();
    auto shape = cast<ShapedType>(w.getType()).getShape();
    int64_t n = shape[0], k = shape[1];
    c.flopRows = 2 * n * k;
    c.bytesCall = n * k * elementBytes(w) + n * f32 +
                  (linear.getScale() ? n * f32 : 0);
    c.bytesRows = (k + n) * f32;
  } else if (isa<LinearArgmaxOp, LinearTopkOp>(op)) {
    auto argmax = dyn_cast<LinearArgmaxOp>(op);
    Value w = argmax ? argmax.getWeight() : cast<LinearTopkOp>(op).getWeight();
    auto shape = cast<ShapedType>(w.getType()).getShape();
    int64_t n = shape[0], k = shape[1];
    // The logits are made and scanned in cache: read x, write one id
    // (argmax) or the candidates (2K of them for beam K; counted as 8
    // entries per row).
    c.flopRows = 2 * n * k;
    c.bytesCall = n * k * elementBytes(w) + n * f32;
    c.bytesRows =
        k * f32 + (argmax ? sizeof(int32_t) : 8 * (f32 + sizeof(int32_t)));
  } else if (auto attention = dyn_cast<AttentionOp>(op)) {
    int64_t d = lastDim(attention.getQuery());
    // q·k and p·v: two multiply-adds per feature and key.
    c.flopRowKeys = 4 * d;
    c.bytesRows = 2 * d * f32;
    c.bytesBatchKeys = d * (elementBytes(attention.getKey()) +
                            elementBytes(attention.getValue()));
  } else if (auto embedding = dyn_cast<EmbeddingOp>(op)) {
    int64_t d = lastDim(embedding.getResult());
    c.flopRows = d;
    c.bytesRows = sizeof(int32_t) + 2 * d * f32;
  } else if (auto positions = dyn_cast<PositionalEncodingOp>(op)) {
    int64_t d = lastDim(positions.getResult());
    c.flopRows = d;
    c.bytesRows = 3 * d * f32;
  } else if (auto add = dyn_cast<AddOp>(op)) {
    int64_t d = lastDim(add.getResult());
    c.flopRows = d;
    c.bytesRows = 3 * d * f32;
  } else if (auto norm = dyn_cast<LayerNormOp>(op)) {
    int64_t d = lastDim(norm.getResult());
    // Mean, variance, normalise, scale and shift.
    c.flopRows = 7 * d;
    c.bytesCall = 2 * d * f32;
    c.bytesRows = 2 * d * f32;
  } else if (auto norm = dyn_cast<AddLayerNormOp>(op)) {
    int64_t d = lastDim(norm.getResult());
    c.flopRows = 8 * d;
    c.bytesCall = 2 * d * f32;
    c.bytesRows = 3 * d * f32;
  } else if (auto slice = dyn_cast<SliceOp>(op)) {
    c.bytesRows = 2 * lastDim(slice.getResult()) * f32;
  } else if (auto narrow = dyn_cast<NarrowOp>(op)) {
    c.bytesRows = lastDim(narrow.getResult()) * (f32 + 2);
  } else if (auto write = dyn_cast<CacheWriteOp>(op)) {
    c.bytesRows = lastDim(write.getValue()) * (f32 + elementBytes(write.getCache()));
  }
  // Anything else (multi_head_attention, which the fused stage no longer
  // has): time only.
  return c;
}

/// The arithmetic an op's FLOP run in, which sets its roofline's peak
/// (docs/profile.md): "int8" and "bfloat16" for linear layers with such
/// weights, "float32" for everything else (float16 weights are widened to
/// float32 before they multiply).
llvm::StringRef arithmeticOf(Operation *op) {
  Value w;
  if (auto linear = dyn_cast<LinearOp>(op))
    w = linear.getWeight();
  else if (auto argmax = dyn_cast<LinearArgmaxOp>(op))
    w = argmax.getWeight();
  else if (auto topk = dyn_cast<LinearTopkOp>(op))
    w = topk.getWeight();
  if (!w)
    return "float32";
  Type element = cast<ShapedType>(w.getType()).getElementType();
  if (element.isInteger(8))
    return "int8";
  if (element.isBF16())
    return "bfloat16";
  return "float32";
}

/// What `--emit=graph` says of an op, on one line.
std::string detailOf(Operation *op) {
  std::string out;
  llvm::raw_string_ostream os(out);
  if (auto linear = dyn_cast<LinearOp>(op)) {
    auto w = cast<ShapedType>(linear.getWeight().getType());
    int64_t parts = mergedProjectionCount(linear);
    if (parts > 1)
      os << "merged projections (" << parts << "), ";
    os << stringifyActivation(linear.getActivation()) << ", weight "
       << w.getShape()[0] << "x" << w.getShape()[1] << " ";
    w.getElementType().print(os);
  } else if (auto argmax = dyn_cast<LinearArgmaxOp>(op)) {
    auto w = cast<ShapedType>(argmax.getWeight().getType());
    os << "greedy choice, weight " << w.getShape()[0] << "x"
       << w.getShape()[1] << " ";
    w.getElementType().print(os);
  } else if (auto topk = dyn_cast<LinearTopkOp>(op)) {
    auto w = cast<ShapedType>(topk.getWeight().getType());
    os << "beam candidates, weight " << w.getShape()[0] << "x"
       << w.getShape()[1] << " ";
    w.getElementType().print(os);
  } else if (auto attention = dyn_cast<AttentionOp>(op)) {
    os << stringifyMaskKind(attention.getMaskKind()) << " mask, "
       << attention.getNumHeads() << " heads"
       << (isa<MemRefType>(attention.getKey().getType()) ? ", KV cache" : "");
  } else if (op->getNumResults() == 1) {
    os << "d " << lastDim(op->getResult(0));
  }
  return out;
}

/// `v`'s extent `i` as an i64.
Value extent(OpBuilder &b, Location loc, Value v, int64_t i) {
  Value d = isa<MemRefType>(v.getType())
                ? b.create<memref::DimOp>(loc, v, i).getResult()
                : b.create<tensor::DimOp>(loc, v, i).getResult();
  return b.create<arith::IndexCastOp>(loc, b.getI64Type(), d);
}

struct TfmInstrumentProfilePass
    : public tfm::impl::TfmInstrumentProfileBase<TfmInstrumentProfilePass> {
  void getDependentDialects(DialectRegistry &registry) const override {
    TfmInstrumentProfileBase::getDependentDialects(registry);
    registry.insert<memref::MemRefDialect>();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = module.getContext();
    OpBuilder b(ctx);
    Type i64 = b.getI64Type();

    SmallVector<func::FuncOp> functions;
    for (auto f : module.getOps<func::FuncOp>())
      if (!f.isExternal())
        functions.push_back(f);

    SmallVector<Attribute> table;
    auto record = [&](StringRef function, StringRef kind, StringRef name,
                      StringRef detail, const Cost &c,
                      StringRef arithmetic = "float32") {
      auto i = [&](int64_t v) { return b.getI64IntegerAttr(v); };
      table.push_back(b.getDictionaryAttr({
          b.getNamedAttr("function", b.getStringAttr(function)),
          b.getNamedAttr("kind", b.getStringAttr(kind)),
          b.getNamedAttr("name", b.getStringAttr(name)),
          b.getNamedAttr("detail", b.getStringAttr(detail)),
          b.getNamedAttr("arithmetic", b.getStringAttr(arithmetic)),
          b.getNamedAttr("flop_rows", i(c.flopRows)),
          b.getNamedAttr("flop_row_keys", i(c.flopRowKeys)),
          b.getNamedAttr("bytes_call", i(c.bytesCall)),
          b.getNamedAttr("bytes_rows", i(c.bytesRows)),
          b.getNamedAttr("bytes_row_keys", i(c.bytesRowKeys)),
          b.getNamedAttr("bytes_batch_keys", i(c.bytesBatchKeys)),
      }));
      return static_cast<int64_t>(table.size() - 1);
    };

    for (func::FuncOp f : functions) {
      Block &body = f.getBody().front();
      Location loc = f.getLoc();
      int64_t fid = record(f.getName(), "function", f.getName(), "", {});
      b.setInsertionPointToStart(&body);
      Value zero = b.create<arith::ConstantIntOp>(loc, 0, i64);
      Value fidValue = b.create<arith::ConstantIntOp>(loc, fid, i64);
      b.create<func::CallOp>(loc, kEnter, TypeRange{}, ValueRange{fidValue});

      SmallVector<Operation *> ops;
      for (Operation &op : body)
        if (isa<TfmDialect>(op.getDialect()))
          ops.push_back(&op);
      for (Operation *op : ops) {
        Location at = op->getLoc();
        std::string kind = op->getName().getStringRef().str();
        int64_t id = record(f.getName(), kind, modelNameOf(op), detailOf(op),
                            costOf(op), arithmeticOf(op));
        b.setInsertionPoint(op);
        Value idValue = b.create<arith::ConstantIntOp>(at, id, i64);
        b.create<func::CallOp>(at, kEnter, TypeRange{}, ValueRange{idValue});
        b.setInsertionPointAfter(op);
        // Rows: of the result, of a cache write's value, of
        // linear_topk's input ([rows, 1, d]; its results have 2K per row).
        Value rowsOf = isa<LinearTopkOp>(op) ? op->getOperand(0)
                       : op->getNumResults() == 1
                           ? Value(op->getResult(0))
                           : Value(cast<CacheWriteOp>(op).getValue());
        Value batch = extent(b, at, rowsOf, 0);
        // One entry per row (linear_argmax's tokens): rows = batch.
        Value rows =
            cast<ShapedType>(rowsOf.getType()).getRank() < 2
                ? batch
                : b.create<arith::MulIOp>(at, batch, extent(b, at, rowsOf, 1))
                      .getResult();
        Value keys = zero;
        if (auto attention = dyn_cast<AttentionOp>(op))
          keys = attention.getKvLength()
                     ? b.create<arith::IndexCastOp>(at, i64,
                                                    attention.getKvLength())
                           .getResult()
                     : extent(b, at, attention.getKey(), 1);
        b.create<func::CallOp>(at, kExit, TypeRange{},
                               ValueRange{idValue, batch, rows, keys});
      }
      Operation *terminator = body.getTerminator();
      b.setInsertionPoint(terminator);
      b.create<func::CallOp>(loc, kExit, TypeRange{},
                             ValueRange{fidValue, zero, zero, zero});
    }

    // The runtime's entry points, declared once.
    b.setInsertionPointToStart(module.getBody());
    for (auto [name, inputs] :
         {std::pair{kEnter, 1}, std::pair{kExit, 4}}) {
      if (module.lookupSymbol(name))
        continue;
      SmallVector<Type> types(inputs, i64);
      auto decl = b.create<func::FuncOp>(module.getLoc(), name,
                                         b.getFunctionType(types, {}));
      decl.setPrivate();
    }
    module->setAttr(kProfileTableAttr, b.getArrayAttr(table));
  }
};

} // namespace

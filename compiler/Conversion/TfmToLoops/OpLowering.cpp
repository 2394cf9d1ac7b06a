//===- OpLowering.cpp - kernel functions of tfm-to-loops ------------------===//
//
// Kernel functions created once per distinct signature (callKernel) and
// the buffers of op results.
//
//===----------------------------------------------------------------------===//
#include "compiler/Conversion/TfmToLoops/OpLowering.h"

using namespace mlir;
using namespace mlir::tfm;

namespace mlir::tfm::loops {

/// Allocates a [B, T, N] buffer whose batch and sequence extents are those
/// of `like`.
Value allocRows(KernelBuilder &k, MemRefType type, Value like) {
  return k.alloc(type, {k.dim(like, 0), k.dim(like, 1), Value()});
}

/// A readable, unique kernel name: the op, its attributes and the operand
/// shapes ("D" for a dynamic extent), e.g. tfm_linear_relu.DxDx64.128x64.128.
std::string kernelName(StringRef base, TypeRange types) {
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
    else if (element.isBF16())
      name += "bf16";
  }
  return name;
}

/// Calls the kernel `base` specialised for the types of `args`, creating it
/// on first use with `body` (given the kernel's arguments). Each distinct
/// kernel is compiled once however many layers use it, which keeps JIT time
/// independent of the model's depth.
void callKernel(ConversionPatternRewriter &rewriter, Operation *op,
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

} // namespace mlir::tfm::loops

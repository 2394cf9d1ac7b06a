//===- Quantize.cpp - linear weights as int8 (+ scales) or float16 --------===//
#include "dialects/tfm/IR/TfmOps.h"
#include "dialects/tfm/Transforms/Passes.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_TFMQUANTIZE
#include "dialects/tfm/Transforms/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

constexpr llvm::StringLiteral kOutputProjection = "linear.weight";

struct TfmQuantizePass : public tfm::impl::TfmQuantizeBase<TfmQuantizePass> {
  using TfmQuantizeBase::TfmQuantizeBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    MLIRContext *ctx = func.getContext();
    Type storage;
    if (computeType == "int8")
      storage = IntegerType::get(ctx, 8);
    else if (computeType == "float16")
      storage = Float16Type::get(ctx);
    else if (computeType == "bfloat16")
      storage = BFloat16Type::get(ctx);
    else {
      func.emitError() << "tfm-quantize: compute-type must be 'int8', "
                          "'float16' or 'bfloat16', got '"
                       << computeType << "'";
      return signalPassFailure();
    }
    // Arguments change type in place; collect them first.
    SmallVector<BlockArgument> weights;
    for (BlockArgument arg : func.getArguments())
      if (quantizable(func, arg))
        weights.push_back(arg);
    for (BlockArgument arg : weights)
      convert(func, arg, storage);
  }

  /// A float32 matrix argument tagged as a weight whose every use is the
  /// weight operand of a tfm.linear.
  bool quantizable(func::FuncOp func, BlockArgument arg) const {
    auto name =
        func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kWeightArgAttr);
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!name || !type || type.getRank() != 2 ||
        !type.getElementType().isF32() || arg.use_empty())
      return false;
    if (!outputProjection && name.getValue() == kOutputProjection)
      return false;
    for (OpOperand &use : arg.getUses()) {
      auto linear = dyn_cast<LinearOp>(use.getOwner());
      if (!linear || use.get() != linear.getWeight() ||
          linear.getInput() == arg || linear.getBias() == arg)
        return false;
    }
    return true;
  }

  static void convert(func::FuncOp func, BlockArgument arg, Type storage) {
    MLIRContext *ctx = func.getContext();
    auto type = cast<RankedTensorType>(arg.getType());
    StringAttr name =
        func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kWeightArgAttr);
    arg.setType(RankedTensorType::get(type.getShape(), storage));
    Value scale;
    if (storage.isInteger(8)) {
      unsigned index = func.getNumArguments();
      NamedAttribute role(StringAttr::get(ctx, kWeightScaleArgAttr), name);
      (void)func.insertArgument(
          index,
          RankedTensorType::get({type.getDimSize(0)}, Float32Type::get(ctx)),
          DictionaryAttr::get(ctx, role), arg.getLoc());
      scale = func.getArgument(index);
    }
    SmallVector<Type> inputs(func.front().getArgumentTypes());
    func.setType(FunctionType::get(ctx, inputs, func.getResultTypes()));
    if (!scale)
      return;
    SmallVector<LinearOp> users;
    for (Operation *user : arg.getUsers())
      users.push_back(cast<LinearOp>(user));
    for (LinearOp op : users) {
      OpBuilder builder(op);
      auto quantized = builder.create<LinearOp>(
          op.getLoc(), op.getResult().getType(), op.getActivation(),
          op.getInput(), op.getWeight(), op.getBias(), scale);
      op.getResult().replaceAllUsesWith(quantized.getResult());
      op.erase();
    }
  }
};

} // namespace

//===- GreedyHead.cpp - decode_greedy: a decoder step ending in the ids ---===//
#include "dialects/tfm/IR/TfmDialect.h"
#include "dialects/tfm/IR/TfmOps.h"
#include "dialects/tfm/Transforms/Passes.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_TFMGREEDYHEAD
#include "dialects/tfm/Transforms/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// The output projection `step` returns, if it can end in an argmax.
LinearOp returnedProjection(func::FuncOp step) {
  if (step.isExternal() || step.getNumResults() != 1)
    return {};
  auto ret = cast<func::ReturnOp>(step.getBody().front().getTerminator());
  auto linear = ret.getOperand(0).getDefiningOp<LinearOp>();
  if (!linear || linear.getActivation() != Activation::none ||
      linear.getScale() || !linear->hasOneUse())
    return {};
  return linear;
}

struct TfmGreedyHeadPass
    : public tfm::impl::TfmGreedyHeadBase<TfmGreedyHeadPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto step = module.lookupSymbol<func::FuncOp>("decode_step");
    if (!step || module.lookupSymbol("decode_greedy") ||
        !returnedProjection(step))
      return;
    OpBuilder b(module.getContext());
    b.setInsertionPointAfter(step);
    auto greedy = cast<func::FuncOp>(b.clone(*step));
    greedy.setSymName("decode_greedy");
    LinearOp projection = returnedProjection(greedy);
    Block &entry = greedy.getBody().front();
    Location loc = projection.getLoc();

    // The allowed ids travel as inputs: the same compiled function serves
    // every model's special tokens and minimum length.
    auto ids = RankedTensorType::get({ShapedType::kDynamic}, b.getI32Type());
    unsigned first = greedy.getNumArguments();
    auto attrs = [&](StringRef name) {
      return b.getDictionaryAttr(
          b.getNamedAttr(kInputArgAttr, b.getStringAttr(name)));
    };
    greedy.insertArguments({first, first, first},
                           {ids, b.getIndexType(), ids},
                           {attrs("never_ids"), attrs("eos_id"),
                            attrs("allow_eos")},
                           {loc, loc, loc});
    Value never = greedy.getArgument(first);
    Value eos = greedy.getArgument(first + 1);
    Value allow = greedy.getArgument(first + 2);

    b.setInsertionPoint(projection);
    auto best = b.create<LinearArgmaxOp>(loc, ids, projection.getInput(),
                                         projection.getWeight(),
                                         projection.getBias(), never, eos,
                                         allow);
    auto ret = cast<func::ReturnOp>(entry.getTerminator());
    ret->setOperand(0, best);
    projection.erase();
    greedy.setType(b.getFunctionType(greedy.getArgumentTypes(), {ids}));
    greedy.setResultAttr(0, kOutputResultAttr, b.getStringAttr("best_tokens"));
  }
};

} // namespace

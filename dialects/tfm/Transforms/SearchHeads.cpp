//===- SearchHeads.cpp - decoder steps that end in the search's choices ---===//
//
// tfm-greedy-head adds decode_greedy (the step ending in each row's chosen
// id), tfm-beam-head adds decode_beam (the step ending in each row's best
// candidates and their log-probabilities): copies of decode_step whose
// output projection is fused with what the search reads from it.
//
//===----------------------------------------------------------------------===//
#include "dialects/tfm/IR/TfmDialect.h"
#include "dialects/tfm/IR/TfmOps.h"
#include "dialects/tfm/Transforms/Passes.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_TFMGREEDYHEAD
#define GEN_PASS_DEF_TFMBEAMHEAD
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

/// A copy of `step` named `name`, with inputs named `inputNames` (types
/// `inputTypes`) appended; returns it and its output projection.
std::pair<func::FuncOp, LinearOp>
cloneStep(OpBuilder &b, func::FuncOp step, StringRef name,
          ArrayRef<Type> inputTypes, ArrayRef<StringRef> inputNames) {
  b.setInsertionPointAfter(step);
  auto head = cast<func::FuncOp>(b.clone(*step));
  head.setSymName(name);
  LinearOp projection = returnedProjection(head);
  Location loc = projection.getLoc();
  // What decides the choices travels as inputs: the same compiled function
  // serves every model's special tokens, minimum length and beam size.
  unsigned first = head.getNumArguments();
  SmallVector<unsigned> at(inputTypes.size(), first);
  SmallVector<DictionaryAttr> attrs;
  for (StringRef n : inputNames)
    attrs.push_back(b.getDictionaryAttr(
        b.getNamedAttr(kInputArgAttr, b.getStringAttr(n))));
  SmallVector<Location> locs(inputTypes.size(), loc);
  head.insertArguments(at, inputTypes, attrs, locs);
  b.setInsertionPoint(projection);
  return {head, projection};
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
    auto ids = RankedTensorType::get({ShapedType::kDynamic}, b.getI32Type());
    auto [greedy, projection] =
        cloneStep(b, step, "decode_greedy", {ids, b.getIndexType(), ids},
                  {"never_ids", "eos_id", "allow_eos"});
    unsigned first = greedy.getNumArguments() - 3;
    auto best = b.create<LinearArgmaxOp>(
        projection.getLoc(), ids, projection.getInput(),
        projection.getWeight(), projection.getBias(),
        greedy.getArgument(first), greedy.getArgument(first + 1),
        greedy.getArgument(first + 2));
    auto ret = cast<func::ReturnOp>(greedy.getBody().front().getTerminator());
    ret->setOperand(0, best);
    projection.erase();
    greedy.setType(b.getFunctionType(greedy.getArgumentTypes(), {ids}));
    greedy.setResultAttr(0, kOutputResultAttr, b.getStringAttr("best_tokens"));
  }
};

struct TfmBeamHeadPass : public tfm::impl::TfmBeamHeadBase<TfmBeamHeadPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto step = module.lookupSymbol<func::FuncOp>("decode_step");
    if (!step || module.lookupSymbol("decode_beam") ||
        !returnedProjection(step))
      return;
    OpBuilder b(module.getContext());
    auto ids = RankedTensorType::get({ShapedType::kDynamic}, b.getI32Type());
    auto [beam, projection] = cloneStep(
        b, step, "decode_beam",
        {ids, b.getIndexType(), ids, b.getIndexType()},
        {"never_ids", "eos_id", "allow_eos", "candidates"});
    unsigned first = beam.getNumArguments() - 4;
    int64_t dyn = ShapedType::kDynamic;
    auto valuesType = RankedTensorType::get({dyn, dyn}, b.getF32Type());
    auto idsType = RankedTensorType::get({dyn, dyn}, b.getI32Type());
    auto top = b.create<LinearTopkOp>(
        projection.getLoc(), valuesType, idsType, projection.getInput(),
        projection.getWeight(), projection.getBias(), beam.getArgument(first),
        beam.getArgument(first + 1), beam.getArgument(first + 2),
        beam.getArgument(first + 3));
    auto ret = cast<func::ReturnOp>(beam.getBody().front().getTerminator());
    ret->setOperands(top.getResults());
    projection.erase();
    beam.setType(
        b.getFunctionType(beam.getArgumentTypes(), {valuesType, idsType}));
    beam.setResultAttr(0, kOutputResultAttr, b.getStringAttr("top_values"));
    beam.setResultAttr(1, kOutputResultAttr, b.getStringAttr("top_ids"));
  }
};

} // namespace

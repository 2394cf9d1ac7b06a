//===- Compile.cpp - tfmc compile: a model's IR at any stage --------------===//
//
// tfmc compile MODEL.json [--emit=STAGE] [-o FILE] [--dump-ir DIR]
//
//===----------------------------------------------------------------------===//
#include "tools/tfmc/Command.h"

#include "compiler/Pipelines/EmitModel.h"
#include "frontends/model/Model.h"

namespace cl = llvm::cl;

namespace tfmc::driver {
namespace {

class CompileCommand : public Command {
public:
  explicit CompileCommand(cl::OptionCategory &cat)
      : sub("compile", "Compile a model and print one IR stage"),
        model(cl::Positional, cl::desc("MODEL.json"), cl::Required,
              cl::sub(sub), cl::cat(cat)),
        output("o", cl::desc("Output file (default: stdout)"),
               cl::value_desc("FILE"), cl::init(""), cl::sub(sub),
               cl::cat(cat)),
        dumpIR("dump-ir",
               cl::desc("Write every IR stage to DIR as NN-stage.mlir"),
               cl::value_desc("DIR"), cl::init(""), cl::sub(sub),
               cl::cat(cat)),
        emit("emit",
             cl::desc("Stage to print: tfm, fused, loops, llvm, llvmir, asm"),
             cl::value_desc("STAGE"), cl::init("tfm"), cl::sub(sub),
             cl::cat(cat)),
        kernels(sub, cat) {}

  cl::SubCommand &subcommand() override { return sub; }

  int run() override {
    auto library = kernels.useLibrary();
    if (!library)
      return fail(library.takeError());
    auto stage = mlir::tfm::parseStage(emit);
    if (!stage)
      return fail("--emit: unknown stage '" + emit +
                  "' (expected tfm, fused, loops, llvm, llvmir or asm)");
    auto loaded = frontend::loadModel(model);
    if (!loaded)
      return fail(loaded.takeError());
    mlir::tfm::PipelineOptions pipeline;
    pipeline.useLibraryCalls = *library;
    auto text = mlir::tfm::emitModel(*loaded, *stage, dumpIR, pipeline);
    if (!text)
      return fail(text.takeError());
    auto os = openOutput(output);
    if (!os)
      return fail(os.takeError());
    **os << *text;
    return 0;
  }

private:
  cl::SubCommand sub;
  cl::opt<std::string> model, output, dumpIR, emit;
  KernelsOption kernels;
};

} // namespace

std::unique_ptr<Command> createCompileCommand(cl::OptionCategory &cat) {
  return std::make_unique<CompileCommand>(cat);
}

} // namespace tfmc::driver

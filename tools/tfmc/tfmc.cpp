//===- tfmc.cpp - the tfmc driver -----------------------------------------===//
//
// tfmc compile   MODEL.json [--emit=STAGE] [-o FILE] [--dump-ir DIR]
// tfmc translate MODEL.json [-i FILE] [-o FILE] [--ids] [--batch-size N] ...
// tfmc forward   MODEL.json --src IDS --tgt IDS -o LOGITS.npy
// tfmc encode    MODEL.json --src IDS -o STATES.npy
// tfmc score     --hyp FILE --ref FILE [--ref FILE ...]
// tfmc serve     MODEL.json [--host H] [--port P] [--max-batch N] ...
//
// Dispatch only: each subcommand, with its options, is in its own file.
//
//===----------------------------------------------------------------------===//
#include "tools/tfmc/Command.h"

#include "llvm/Support/InitLLVM.h"

namespace cl = llvm::cl;
using namespace tfmc::driver;

int main(int argc, char **argv) {
  secondsSinceStart();
  llvm::InitLLVM init(argc, argv);
  cl::OptionCategory category("tfmc options");
  std::unique_ptr<Command> commands[] = {
      createCompileCommand(category), createTranslateCommand(category),
      createForwardCommand(category), createEncodeCommand(category),
      createScoreCommand(category), createServeCommand(category)};
  cl::HideUnrelatedOptions(category);
  if (!cl::ParseCommandLineOptions(
          argc, argv,
          "tfmc: compiler and runtime for encoder-decoder translation "
          "Transformers\n",
          &llvm::errs()))
    return 1;
  for (std::unique_ptr<Command> &command : commands)
    if (command->subcommand())
      return command->run();
  return fail("expected a command: compile, translate, forward, encode, "
              "score or serve (see tfmc --help)");
}

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
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <string>
#include <unistd.h>

namespace cl = llvm::cl;
using namespace tfmc::driver;

int main(int argc, char **argv) {
  secondsSinceStart();
  llvm::InitLLVM init(argc, argv);
  cl::OptionCategory category("tfmc options");
  std::unique_ptr<Command> commands[] = {
      createCompileCommand(category), createTranslateCommand(category),
      createProfileCommand(category),
      createForwardCommand(category), createEncodeCommand(category),
      createScoreCommand(category), createServeCommand(category),
      createQuantizeCommand(category)};
  cl::HideUnrelatedOptions(category);
  // llvm::cl's own complaints (unknown options, bad values, missing
  // arguments) become one "error:" line like every other error.
  // Some of them go straight to stderr, so stderr is parked in a
  // temporary file while the command line is parsed.
  std::string complaints;
  llvm::raw_string_ostream complaintStream(complaints);
  llvm::errs().flush();
  FILE *parked = std::tmpfile();
  int savedStderr = parked ? ::dup(2) : -1;
  if (savedStderr >= 0)
    ::dup2(::fileno(parked), 2);
  bool parsed = cl::ParseCommandLineOptions(
      argc, argv,
      "tfmc: compiler and runtime for encoder-decoder translation "
      "Transformers\n",
      &complaintStream);
  llvm::errs().flush();
  if (savedStderr >= 0) {
    ::dup2(savedStderr, 2);
    ::close(savedStderr);
    std::rewind(parked);
    char chunk[4096];
    size_t n;
    while ((n = std::fread(chunk, 1, sizeof(chunk), parked)) > 0)
      complaints.insert(0, std::string(chunk, n));
  }
  if (parked)
    std::fclose(parked);
  if (!parsed) {
    complaintStream.flush();
    llvm::SmallVector<llvm::StringRef> lines;
    llvm::StringRef(complaints).split(lines, '\n', -1, /*KeepEmpty=*/false);
    std::string message;
    for (llvm::StringRef line : lines) {
      line = line.trim();
      // "tfmc: ..." / "tfmc translate: ..." prefixes add nothing here.
      if (line.starts_with("tfmc"))
        line = line.split(": ").second;
      message += (message.empty() ? "" : " ") + line.str();
    }
    return fail(message.empty() ? "invalid command line" : message);
  }
  for (std::unique_ptr<Command> &command : commands)
    if (command->subcommand())
      return command->run();
  return fail("expected a command: compile, translate, forward, encode, "
              "score or serve (see tfmc --help)");
}

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
// `serve` is the tfmc-serve executable beside this one (tfmc-serve.cpp).
//
//===----------------------------------------------------------------------===//
#include "tools/tfmc/Command.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"

#include <cerrno>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

namespace cl = llvm::cl;
using namespace tfmc::driver;

namespace {

/// Runs tfmc-serve from this executable's directory with the same
/// arguments. The HTTP server lives there because the library it uses and
/// the TLS and compression libraries that one loads cost every process
/// ~10 ms to load: a one-sentence `tfmc translate` does not pay for them.
int execServe(int argc, char **argv) {
  std::string self = llvm::sys::fs::getMainExecutable(
      argv[0], reinterpret_cast<void *>(&execServe));
  llvm::SmallString<256> server(llvm::sys::path::parent_path(self));
  llvm::sys::path::append(server, "tfmc-serve");
  std::vector<char *> args(argv, argv + argc);
  static char name[] = "tfmc";
  args[0] = name;
  args.push_back(nullptr);
  ::execv(server.c_str(), args.data());
  return fail("tfmc serve runs " + server + ": " + std::strerror(errno));
}

} // namespace

int main(int argc, char **argv) {
  secondsSinceStart();
  if (argc > 1 && llvm::StringRef(argv[1]) == "serve")
    return execServe(argc, argv);
  llvm::InitLLVM init(argc, argv);
  cl::OptionCategory category("tfmc options");
  std::unique_ptr<Command> commands[] = {
      createCompileCommand(category), createTranslateCommand(category),
      createProfileCommand(category), createForwardCommand(category),
      createEncodeCommand(category),  createScoreCommand(category),
      createQuantizeCommand(category)};
  // Listed by --help; never chosen here (main runs tfmc-serve first).
  cl::SubCommand serve("serve",
                       "Serve translations over HTTP/JSON (`tfmc serve "
                       "--help` for its options)");
  return dispatch(argc, argv, commands, category,
                  "expected a command: compile, translate, profile, forward, "
                  "encode, score, quantize or serve (see tfmc --help)");
}

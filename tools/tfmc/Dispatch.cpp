//===- Dispatch.cpp - parse the command line, run the chosen subcommand ---===//
//
// Shared by the tfmc and tfmc-serve executables: llvm::cl's own complaints
// become one "error:" line, the chosen command runs, and the process ends
// without tearing down what the command left (dispatch() in Command.h).
//
//===----------------------------------------------------------------------===//
#include "frontends/model/FileSupport.h"
#include "frontends/model/PageMemory.h"
#include "tools/tfmc/Command.h"

#include "llvm/Support/Allocator.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/StringSaver.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>
#include <unistd.h>

namespace cl = llvm::cl;

namespace tfmc::driver {

namespace {

/// Whether `option` names a file or a directory: its value is FILE, DIR or
/// IDS (a file of token ids).
bool isPathOption(const cl::Option &option) {
  return option.ValueStr == "FILE" || option.ValueStr == "DIR" ||
         option.ValueStr == "IDS";
}

/// The first option of `sub` naming a file or a directory (isPathOption)
/// that the command line gives an empty value (`-o ''`,
/// `--dump-ir=`), or "": llvm::cl takes it, and an empty path would then
/// mean the option's default (stdout, stdin, no dump) as if it had not
/// been given. Response files (`@FILE`) are read as llvm::cl reads them.
std::string emptyPathOption(int argc, char **argv, cl::SubCommand &sub) {
  llvm::BumpPtrAllocator allocator;
  llvm::StringSaver saver(allocator);
  llvm::SmallVector<const char *> args(argv, argv + argc);
  if (!cl::ExpandResponseFiles(saver, cl::TokenizeGNUCommandLine, args))
    return ""; // llvm::cl has reported it
  for (size_t i = 1; i < args.size(); ++i) {
    llvm::StringRef arg(args[i]);
    if (arg == "--")
      break;
    if (!arg.starts_with("-") || arg == "-")
      continue;
    auto [name, value] = arg.ltrim('-').split('=');
    auto found = sub.OptionsMap.find(name);
    if (found == sub.OptionsMap.end())
      continue;
    cl::Option &option = *found->second;
    bool inlineValue = arg.contains('=');
    // `-o VALUE`: VALUE is the option's, whatever it looks like.
    bool separateValue = !inlineValue && i + 1 < args.size() &&
                         option.getValueExpectedFlag() == cl::ValueRequired;
    llvm::StringRef given = inlineValue     ? value
                            : separateValue ? args[i + 1]
                                            : "x";
    if (separateValue)
      ++i;
    if (isPathOption(option) && given.empty())
      return (name.size() == 1 ? "-" : "--") + name.str();
  }
  return "";
}

/// The first option of `sub` naming a file or a directory that takes one
/// value and was given more than once (`-i A -i B`), or "": llvm::cl keeps
/// the last, so the command would read or write one of them without a word.
std::string repeatedPathOption(cl::SubCommand &sub) {
  for (auto &entry : sub.OptionsMap) {
    cl::Option &option = *entry.second;
    // Lists (score's --ref) take every value; single options keep one.
    bool single = option.getNumOccurrencesFlag() == cl::Optional ||
                  option.getNumOccurrencesFlag() == cl::Required;
    if (isPathOption(option) && single && option.getNumOccurrences() > 1)
      return (option.ArgStr.size() == 1 ? "-" : "--") + option.ArgStr.str();
  }
  return "";
}

/// Memory the runtime could not get for anything else than compiled code's
/// buffers and the decoder's caches (an output array, weights being
/// converted) ends the command with one error line and EX_OSERR, not
/// LLVM's abort; those two fail their call or batch instead, which the
/// command reports as any error (CompiledCall.h, BatchDecoder.h).
[[noreturn]] void outOfMemory() {
  // Nothing here may allocate, nor touch a stream another thread may be
  // writing.
  static const char message[] = "error: out of memory\n";
  ssize_t ignored = ::write(2, message, sizeof(message) - 1);
  (void)ignored;
  ::_exit(71);
}

} // namespace

int dispatch(int argc, char **argv,
             llvm::MutableArrayRef<std::unique_ptr<Command>> commands,
             cl::OptionCategory &category, llvm::StringRef missingCommand) {
  std::set_new_handler(outOfMemory);
  pages::outOfMemoryHandler = outOfMemory;
  llvm::install_bad_alloc_error_handler(
      [](void *, const char *, bool) { outOfMemory(); });
  cl::HideUnrelatedOptions(category);
  cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << "tfmc " TFMC_VERSION " (LLVM/MLIR " TFMC_LLVM_VERSION
          ", " TFMC_ONEDNN_VERSION ")\n";
  });
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
    // Where to look: the subcommand's help when one was named.
    std::string help = "tfmc --help";
    if (argc > 1)
      for (std::unique_ptr<Command> &command : commands)
        if (command->subcommand().getName() == llvm::StringRef(argv[1]))
          help = "tfmc " + std::string(argv[1]) + " --help";
    std::string message;
    bool unknownArgument = false;
    for (llvm::StringRef line : lines) {
      line = line.trim();
      // "tfmc: ..." / "tfmc translate: ..." prefixes add nothing here.
      if (line.starts_with("tfmc"))
        line = line.split(": ").second;
      // An unknown option also counts as a surplus positional argument,
      // and llvm::cl's guess for a subcommand's option can be a hidden
      // top-level one: neither helps.
      if (line.starts_with("Unknown command line argument"))
        unknownArgument = true;
      if ((unknownArgument && (line.starts_with("Too many positional") ||
                               line.starts_with("Can specify at most"))) ||
          line.contains("'--help-list'") || line.contains("'--help-hidden'"))
        continue;
      // "Try: 'PATH --help'" / "See: PATH --help" name the binary's path.
      line = line.split("  Try: ").first.split(" See: ").first;
      line.consume_back(":");
      message += (message.empty() ? "" : " ") + line.str();
    }
    if (message.empty())
      message = "invalid command line";
    return fail(message + " (" + help + ")");
  }
  for (std::unique_ptr<Command> &command : commands)
    if (command->subcommand()) {
      std::string empty = emptyPathOption(argc, argv, command->subcommand());
      if (!empty.empty())
        return fail(empty + ": the path is empty");
      std::string repeated = repeatedPathOption(command->subcommand());
      if (!repeated.empty())
        return fail(repeated + " was given more than once (it takes one " +
                    "path; the command would use only the last)");
      int status = command->run();
      // The commands' options go with them; --timing prints its tree then.
      for (std::unique_ptr<Command> &c : commands)
        c.reset();
      // Everything a command writes is written and closed now; what is
      // left is freeing its memory and LLVM's and MLIR's static state,
      // which the process exit does at once (~7 ms of a one-sentence
      // translate).
      // What went to standard output must have been written (`tfmc score
      // > /dev/full` said nothing and exited 0).
      llvm::outs().flush();
      if (std::error_code ec = frontend::takeWriteError(llvm::outs())) {
        // One error line: a command that failed has said why already.
        if (status == 0)
          status = ec == std::errc::broken_pipe
                       ? 74 // EX_IOERR, as a reader that closed the pipe gives
                       : fail("standard output: cannot write: " + ec.message());
      }
      llvm::errs().flush();
      if (std::fflush(stdout) != 0 && status == 0)
        status = fail(std::string("standard output: cannot write: ") +
                      std::strerror(errno));
      std::fflush(nullptr);
      llvm::sys::Process::Exit(status, /*NoCleanup=*/true);
    }
  return fail(missingCommand);
}

} // namespace tfmc::driver

//===- DriverSupport.cpp - helpers shared by tfmc's subcommands -----------===//
#include "tools/tfmc/Command.h"

#include "runtime/kernels/KernelAbi.h"
#include "runtime/session/Translator.h"

#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>

namespace cl = llvm::cl;

namespace tfmc::driver {

int fail(const llvm::Twine &message) {
  llvm::errs() << "error: " << message << "\n";
  return 1;
}

int fail(llvm::Error error) {
  std::string text = llvm::toString(std::move(error));
  // One line per error, whatever the library produced.
  std::replace(text.begin(), text.end(), '\n', ' ');
  return fail(llvm::StringRef(text).rtrim());
}

KernelsOption::KernelsOption(cl::SubCommand &sub, cl::OptionCategory &cat)
    : value("kernels",
            cl::desc("Linear layers: 'library' (oneDNN calls) or 'loops' "
                     "(compiled loop nests); default library when built with "
                     "oneDNN"),
            cl::init(runtime::haveLibraryKernels() ? "library" : "loops"),
            cl::sub(sub), cl::cat(cat)) {}

llvm::Expected<bool> KernelsOption::useLibrary() const {
  if (value != "library" && value != "loops")
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "--kernels: expected 'library' or 'loops', got '" + value + "'");
  if (value == "library" && !runtime::haveLibraryKernels())
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "--kernels=library: this tfmc was built without oneDNN");
  return value == "library";
}

llvm::Expected<runtime::TokenRows> readIdFile(llvm::StringRef path,
                                              int64_t vocab) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return llvm::createStringError(
        buffer.getError(), "%s: cannot open file: %s", path.str().c_str(),
        buffer.getError().message().c_str());
  runtime::TokenRows rows;
  llvm::SmallVector<llvm::StringRef> lines;
  (*buffer)->getBuffer().split(lines, '\n');
  if (!lines.empty() && lines.back().trim().empty())
    lines.pop_back();
  for (size_t i = 0; i < lines.size(); ++i) {
    auto ids = runtime::parseIdLine(lines[i].rtrim("\r"), vocab);
    if (!ids)
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(), "%s: line %zu: %s",
          path.str().c_str(), i + 1, llvm::toString(ids.takeError()).c_str());
    rows.push_back(std::move(*ids));
  }
  return rows;
}

llvm::Expected<std::unique_ptr<llvm::raw_fd_ostream>>
openOutput(llvm::StringRef path) {
  std::error_code ec;
  auto os =
      std::make_unique<llvm::raw_fd_ostream>(path.empty() ? "-" : path, ec);
  if (ec)
    return llvm::createStringError(ec, "%s: cannot write file: %s",
                                   path.str().c_str(), ec.message().c_str());
  return std::move(os);
}

} // namespace tfmc::driver

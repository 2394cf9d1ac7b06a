//===- PerfMap.cpp - JIT function names for perf --------------------------===//
#include "compiler/JIT/PerfMap.h"
#include "frontends/model/FileSupport.h"

#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Object/ObjectFile.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <map>
#include <mutex>

using namespace mlir;
using namespace mlir::tfm;

bool mlir::tfm::perfMapRequested() {
  const char *value = std::getenv("TFMC_PERF_MAP");
  return value && *value && llvm::StringRef(value) != "0";
}

void mlir::tfm::appendPerfMap(llvm::orc::LLJIT &jit, llvm::StringRef object) {
  auto file = llvm::object::ObjectFile::createObjectFile(
      llvm::MemoryBufferRef(object, "tfmc-model.o"));
  if (!file) {
    llvm::consumeError(file.takeError());
    llvm::errs() << "warning: TFMC_PERF_MAP: the object cannot be read\n";
    return;
  }
  struct Function {
    std::string name;
    uint64_t offset, size;
    bool global;
  };
  // Functions by section. Local (private) functions cannot be looked up;
  // they are placed relative to a global one of the same section.
  std::map<uint64_t, std::vector<Function>> bySection;
  for (const llvm::object::SymbolRef &symbol : (*file)->symbols()) {
    auto type = symbol.getType();
    auto name = symbol.getName();
    auto value = symbol.getValue();
    auto section = symbol.getSection();
    auto flags = symbol.getFlags();
    if (!type || !name || !value || !section || !flags) {
      llvm::consumeError(type.takeError());
      llvm::consumeError(name.takeError());
      llvm::consumeError(value.takeError());
      llvm::consumeError(section.takeError());
      llvm::consumeError(flags.takeError());
      continue;
    }
    if (*type != llvm::object::SymbolRef::ST_Function ||
        *section == (*file)->section_end())
      continue;
    uint64_t size = llvm::object::ELFSymbolRef(symbol).getSize();
    bySection[(*section)->getIndex()].push_back(
        {name->str(), *value, size,
         bool(*flags & llvm::object::SymbolRef::SF_Global)});
  }
  std::string lines;
  llvm::raw_string_ostream out(lines);
  for (auto &[section, functions] : bySection) {
    int64_t base = -1; // address of the section's start in the process
    for (const Function &f : functions) {
      if (!f.global)
        continue;
      auto address = jit.lookup(f.name);
      if (!address) {
        llvm::consumeError(address.takeError());
        continue;
      }
      base = int64_t(address->getValue() - f.offset);
      break;
    }
    if (base < 0)
      continue;
    for (const Function &f : functions)
      out << llvm::format_hex_no_prefix(uint64_t(base) + f.offset, 1) << ' '
          << llvm::format_hex_no_prefix(f.size, 1) << ' ' << f.name << '\n';
  }
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  std::string path =
      "/tmp/perf-" + std::to_string(llvm::sys::Process::getProcessId()) +
      ".map";
  std::error_code error;
  llvm::raw_fd_ostream map(path, error, llvm::sys::fs::OF_Append);
  if (error) {
    llvm::errs() << "warning: TFMC_PERF_MAP: cannot write " << path << ": "
                 << error.message() << "\n";
    return;
  }
  map << lines;
  map.close();
  if (std::error_code ec = tfmc::frontend::takeWriteError(map))
    llvm::errs() << "warning: TFMC_PERF_MAP: cannot write " << path << ": "
                 << ec.message() << "\n";
}

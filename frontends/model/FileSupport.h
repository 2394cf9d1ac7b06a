//===- FileSupport.h - what the model readers share -------------*- C++ -*-===//
#ifndef FRONTENDS_MODEL_FILESUPPORT_H
#define FRONTENDS_MODEL_FILESUPPORT_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#include <memory>
#include <optional>
#include <string>

namespace tfmc::frontend {

/// Opens (memory-maps when large) a whole file; fails with
/// "PATH: cannot open file: REASON".
llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
openFile(llvm::StringRef path, bool isText);

/// "[2, 3]": a shape or an offset pair in messages.
std::string formatShape(llvm::ArrayRef<int64_t> values);

/// JSON parsers recurse per nesting level: the byte offset where `json`
/// nests deeper than `limit` arrays/objects, if it does (checked before
/// parsing, so hostile files cannot exhaust the stack).
std::optional<size_t> nestingBeyond(llvm::StringRef json, size_t limit);
inline constexpr size_t kMaxJsonNesting = 256;

} // namespace tfmc::frontend

#endif // FRONTENDS_MODEL_FILESUPPORT_H

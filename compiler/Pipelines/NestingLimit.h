//===- NestingLimit.h - refuse absurdly nested IR text before parsing -*- C++ -*-===//
//
// MLIR's parser descends recursively into regions, types, attributes and
// affine expressions, so text nested some ten thousand levels deep
// overflows the stack. Real IR nests a few dozen levels: tools check the
// text first and refuse it with a located error instead of crashing.
//
//===----------------------------------------------------------------------===//
#ifndef COMPILER_PIPELINES_NESTINGLIMIT_H
#define COMPILER_PIPELINES_NESTINGLIMIT_H

#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace mlir::tfm {

/// The deepest bracket nesting tools accept in textual IR.
constexpr unsigned kMaxIRNesting = 256;

/// "LINE:COL: ..." for the first bracket ('{', '(', '[', '<') that opens
/// level `limit + 1` outside string literals and `//` comments, or nothing
/// when the text stays within the limit.
std::optional<std::string> findExcessiveNesting(llvm::StringRef text,
                                                unsigned limit = kMaxIRNesting);

} // namespace mlir::tfm

#endif // COMPILER_PIPELINES_NESTINGLIMIT_H

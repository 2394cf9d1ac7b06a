//===- IntegerOption.h - integer options in decimal -------------*- C++ -*-===//
#ifndef TOOLS_TFMC_INTEGEROPTION_H
#define TOOLS_TFMC_INTEGEROPTION_H

#include "llvm/Support/CommandLine.h"

namespace tfmc::driver {

/// An integer option's value as typed in decimal (IntegerOption).
template <typename T> struct Decimal {
  T value{};
  operator T() const { return value; }
};

} // namespace tfmc::driver

/// Integer options read in decimal only: llvm::cl's own parser takes a
/// leading 0 as octal ("010" is 8), 0x as hexadecimal and 0b as binary, a
/// silent change of what was typed.
template <typename T>
class llvm::cl::parser<tfmc::driver::Decimal<T>>
    : public llvm::cl::basic_parser<tfmc::driver::Decimal<T>> {
public:
  explicit parser(llvm::cl::Option &option)
      : llvm::cl::basic_parser<tfmc::driver::Decimal<T>>(option) {}
  bool parse(llvm::cl::Option &option, llvm::StringRef name,
             llvm::StringRef text, tfmc::driver::Decimal<T> &result) {
    if (text.getAsInteger(10, result.value))
      return option.error("'" + text + "' value invalid for integer argument!");
    return false;
  }
  llvm::StringRef getValueName() const override { return "int"; }
};

namespace tfmc::driver {

template <typename T>
using IntegerOption = llvm::cl::opt<T, false, llvm::cl::parser<Decimal<T>>>;

} // namespace tfmc::driver

#endif // TOOLS_TFMC_INTEGEROPTION_H

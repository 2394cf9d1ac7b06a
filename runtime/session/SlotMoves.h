//===- SlotMoves.h - a reorder of decoder slots as copies ----*- C++ -*-===//
//
// A beam step continues each new hypothesis i from an old slot sources[i]:
// slot i's KV caches must become what slot sources[i]'s were, all at once
// (a parallel move). planSlotMoves() orders the copies so that every slot
// is read before it is overwritten: first whatever nobody still has to
// read, then each cycle of slots continuing each other (i from j, j from
// i, ...), broken by saving one of its slots to a spare first. Every
// destination is copied once, plus one save a cycle; the spare holds one
// slot, never more at a time.
//
//===----------------------------------------------------------------------===//
#ifndef RUNTIME_SESSION_SLOTMOVES_H
#define RUNTIME_SESSION_SLOTMOVES_H

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <vector>

namespace tfmc::runtime {

/// Stands for the spare in a SlotMove.
constexpr int64_t kSpareSlot = -1;

/// Copy slot `from` to slot `to`; `to` == kSpareSlot saves `from` to the
/// spare, `from` == kSpareSlot copies the spare to `to`.
struct SlotMove {
  int64_t to, from;
};

/// The copies that make slots 0..sources.size()-1 hold what slots
/// sources[i] (each below `active`) held, in an order that reads every
/// slot before it is overwritten. Slots with sources[i] == i are not
/// copied; slots from sources.size() on may be read but are not written.
std::vector<SlotMove> planSlotMoves(llvm::ArrayRef<int64_t> sources,
                                    int64_t active);

} // namespace tfmc::runtime

#endif // RUNTIME_SESSION_SLOTMOVES_H

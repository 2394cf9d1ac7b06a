//===- SlotMoves.cpp - a reorder of decoder slots as a sequence of copies -===//
#include "runtime/session/SlotMoves.h"

#include <algorithm>

using namespace tfmc::runtime;

std::vector<SlotMove>
tfmc::runtime::planSlotMoves(llvm::ArrayRef<int64_t> sources, int64_t active) {
  auto n = static_cast<int64_t>(sources.size());
  std::vector<int64_t> from(sources.begin(), sources.end());
  // readers[j]: destinations that still have to read slot j.
  std::vector<int64_t> readers(std::max(active, n), 0);
  for (int64_t i = 0; i < n; ++i)
    if (from[i] != i)
      ++readers[from[i]];
  std::vector<SlotMove> order;
  std::vector<int64_t> ready;
  std::vector<char> done(n, 0);
  for (int64_t i = 0; i < n; ++i)
    if (from[i] == i)
      done[i] = 1;
    else if (readers[i] == 0)
      ready.push_back(i);
  auto drain = [&] {
    while (!ready.empty()) {
      int64_t i = ready.back();
      ready.pop_back();
      int64_t j = from[i];
      order.push_back({i, j});
      done[i] = 1;
      if (j != kSpareSlot && --readers[j] == 0 && j < n && !done[j])
        ready.push_back(j);
    }
  };
  // Everything off the cycles: a slot no one reads, then its source once
  // no one else reads that, and so on.
  drain();
  // What is left are cycles: save one slot of each, let the slot that
  // continues it read the spare, and the cycle unwinds.
  for (int64_t i = 0; i < n; ++i) {
    if (done[i])
      continue;
    order.push_back({kSpareSlot, i});
    for (int64_t d = 0; d < n; ++d)
      if (!done[d] && from[d] == i) {
        from[d] = kSpareSlot;
        --readers[i];
      }
    ready.push_back(i);
    drain();
  }
  return order;
}

//===- AttentionLowering.cpp - attention, KV caches -----------------------===//
//
// tfm.attention (scores, mask as a loop bound, softmax, values) and
// tfm.cache_write.
//
//===----------------------------------------------------------------------===//
#include "compiler/Conversion/TfmToLoops/OpLowering.h"

using namespace mlir;
using namespace mlir::tfm;
using namespace mlir::tfm::loops;

namespace {

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

struct AttentionLowering : public TfmLowering<AttentionOp> {
  AttentionLowering(TypeConverter &converter, MLIRContext *context,
                    int64_t prefetchLevel)
      : TfmLowering(converter, context), prefetchLevel(prefetchLevel) {}

  /// The cache level the key and value prefetches fill (prefetchRow()).
  int64_t prefetchLevel;

  LogicalResult
  matchAndRewrite(AttentionOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelBuilder caller(rewriter, op.getLoc());
    Value out = allocRows(caller, resultType(op), adaptor.getQuery());
    int64_t dModel = resultType(op).getDimSize(2);
    int64_t heads = op.getNumHeads();
    float scaleValue = op.getScale().convertToFloat();
    MaskKind mask = op.getMaskKind();
    Value zero = caller.index(0);
    // Every variant takes the same arguments; absent bounds are passed as
    // values that never bind (the key count, offset 0).
    Value keyCount = caller.dim(adaptor.getKey(), 1);
    Value kvLength = adaptor.getKvLength() ? adaptor.getKvLength() : keyCount;
    Value queryOffset =
        adaptor.getQueryOffset() ? adaptor.getQueryOffset() : zero;
    bool hasLengths = static_cast<bool>(adaptor.getKeyLengths());
    bool hasRows = static_cast<bool>(adaptor.getKeyRows());
    SmallVector<Value> args{adaptor.getQuery(), adaptor.getKey(),
                            adaptor.getValue()};
    if (hasLengths)
      args.push_back(adaptor.getKeyLengths());
    if (hasRows)
      args.push_back(adaptor.getKeyRows());
    args.append({queryOffset, kvLength, out});
    std::string base = ("attention_" + stringifyMaskKind(mask)).str() + "_h" +
                       std::to_string(heads) + (hasRows ? "_rows" : "");
    callKernel(rewriter, op, base, args, [&](KernelBuilder &k, ValueRange a) {
      Value q = a[0], key = a[1], value = a[2];
      Value lengths = hasLengths ? a[3] : Value();
      Value rows = hasRows ? a[hasLengths ? 4 : 3] : Value();
      ValueRange rest = a.drop_front(3 + hasLengths + hasRows);
      Value offset = rest[0], kvLimit = rest[1], result = rest[2];
      Operands in{q, key, value, lengths, rows, offset, kvLimit, result};
      bool causal = mask == MaskKind::causal;
      if ((dModel / heads) % kLanes == 0)
        emitVectorAttention(k, in, dModel, heads, scaleValue, causal,
                            prefetchLevel);
      else
        emitAttention(k, in, dModel, heads, scaleValue, causal);
    });
    rewriter.replaceOp(op, out);
    return success();
  }

  /// Any head size: one loop nest per (row, head, query) with the visible
  /// keys as a loop bound and an online softmax over blocks of kKeyBlock keys: per block,
  /// the scaled dot products go to a scratch row of kKeyBlock floats (never
  /// a [batch, heads, q, k] buffer), the running maximum m and sum l and the
  /// partial weighted sum in `out` are rescaled once, and the block's
  /// exponentials and value updates are vectorisable loops.
  static constexpr int64_t kKeyBlock = 16;
  /// Floats per vector register in the explicit-SIMD variant (AVX2).
  static constexpr int64_t kLanes = 8;

  /// The kernel's arguments; `lengths` and `rows` may be null.
  struct Operands {
    Value q, key, value, lengths, rows, queryOffset, kvLimit, out;
  };

  /// The row of keys/values query row `b` reads: `rows[b]` clamped to the
  /// key rows there are, or `b` itself.
  static Value keyRow(KernelBuilder &k, const Operands &in, Value b) {
    if (!in.rows)
      return b;
    Value last = k.addIndex(k.dim(in.key, 0), k.index(-1));
    return k.clampedIndex(k.load(in.rows, {b}), k.index(0), last);
  }

  /// Prefetches the cache lines of m[b, j, 0 .. width) into L1 (locality
  /// 3) or, with `level` 2, into L2 (locality 2). Into L2 until 2026-12-05,
  /// then L1 for every host: on an AMD EPYC (Zen 5) AVX-512 VM, base model,
  /// one thread, `tfmc profile` alternating 15 times, the decoder's
  /// attention at batch 64 took less time with L1 (float32 0.426 -> 0.401
  /// s, -6%; int8's float16 caches 0.243 -> 0.215, -12%), at batch 16 4%
  /// less, and a stand-alone harness of this loop read 1.04-1.09x faster;
  /// the bundled model's dev set decoded 1.05x (beam 4) and 1.09x (greedy)
  /// faster (paired medians of 10). On a Sapphire Rapids class Xeon
  /// (2026-12-06, the same profile alternating 4-5 times) L2 was the faster
  /// by more: attention at batch 64 0.79x the time with L2 (float32;
  /// int8's float16 caches 0.785x), at batch 16 0.84x; the runtime asks
  /// for L2 on Intel CPUs (packed::aheadCacheLevel() in the runtime).
  static void prefetchRow(KernelBuilder &k, Value m, Value b, Value j,
                          int64_t width, int64_t level) {
    auto type = cast<MemRefType>(m.getType());
    int64_t perLine = 64 / (type.getElementTypeBitWidth() / 8);
    for (int64_t c = 0; c < width; c += perLine)
      k.builder().create<memref::PrefetchOp>(
          k.location(), m, ValueRange{b, j, k.index(c)}, /*isWrite=*/false,
          /*localityHint=*/level == 2 ? 2 : 3, /*isDataCache=*/true);
  }

  /// Explicit vectors, for head sizes that are a multiple of kLanes, with
  /// the key and value rows read in memory order. A query row scores every
  /// visible key for all heads at once: key j of row b is one contiguous
  /// dModel-float row, so the keys stream sequentially (one head's slice of
  /// every key instead is a few cache lines per key row: at batch 16 on the
  /// base model 9 GB/s from memory against 12.7 in order, 16 with the
  /// prefetches below). The scores of all heads go to a scratch
  /// [heads, keys] buffer; each head's softmax is then exact over its
  /// whole row (maximum, exponentials, sum: vector loops over contiguous
  /// scores); the values stream the same way, two keys at a time, into the
  /// output row, which is scaled by each head's 1 / sum at the end.
  static void emitVectorAttention(KernelBuilder &k, const Operands &in,
                                  int64_t dModel, int64_t heads,
                                  float scaleValue, bool causal,
                                  int64_t prefetchLevel) {
    Value q = in.q, key = in.key, value = in.value, lengths = in.lengths,
          queryOffset = in.queryOffset, kvLimit = in.kvLimit, out = in.out;
    OpBuilder &ob = k.builder();
    Location loc = k.location();
    int64_t headDim = dModel / heads;
    int64_t chunks = headDim / kLanes;
    Value zero = k.index(0);
    Value lanes = k.index(kLanes);
    Value scale = k.f32(scaleValue);
    Value keyCount = k.minIndex(k.dim(key, 1), kvLimit);
    Value lowest = k.f32(-std::numeric_limits<float>::max());
    Value zeros = k.splat(k.f32(0.0), kLanes);
    // One scratch row of scores per head, kLanes-aligned.
    Value stride = k.mulIndex(
        ob.create<arith::DivUIOp>(
            loc, k.addIndex(keyCount, k.index(kLanes - 1)), lanes),
        lanes);
    Value scores =
        k.alloc(MemRefType::get({ShapedType::kDynamic}, ob.getF32Type()),
                {k.mulIndex(stride, k.index(heads))});
    Value inverses = ob.create<memref::AllocaOp>(
        loc, MemRefType::get({heads}, ob.getF32Type()),
        ob.getI64IntegerAttr(64));
    auto column = [&](int64_t h, int64_t c) {
      return k.index(h * headDim + c * kLanes);
    };
    // floor(n / kLanes) * kLanes.
    auto wholeVectors = [&](Value n) {
      return k.mulIndex(ob.create<arith::DivUIOp>(loc, n, lanes), lanes);
    };
    k.loop(zero, k.dim(q, 0), [&](Value b) {
      Value kb = keyRow(k, in, b);
      Value rowKeys = keyCount;
      if (lengths)
        rowKeys = k.clampedIndex(k.load(lengths, {b}), zero, keyCount);
      k.loop(zero, k.dim(q, 1), [&](Value t) {
        Value visible = rowKeys;
        if (causal)
          visible = k.minIndex(
              visible, k.addIndex(k.addIndex(queryOffset, t), k.index(1)));
        // Scores: key j against every head's query. Meanwhile value row j
        // is fetched for the pass over the values below.
        k.loop(zero, visible, [&](Value j) {
          prefetchRow(k, value, kb, j, dModel, prefetchLevel);
          for (int64_t h = 0; h < heads; ++h) {
            Value acc = zeros;
            for (int64_t c = 0; c < chunks; ++c)
              acc = k.fma(k.vload(q, {b, t, column(h, c)}, kLanes),
                          k.vload(key, {kb, j, column(h, c)}, kLanes), acc);
            k.store(k.mul(k.sumElements(acc), scale), scores,
                    {k.addIndex(k.mulIndex(k.index(h), stride), j)});
          }
        });
        // Softmax weights per head, unnormalised; 1 / sum kept aside.
        Value whole = wholeVectors(visible);
        k.loop(zero, k.index(heads), [&](Value h) {
          Value row = k.mulIndex(h, stride);
          auto at = [&](Value j) { return k.addIndex(row, j); };
          Value vmax = k.reduce(
              zero, whole, {k.splat(lowest, kLanes)},
              [&](Value j, ValueRange m) {
                return SmallVector<Value>{
                    k.max(m[0], k.vload(scores, {at(j)}, kLanes))};
              },
              lanes)[0];
          Value max = ob.create<vector::ReductionOp>(
              loc, vector::CombiningKind::MAXIMUMF, vmax);
          max = k.reduce(whole, visible, {max}, [&](Value j, ValueRange m) {
            return SmallVector<Value>{k.max(m[0], k.load(scores, {at(j)}))};
          })[0];
          Value splatMax = k.splat(max, kLanes);
          Value vsum = k.reduce(
              zero, whole, {zeros},
              [&](Value j, ValueRange acc) {
                Value w = k.exp(k.sub(k.vload(scores, {at(j)}, kLanes),
                                      splatMax));
                k.vstore(w, scores, {at(j)});
                return SmallVector<Value>{k.add(acc[0], w)};
              },
              lanes)[0];
          Value sum = k.reduce(
              whole, visible, {k.sumElements(vsum)},
              [&](Value j, ValueRange acc) {
                Value w = k.exp(k.sub(k.load(scores, {at(j)}), max));
                k.store(w, scores, {at(j)});
                return SmallVector<Value>{k.add(acc[0], w)};
              })[0];
          // A query with no visible key keeps zeros.
          Value any = ob.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OGT,
                                               sum, k.f32(0.0));
          k.store(ob.create<arith::SelectOp>(loc, any,
                                             k.div(k.f32(1.0), sum),
                                             k.f32(0.0)),
                  inverses, {h});
        });
        // Values: the output row accumulates w[h, j] * value[j] in memory
        // order, two keys per pass over it.
        for (int64_t h = 0; h < heads; ++h)
          for (int64_t c = 0; c < chunks; ++c)
            k.vstore(zeros, out, {b, t, column(h, c)});
        Value pairs = k.mulIndex(
            ob.create<arith::DivUIOp>(loc, visible, k.index(2)), k.index(2));
        // ... and meanwhile the next row's keys.
        Value nextRow = keyRow(
            k, in, k.minIndex(k.addIndex(b, k.index(1)),
                              k.addIndex(k.dim(q, 0), k.index(-1))));
        auto accumulate = [&](Value j, int64_t count) {
          for (int64_t i = 0; i < count; ++i)
            prefetchRow(k, key, nextRow, k.addIndex(j, k.index(i)), dModel,
                        prefetchLevel);
          for (int64_t h = 0; h < heads; ++h) {
            SmallVector<Value> w;
            for (int64_t i = 0; i < count; ++i)
              w.push_back(k.splat(
                  k.load(scores, {k.addIndex(k.mulIndex(k.index(h), stride),
                                             k.addIndex(j, k.index(i)))}),
                  kLanes));
            for (int64_t c = 0; c < chunks; ++c) {
              Value acc = k.vload(out, {b, t, column(h, c)}, kLanes);
              for (int64_t i = 0; i < count; ++i)
                acc = k.fma(w[i],
                            k.vload(value,
                                    {kb, k.addIndex(j, k.index(i)),
                                     column(h, c)},
                                    kLanes),
                            acc);
              k.vstore(acc, out, {b, t, column(h, c)});
            }
          }
        };
        k.loop(zero, pairs, [&](Value j) { accumulate(j, 2); }, k.index(2));
        k.loop(pairs, visible, [&](Value j) { accumulate(j, 1); });
        for (int64_t h = 0; h < heads; ++h) {
          Value inv = k.splat(k.load(inverses, {k.index(h)}), kLanes);
          for (int64_t c = 0; c < chunks; ++c)
            k.vstore(k.mul(k.vload(out, {b, t, column(h, c)}, kLanes), inv),
                     out, {b, t, column(h, c)});
        }
      });
    });
    // (tfm-to-loops frees `scores` after its last use.)
  }

  static void emitAttention(KernelBuilder &k, const Operands &in,
                            int64_t dModel, int64_t heads, float scaleValue,
                            bool causal) {
    Value q = in.q, key = in.key, value = in.value, lengths = in.lengths,
          queryOffset = in.queryOffset, kvLimit = in.kvLimit, out = in.out;
    OpBuilder &ob = k.builder();
    Value zero = k.index(0);
    Value headDim = k.index(dModel / heads);
    Value block = k.index(kKeyBlock);
    Value scale = k.f32(scaleValue);
    Value keyCount = k.minIndex(k.dim(key, 1), kvLimit);
    Value lowest = k.f32(-std::numeric_limits<float>::max());
    Value scores = ob.create<memref::AllocaOp>(
        k.location(), MemRefType::get({kKeyBlock}, ob.getF32Type()),
        ob.getI64IntegerAttr(64));
    k.loop(zero, k.dim(q, 0), [&](Value b) {
      Value kb = keyRow(k, in, b);
      Value rowKeys = keyCount;
      if (lengths)
        rowKeys = k.clampedIndex(k.load(lengths, {b}), zero, keyCount);
      k.loop(zero, k.index(heads), [&](Value h) {
        Value base = k.mulIndex(h, headDim);
        k.loop(zero, k.dim(q, 1), [&](Value t) {
          Value visible = rowKeys;
          if (causal)
            visible = k.minIndex(
                visible, k.addIndex(k.addIndex(queryOffset, t), k.index(1)));
          k.loop(zero, headDim, [&](Value d) {
            k.store(k.f32(0.0), out, {b, t, k.addIndex(base, d)});
          });
          auto blockStep = [&](Value first, ValueRange ml) {
            Value m = ml[0], l = ml[1];
            Value n = k.minIndex(
                block, k.addIndex(visible, k.mulIndex(first, k.index(-1))));
            Value blockMax = k.reduce(
                zero, n, {lowest}, [&](Value j, ValueRange bm) {
                  Value kj = k.addIndex(first, j);
                  Value dot =
                      k.reduce(zero, headDim, {k.f32(0.0)},
                               [&](Value d, ValueRange acc) {
                                 Value c = k.addIndex(base, d);
                                 Value p = k.mul(k.load(q, {b, t, c}),
                                                 k.loadWide(key, {kb, kj, c}));
                                 return SmallVector<Value>{k.add(acc[0], p)};
                               })[0];
                  Value s = k.mul(dot, scale);
                  k.store(s, scores, {j});
                  return SmallVector<Value>{k.max(bm[0], s)};
                })[0];
            Value newMax = k.max(m, blockMax);
            Value rescale = k.exp(k.sub(m, newMax));
            Value blockSum = k.reduce(
                zero, n, {k.f32(0.0)}, [&](Value j, ValueRange acc) {
                  Value w = k.exp(k.sub(k.load(scores, {j}), newMax));
                  k.store(w, scores, {j});
                  return SmallVector<Value>{k.add(acc[0], w)};
                })[0];
            k.loop(zero, headDim, [&](Value d) {
              Value c = k.addIndex(base, d);
              k.store(k.mul(k.load(out, {b, t, c}), rescale), out, {b, t, c});
            });
            k.loop(zero, n, [&](Value j) {
              Value w = k.load(scores, {j});
              Value kj = k.addIndex(first, j);
              k.loop(zero, headDim, [&](Value d) {
                Value c = k.addIndex(base, d);
                k.store(k.add(k.load(out, {b, t, c}),
                              k.mul(w, k.loadWide(value, {kb, kj, c}))),
                        out, {b, t, c});
              });
            });
            return SmallVector<Value>{newMax,
                                      k.add(k.mul(l, rescale), blockSum)};
          };
          Value sum = k.reduce(zero, visible, {lowest, k.f32(0.0)}, blockStep,
                               block)[1];
          // A query with no visible key keeps zeros.
          Value any = ob.create<arith::CmpFOp>(
              k.location(), arith::CmpFPredicate::OGT, sum, k.f32(0.0));
          Value inv = ob.create<arith::SelectOp>(
              k.location(), any, k.div(k.f32(1.0), sum), k.f32(0.0));
          k.loop(zero, headDim, [&](Value d) {
            Value c = k.addIndex(base, d);
            k.store(k.mul(k.load(out, {b, t, c}), inv), out, {b, t, c});
          });
        });
      });
    });
  }
};

struct CacheWriteLowering : public OpConversionPattern<CacheWriteOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(CacheWriteOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    SmallVector<Value> args{adaptor.getValue(), adaptor.getCache(),
                            adaptor.getPosition()};
    callKernel(
        rewriter, op, "cache_write", args, [&](KernelBuilder &k, ValueRange a) {
          Value v = a[0], cache = a[1], position = a[2];
          Value zero = k.index(0);
          // Steps beyond the capacity are dropped (the runtime sizes
          // the cache for its maximum length).
          Value room =
              k.maxIndex(zero, k.addIndex(k.dim(cache, 1),
                                          k.mulIndex(position, k.index(-1))));
          Value steps = k.minIndex(k.dim(v, 1), room);
          k.loop(zero, k.dim(v, 0), [&](Value b) {
            k.loop(zero, steps, [&](Value t) {
              Value pos = k.addIndex(position, t);
              k.loop(zero, k.dim(v, 2), [&](Value d) {
                k.storeNarrowing(k.load(v, {b, t, d}), cache, {b, pos, d});
              });
            });
          });
        });
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void mlir::tfm::loops::populateAttentionLowerings(TypeConverter &converter,
                                                  RewritePatternSet &patterns,
                                                  int64_t prefetchLevel) {
  patterns.add<AttentionLowering>(converter, patterns.getContext(),
                                  prefetchLevel);
  patterns.add<CacheWriteLowering>(converter, patterns.getContext());
}

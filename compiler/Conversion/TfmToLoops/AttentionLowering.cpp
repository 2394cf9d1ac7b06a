//===- AttentionLowering.cpp - attention, KV caches -----------------------===//
//
// tfm.attention (scores, mask as a loop bound, online softmax, values) and
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
  using TfmLowering::TfmLowering;
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
        emitVectorAttention(k, in, dModel, heads, scaleValue, causal);
      else
        emitAttention(k, in, dModel, heads, scaleValue, causal);
    });
    rewriter.replaceOp(op, out);
    return success();
  }

  /// One loop nest per (row, head, query) with the visible keys as a loop
  /// bound and an online softmax over blocks of kKeyBlock keys: per block,
  /// the scaled dot products go to a scratch row of kKeyBlock floats (never
  /// a [batch, heads, q, k] buffer), the running maximum m and sum l and the
  /// partial weighted sum in `out` are rescaled once, and the block's
  /// exponentials and value updates are vectorisable loops.
  static constexpr int64_t kKeyBlock = 16;
  /// Floats per vector register in the explicit-SIMD variant (AVX2).
  static constexpr int64_t kLanes = 8;
  /// Keys whose dot products are computed together there.
  static constexpr int64_t kKeyGroup = 4;

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

  /// The same algorithm with explicit vectors, for head sizes that are a
  /// multiple of kLanes. Left to the loop vectoriser, a dot product over
  /// one head is a single chain of dependent FMAs per key and the weighted
  /// sum of values goes through memory for every key; here the query of the
  /// head stays in registers, kKeyGroup keys are scored at once (independent
  /// chains), and the weighted sum is a set of register accumulators
  /// carried through the key loop and stored once at the end.
  static void emitVectorAttention(KernelBuilder &k, const Operands &in,
                                  int64_t dModel, int64_t heads,
                                  float scaleValue, bool causal) {
    Value q = in.q, key = in.key, value = in.value, lengths = in.lengths,
          queryOffset = in.queryOffset, kvLimit = in.kvLimit, out = in.out;
    OpBuilder &ob = k.builder();
    int64_t chunks = dModel / heads / kLanes;
    Value zero = k.index(0);
    Value block = k.index(kKeyBlock);
    Value scale = k.f32(scaleValue);
    Value keyCount = k.minIndex(k.dim(key, 1), kvLimit);
    Value lowest = k.f32(-std::numeric_limits<float>::max());
    Value zeros = k.splat(k.f32(0.0), kLanes);
    Value scores = ob.create<memref::AllocaOp>(
        k.location(), MemRefType::get({kKeyBlock}, ob.getF32Type()),
        ob.getI64IntegerAttr(64));
    k.loop(zero, k.dim(q, 0), [&](Value b) {
      Value kb = keyRow(k, in, b);
      Value rowKeys = keyCount;
      if (lengths)
        rowKeys = k.clampedIndex(k.load(lengths, {b}), zero, keyCount);
      k.loop(zero, k.index(heads), [&](Value h) {
        Value base = k.mulIndex(h, k.index(dModel / heads));
        auto column = [&](int64_t c) {
          return k.addIndex(base, k.index(c * kLanes));
        };
        k.loop(zero, k.dim(q, 1), [&](Value t) {
          Value visible = rowKeys;
          if (causal)
            visible = k.minIndex(
                visible, k.addIndex(k.addIndex(queryOffset, t), k.index(1)));
          SmallVector<Value> query;
          for (int64_t c = 0; c < chunks; ++c)
            query.push_back(k.vload(q, {b, t, column(c)}, kLanes));
          // Scores of keys first..first+count-1 into scores[j0..].
          auto scoreKeys = [&](Value first, Value j0, int64_t count) {
            SmallVector<Value> acc(count, zeros);
            for (int64_t c = 0; c < chunks; ++c)
              for (int64_t i = 0; i < count; ++i) {
                Value kj = k.addIndex(k.addIndex(first, j0), k.index(i));
                acc[i] = k.fma(query[c], k.vload(key, {kb, kj, column(c)}, kLanes),
                               acc[i]);
              }
            for (int64_t i = 0; i < count; ++i)
              k.store(k.mul(k.sumElements(acc[i]), scale), scores,
                      {k.addIndex(j0, k.index(i))});
          };
          auto blockStep = [&](Value first, ValueRange carried) {
            Value m = carried[0], l = carried[1];
            Value n = k.minIndex(
                block, k.addIndex(visible, k.mulIndex(first, k.index(-1))));
            // n rounded down to whole groups.
            Value grouped = k.mulIndex(
                ob.create<arith::DivUIOp>(k.location(), n,
                                          k.index(kKeyGroup)),
                k.index(kKeyGroup));
            k.loop(
                zero, grouped,
                [&](Value j) { scoreKeys(first, j, kKeyGroup); },
                k.index(kKeyGroup));
            k.loop(grouped, n, [&](Value j) { scoreKeys(first, j, 1); });
            Value blockMax = k.reduce(zero, n, {lowest},
                                      [&](Value j, ValueRange bm) {
                                        return SmallVector<Value>{
                                            k.max(bm[0], k.load(scores, {j}))};
                                      })[0];
            Value newMax = k.max(m, blockMax);
            Value rescale = k.exp(k.sub(m, newMax));
            Value blockSum = k.reduce(
                zero, n, {k.f32(0.0)}, [&](Value j, ValueRange acc) {
                  Value w = k.exp(k.sub(k.load(scores, {j}), newMax));
                  k.store(w, scores, {j});
                  return SmallVector<Value>{k.add(acc[0], w)};
                })[0];
            Value rescaleVector = k.splat(rescale, kLanes);
            SmallVector<Value> sums;
            for (int64_t c = 0; c < chunks; ++c)
              sums.push_back(k.mul(carried[2 + c], rescaleVector));
            sums = k.reduce(zero, n, sums, [&](Value j, ValueRange acc) {
              Value w = k.splat(k.load(scores, {j}), kLanes);
              Value kj = k.addIndex(first, j);
              SmallVector<Value> next;
              for (int64_t c = 0; c < chunks; ++c)
                next.push_back(
                    k.fma(w, k.vload(value, {kb, kj, column(c)}, kLanes), acc[c]));
              return next;
            });
            SmallVector<Value> result{newMax,
                                      k.add(k.mul(l, rescale), blockSum)};
            result.append(sums);
            return result;
          };
          SmallVector<Value> init{lowest, k.f32(0.0)};
          init.append(chunks, zeros);
          SmallVector<Value> final =
              k.reduce(zero, visible, init, blockStep, block);
          Value sum = final[1];
          // A query with no visible key keeps zeros.
          Value any = ob.create<arith::CmpFOp>(
              k.location(), arith::CmpFPredicate::OGT, sum, k.f32(0.0));
          Value inv = k.splat(
              ob.create<arith::SelectOp>(k.location(), any,
                                         k.div(k.f32(1.0), sum), k.f32(0.0)),
              kLanes);
          for (int64_t c = 0; c < chunks; ++c)
            k.vstore(k.mul(final[2 + c], inv), out, {b, t, column(c)});
        });
      });
    });
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
                                                  RewritePatternSet &patterns) {
  patterns.add<AttentionLowering, CacheWriteLowering>(converter,
                                                      patterns.getContext());
}

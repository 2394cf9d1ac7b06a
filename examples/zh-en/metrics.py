"""Corpus BLEU and chrF as sacreBLEU computes them (for training logs; the
reported numbers come from `tfmc score`, which implements the same rules).

BLEU: 13a tokenisation, n-grams 1..4, brevity penalty, 'exp' smoothing.
chrF: character n-grams 1..6 with whitespace removed, beta 2, statistics
summed over the corpus, precision and recall averaged over the orders.
"""

import math
import re
from collections import Counter

_13A = [
    (re.compile(r"([\{-\~\[-\` -\&\(-\+\:-\@\/])"), r" \1 "),
    (re.compile(r"([^0-9])([\.,])"), r"\1 \2 "),
    (re.compile(r"([\.,])([^0-9])"), r" \1 \2"),
    (re.compile(r"([0-9])(-)"), r"\1 \2 "),
]


def tokenize_13a(line):
    line = line.replace("<skipped>", "").replace("-\n", "").replace("\n", " ")
    if "&" in line:
        line = line.replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")
    line = f" {line} "
    for rx, sub in _13A:
        line = rx.sub(sub, line)
    return line.split()


def _ngrams(tokens, n):
    return Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))


def corpus_bleu(hyps, refs):
    correct, total = [0] * 4, [0] * 4
    hyp_len = ref_len = 0
    for h, r in zip(hyps, refs):
        ht, rt = tokenize_13a(h), tokenize_13a(r)
        hyp_len += len(ht)
        ref_len += len(rt)
        for n in range(1, 5):
            hc, rc = _ngrams(ht, n), _ngrams(rt, n)
            correct[n - 1] += sum(min(c, rc[g]) for g, c in hc.items())
            total[n - 1] += max(len(ht) - n + 1, 0)
    if not any(correct):
        return 0.0
    precisions = [0.0] * 4
    smooth = 1.0
    for n in range(4):
        if total[n] == 0:
            break
        if correct[n] == 0:
            smooth *= 2
            precisions[n] = 100.0 / (smooth * total[n])
        else:
            precisions[n] = 100.0 * correct[n] / total[n]
    if hyp_len == 0:
        return 0.0
    bp = 1.0 if hyp_len >= ref_len else math.exp(1 - ref_len / hyp_len)
    logs = [math.log(p) if p > 0 else -9999999999 for p in precisions]
    return bp * math.exp(sum(logs) / 4)


def corpus_chrf(hyps, refs, order=6, beta=2.0):
    stats = [[0, 0, 0] for _ in range(order)]  # hyp n-grams, ref n-grams, matches
    for h, r in zip(hyps, refs):
        h, r = "".join(h.split()), "".join(r.split())
        for n in range(1, order + 1):
            hc = Counter(h[i:i + n] for i in range(len(h) - n + 1))
            rc = Counter(r[i:i + n] for i in range(len(r) - n + 1))
            stats[n - 1][1] += sum(rc.values())
            if rc:  # sacreBLEU counts no hypothesis n-grams the reference cannot have
                stats[n - 1][0] += sum(hc.values())
                stats[n - 1][2] += sum(min(c, rc[g]) for g, c in hc.items())
    prec = rec = 0.0
    eff = 0
    for nh, nr, m in stats:
        if nh > 0 and nr > 0:
            prec += m / nh
            rec += m / nr
            eff += 1
    if eff == 0:
        return 0.0
    prec, rec = prec / eff, rec / eff
    f = beta * beta
    return 100.0 * (1 + f) * prec * rec / (f * prec + rec) if prec + rec > 0 else 0.0

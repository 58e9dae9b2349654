"""The fingerprint-correlation audit, vectorized: the same answers as `fcorr.audit` (the plain
reference, spec 004 sections 1.2, 1.6, 2.8), computed with numpy on bit masks, so a release with
thousands of buckets (millions of linkable pairs) is audited in seconds.

Only the pair scan (fcorr decisions F3-F8) is new here.  Input checks, record homes, PriRisk
and the summary are the reference's own functions (`fcorr.normalize_st`, `normalize_gt`,
`_homes`, `_pririsk`, `_summary`), and the listed pairs are built by `fcorr._finding`.  The unit
tests compare this module with the reference on the paper's tables and on random releases.

Representation.  Each SA's values get codes 0..V-1 and bucket b's value set of SA a is a row of
ceil(V / 64) uint64 words (bit x set iff code x occurs).  The intersection of two buckets is the
AND of their rows; it holds exactly one value iff exactly one word is nonzero and that word is
a power of two (w & (w - 1) == 0): no popcount except for the number of shared delta values
(a byte table, only for breaching pairs).

Scan.  Buckets are taken in blocks of rows (sorted bucket order, as the reference sorts pairs);
a block is compared with every bucket that shares a delta value with one of its rows (all of
them when delta has few values): one (rows x columns x words) AND per SA, then comparisons.
The pair counts use the pairs i < j; the vulnerable records of a bucket need all of its
partners, so each block sees its rows against both halves of the square (twice the arithmetic,
no state carried between blocks).  The interrupt tick runs once per block.

Vulnerable records (F8), with a source: record r of bucket b, true delta value v, is covered iff
a partner b' of b in an eq. (5)-breaching pair holds v; it is correct iff moreover, for some SA
a outside zeta and delta, b and b' meet in one value on a and b' holds r's own value of a (the
one value is then r's).  Per block the breaching rows, and per such SA the singleton rows, are
packed into bits over the buckets and ANDed with the per-value bucket bit sets of delta and a.
Without a source the covered count comes from the ST delta counts, as in the reference.

Memory: the masks (buckets x words, per SA), with a source the per-value bucket bit sets (values x
buckets / 8 bytes per SA outside zeta, and delta) and the record codes, and one block of at most
`BLOCK` pair cells per mask word (temporaries of a few tens of MB).  It grows with buckets times
distinct values and with records, never with the number of pairs.  Disclosures are counted, not
listed (`Vulnerability.disclosures` is None): a (p,k) release on Adult has 20 million.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import fcorr as ref

__all__ = ["FastAudit", "audit", "BLOCK"]

BLOCK = 1 << 19  # pair cells (block rows x columns x mask words) per block
_ONE = np.uint64(1)
_POP8 = np.array([bin(i).count("1") for i in range(256)], dtype=np.int64)


@dataclass(frozen=True)
class FastAudit:
    """What `fcorr.Audit` says, without the full list of pairs and disclosures.

    pairs          `fcorr.PairFinding` of the first `detail` linkable pairs that have a
                   singleton intersection, in (i, j) order (the reference's order)
    vulnerability  `fcorr.Vulnerability` with disclosures None (their number is in the summary)
    """

    model: ref.SAModel
    pairs: tuple
    vulnerability: ref.Vulnerability
    risk: ref.PriRisk
    summary: dict


def _encode(order, buckets, a):
    """(value -> code, per bucket the int bit mask of its codes) for SA a."""
    code, masks = {}, []
    for bid in order:
        m = 0
        for v in buckets[bid].values[a]:
            x = code.get(v)
            if x is None:
                x = code[v] = len(code)
            m |= 1 << x
        masks.append(m)
    return code, masks


def _words(masks, nbits):
    """Int masks -> (len(masks), ceil(nbits / 64)) uint64 words, bit x in word x // 64."""
    w = max(1, (nbits + 63) // 64)
    buf = b"".join(m.to_bytes(8 * w, "little") for m in masks)
    return np.frombuffer(buf, dtype="<u8").reshape(len(masks), w).astype(np.uint64)


def _bytes(masks, nbits):
    """Int masks -> (len(masks), ceil(nbits / 8)) uint8, bit x in byte x // 8 (packbits 'little')."""
    w = max(1, (nbits + 7) // 8)
    buf = b"".join(m.to_bytes(w, "little") for m in masks)
    return np.frombuffer(buf, dtype=np.uint8).reshape(len(masks), w)


def _columns(order, buckets, a, code):
    """Per code of SA a, the buckets holding it as bits over the bucket order (uint8 rows)."""
    cols = [0] * len(code)
    for n, bid in enumerate(order):
        for v in buckets[bid].values[a]:
            cols[code[v]] |= 1 << n
    return _bytes(cols, len(order))


def _single(z):
    """Per cell of AND-ed mask words (..., words): does the intersection hold exactly one value?"""
    if z.shape[-1] == 1:
        z = z[..., 0]
        return (z != 0) & ((z & (z - _ONE)) == 0)
    return ((z != 0).sum(axis=-1) == 1) & ((z & (z - _ONE)) == 0).all(axis=-1)


def _pack(block_bits, cand, n):
    """(rows x candidate columns) booleans -> (rows x ceil(n / 8)) bits over all n buckets."""
    full = np.zeros((block_bits.shape[0], n), dtype=bool)
    full[:, cand] = block_bits
    return np.packbits(full, axis=1, bitorder="little")


class _Records:
    """The published records sorted by home bucket: home index, delta code, and the codes of the
    SAs outside zeta (the source's true values), with their record ids."""

    def __init__(self, rows, homes, source, index, model, dcode, codes, ident):
        recs = sorted(((index[homes[r.rid]], r.rid) for r in rows), key=lambda t: t[0])
        self.rid = [rid for _, rid in recs]
        self.home = np.array([h for h, _ in recs], dtype=np.int64)
        self.dv = np.array([dcode[source[rid][model.delta]] for rid in self.rid], dtype=np.int64)
        att = model.attacked
        self.x = {k: np.array([codes[k][source[rid][att[k]]] for rid in self.rid], dtype=np.int64)
                  for k in ident}
        self.covered = np.zeros(len(self.rid), dtype=bool)
        self.correct = np.zeros(len(self.rid), dtype=bool)


def _scan(buckets, model, rows, homes, source, detail, tick, block):
    """(tally, number of disclosures, listed findings, Vulnerability) of the release."""
    order = ref._sorted(buckets)
    n = len(order)
    index = {b: i for i, b in enumerate(order)}
    att = model.attacked
    ident = [k for k, a in enumerate(att) if a not in model.zeta]
    dcode, dmasks = _encode(order, buckets, model.delta)
    dm = _words(dmasks, len(dcode))
    codes, masks = [], []
    for a in att:
        c, m = _encode(order, buckets, a)
        codes.append(c)
        masks.append(_words(m, len(c)))
    recs = None
    if source is not None:
        recs = _Records(rows, homes, source, index, model, dcode, codes, ident)
        dcol = _columns(order, buckets, model.delta, dcode)
        acol = {k: _columns(order, buckets, att[k], codes[k]) for k in ident}
    else:
        exposed = np.zeros(dm.shape, dtype=np.uint64)  # per bucket, the delta values it discloses

    tally = dict.fromkeys(ref.TALLY, 0)
    n_disc = 0
    found = []
    width = max([dm.shape[1]] + [m.shape[1] for m in masks])
    step = max(1, block // max(1, n * width))
    nbytes = (n + 7) // 8
    rstep = max(1, block // max(1, nbytes))
    for s in range(0, n, step):
        tick()
        e = min(n, s + step)
        here = np.arange(s, e)[:, None]
        # the columns: buckets sharing a delta value with a row of the block
        u = np.bitwise_or.reduce(dm[s:e], axis=0)
        cand = np.flatnonzero((dm & u).any(axis=1))
        dz = dm[s:e, None, :] & dm[None, cand, :]
        link = (dz != 0).any(axis=-1) & (cand[None, :] != here)
        upper = link & (cand[None, :] > here)
        n_single = np.zeros(link.shape, dtype=np.int32)
        n_ident = np.zeros(link.shape, dtype=np.int32)
        single = {}
        for k in range(len(att)):
            sk = _single(masks[k][s:e, None, :] & masks[k][None, cand, :]) & link
            n_single += sk
            if k in ident:
                n_ident += sk
                single[k] = sk
        eq4 = (n_single > 0) & upper
        eq5 = n_ident > 0  # both halves: the rows' vulnerable records need every partner
        eq5_up = eq5 & upper
        ff = (n_single == len(att)) & upper if att else np.zeros(link.shape, dtype=bool)
        tally["n_linkable_pairs"] += int(upper.sum())
        tally["n_singleton_cells"] += int(n_single[upper].sum())
        tally["n_identifying_singleton_cells"] += int(n_ident[upper].sum())
        tally["n_eq4_violations"] += int(eq4.sum())
        tally["n_eq5_violations"] += int(eq5_up.sum())
        tally["n_ffcorr"] += int(ff.sum())
        tally["n_pfcorr"] += int((eq5_up & ~ff).sum())
        if eq5_up.any():  # each disclosure: a shared delta value and an identifying singleton
            ii, jj = np.nonzero(eq5_up)
            shared = _POP8[np.ascontiguousarray(dz[ii, jj]).view(np.uint8)].sum(axis=1)
            n_disc += int((shared * n_ident[ii, jj]).sum())
        if len(found) < detail and eq4.any():
            ii, jj = np.nonzero(eq4)
            for i, j in zip(ii[:detail - len(found)].tolist(), jj[:detail - len(found)].tolist()):
                bi, bj = order[s + i], order[int(cand[j])]
                shared = buckets[bi].values[model.delta] & buckets[bj].values[model.delta]
                found.append(ref._finding(bi, bj, frozenset(shared), buckets[bi], buckets[bj], model))
        if not eq5.any():
            continue
        if recs is None:
            exposed[s:e] = np.bitwise_or.reduce(np.where(eq5[:, :, None], dz, np.uint64(0)), axis=1)
            continue
        lo, hi = np.searchsorted(recs.home, [s, e])
        if lo == hi:
            continue
        bits = _pack(eq5, cand, n)
        sbits = {k: _pack(single[k], cand, n) for k in ident if single[k].any()}
        for r0 in range(lo, hi, rstep):
            tick()
            r1 = min(hi, r0 + rstep)
            at = recs.home[r0:r1] - s
            dv = dcol[recs.dv[r0:r1]]
            recs.covered[r0:r1] = (bits[at] & dv).any(axis=1)
            hit = np.zeros(r1 - r0, dtype=bool)
            for k, sb in sbits.items():
                hit |= (sb[at] & dv & acol[k][recs.x[k][r0:r1]]).any(axis=1)
            recs.correct[r0:r1] = hit
    if recs is not None:
        covered = frozenset(rid for rid, c in zip(recs.rid, recs.covered.tolist()) if c)
        correct = frozenset(rid for rid, c in zip(recs.rid, recs.correct.tolist()) if c)
        vul = ref.Vulnerability(None, covered, correct, len(covered), len(correct))
    else:
        decode = {x: v for v, x in dcode.items()}
        pairs = [(order[i], x) for i in np.flatnonzero(exposed.any(axis=1)).tolist()
                 for x in range(64 * exposed.shape[1]) if int(exposed[i, x // 64]) >> (x % 64) & 1]
        if all(model.delta in buckets[b].counts for b, _ in pairs):
            count = sum(buckets[b].counts[model.delta][decode[x]] for b, x in pairs)
            vul = ref.Vulnerability(None, None, None, count, 0 if not n_disc else None)
        else:
            vul = ref.Vulnerability(None, None, None, None, None)
    return tally, n_disc, tuple(found), vul


def audit(gt, st, model: ref.SAModel, source=None, sizes=None, *, detail=50, tick=None,
          block=BLOCK) -> FastAudit:
    """`fcorr.audit`, vectorized: same summary, vulnerable records and PriRisk; lists the first
    `detail` pairs with a singleton intersection.  `tick` is called once per block of pairs (the
    database passes one that lets a cancel or statement_timeout through)."""
    buckets = ref.normalize_st(st, model)
    rows = ref.normalize_gt(gt, buckets)
    homes = ref._homes(rows, buckets, model, source)
    tally, n_disc, found, vul = _scan(buckets, model, rows, homes, source, detail,
                                      tick or (lambda: None), block)
    risk = ref._pririsk(rows, buckets, sizes, homes)
    summary = ref._summary(model, len(buckets), len(rows), risk, tally, n_disc, vul)
    return FastAudit(model, found, vul, risk, summary)

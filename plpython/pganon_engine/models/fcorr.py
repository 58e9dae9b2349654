"""Fingerprint-correlation (fcorr) auditor for GT/ST releases with several sensitive attributes
(spec 004-ck-anonymization.md, sections 1.2, 1.5, 1.6, 2.8, 4.3 and 4.4).

This is the reference implementation: plain Python, no database, standard library only.  It
audits any release that publishes a generalized table GT linked by bucket id to a sensitive
table ST: (p, k)-angelization (one GT class <-> one batch), (c, k)-anonymization (one class ->
several fingerprint buckets) and later GT/ST methods.  It visits every linkable pair one by one;
releases in the database are audited by `fcorr_fast`, the same decisions vectorized with numpy
and checked against this module in the unit tests.

Input model (neutral; build it from whatever the release stores):

- ``model`` = `sa_model(sensitive, delta, identified_by, zeta)`: the SA names, the linking
  attribute delta (the single maximum-weighted SA after the external factor chi) and the
  dependency map ``identified_by[s] = SAs that identify s`` (Table 11).  Weights and zeta follow.
- ``st``: mapping ``bucket id -> {SA name -> values}``.  ``values`` is either an iterable of
  the distinct values of that SA in the bucket (what Tables 3 and 6 publish) or a mapping
  ``value -> count`` where the release publishes multiplicities.  Bucket ids must be hashable
  and not tuples/lists/sets (those mean "several buckets" in GT).  Values must be hashable and
  are compared by equality only: canonicalise spellings before (spec section 7.18).
- ``gt``: one row per published record, as `GTRow(rid, qi, buckets, ec=None, home=None)`, a
  tuple ``(rid, qi, buckets[, ec[, home]])`` or a mapping with those keys (``bucket`` is
  accepted for ``buckets``).  ``qi`` is the row's generalized QI vector, any hashable value
  (e.g. ``('*', (21, 27), (34548, 37506))``).  ``buckets`` is one bucket id (record-level or
  one-to-one links) or a list/tuple/set of ids (one-to-many links).  ``ec`` names the
  equivalence class when the release has one; by default the class is the QI vector itself.
  ``home`` is the bucket that holds the record's own SA values; it defaults to the only link.
  A group-level GT (Table 2: one row per batch) is expanded to one row per member.
- ``source`` (optional, evaluation only): mapping ``rid -> {SA name -> true value}``.  Needed
  for the record ids of vulnerable records and for the ``correct`` variant.  Source records
  that GT does not publish (suppressed) are ignored.
- ``sizes`` (optional): mapping ``bucket id -> number of records``, for PriRisk when neither
  ST counts nor GT homes give the size.

Decisions (spec section numbers; "section 7.n" is item n of the ambiguity register):

- F1  Weights (1.3, 7.2): ``w[s] = |identified_by[s]|``; xi = the SAs of maximum weight.  delta
      is given explicitly (the chi tie-break, 7.3) and must belong to xi.
- F2  zeta (1.2, 1.5, 2.6 step 2): the SAs other than delta whose weight is the minimum over
      all SAs, unless given.  When that would be every SA other than delta (e.g. no dependency
      map), zeta is empty: no attribute is "lower" than the others, so none is exempt.
- F3  Linkable pair (1.2, 7.8): an unordered pair of distinct buckets whose delta value sets
      intersect; counted once however many delta values they share (the shared values are kept).
      This is the paper's count: 3 for Table 3, 1 for Table 6.
- F4  Intersections (eq. 3): for every linkable pair and every SA other than delta, the
      intersection of the two buckets' distinct-value sets (counts play no part).  Only
      pairwise intersections; the k-way hardening of 1.5 is not done (the paper does not).
- F5  eq. (4) holds for a pair iff no non-delta SA has an intersection of exactly one value;
      eq. (5) iff no SA outside zeta and delta has one (7.8: "0 or > 1" means ``|I| != 1``).
- F6  Breach kind per pair (Def. 6, 1.2): ``'ffcorr'`` when every non-delta SA (zeta included)
      has a singleton intersection; otherwise ``'pfcorr'`` when some SA outside zeta and delta
      has one; otherwise none.  A singleton on a zeta SA alone is leakage, not a breach.  The
      kinds are exclusive; a pair is a breach iff it has a kind.
- F7  Disclosure (2.8): ``(i, j, v, a, x)`` for every linkable pair (i, j), every shared delta
      value v and every SA a outside zeta and delta whose intersection is ``{x}``.  A pair that
      shares several delta values attributes x to each of them (the adversary cannot tell
      which; the paper's examples never have this case).  No "lifting" (2.8 optional, 7.19).
- F8  Vulnerable records (2.8, 4.3, 7.16): ``covered`` = records r whose own bucket is i or j
      of a disclosure and whose true delta value is its v; ``correct`` = covered records whose
      true value of the disclosed SA equals x for at least one such disclosure.  With a source
      both are record-id sets.  Without one, the covered COUNT comes from the ST delta counts
      when the release has them; otherwise covered and correct are None.
- F9  A record's own bucket: ``home``, else its only link, else (with a source) the single
      linked bucket whose value sets hold all its true values.  With a source, every bucket's
      value sets (and counts) must equal those of the records it holds, or the audit stops.
- F10 PriRisk (1.6, 4.4, 7.12): for a class E linked to the bucket set B(E) (the union of its
      rows' links), ``r = |E|``, ``n = sum over B(E) of |E| * |FB|``, PriRisk = r/n, compared
      with 1/|E|.  The sum is computed, so Table 5's first class gives 4/36 (0.111), not the
      paper's misprinted 4/42.  |FB| comes from ``sizes``, else ST counts, else the GT rows
      whose home it is.
- F11 PriRisk per distinguishable QI sub-pattern (1.6 caveat): the rows of one class with the
      same published QI vector, same formula (an adversary who knows the target's QI values
      sees only the matching rows).  Table 5's two F rows link to FB1 only: 1/4, not 1/9.
- F12 Summary: PriRisk max and (unweighted) mean over classes, max over sub-patterns; every
      value is an int, float, bool, str, list or None, so it can be stored as json.
- F13 Output order never depends on input order: buckets, values and classes are sorted
      (natural order, or by repr when the ids do not compare).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from itertools import combinations

__all__ = [
    "SAModel",
    "GTRow",
    "Bucket",
    "LinkablePair",
    "PairFinding",
    "Disclosure",
    "Vulnerability",
    "RiskGroup",
    "PriRisk",
    "Audit",
    "sa_model",
    "normalize_st",
    "normalize_gt",
    "linkable_pairs",
    "fcorr",
    "disclosures",
    "vulnerable_records",
    "pririsk",
    "audit",
]

_MULTI = (list, tuple, set, frozenset)


def _sorted(xs):
    """Deterministic order for ids/values: natural order, or by (type, repr) if they do not compare."""
    xs = list(xs)
    try:
        return sorted(xs)
    except TypeError:
        return sorted(xs, key=lambda x: (type(x).__name__, repr(x)))


# --------------------------------------------------------------------------------------------
# SA model: weights, delta, zeta
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SAModel:
    """The sensitive attributes and their dependency metadata (spec 1.3, Table 11)."""

    sensitive: tuple  # SA names, declared order
    delta: str  # the linking attribute
    weights: dict  # SA -> number of SAs that identify it
    xi: frozenset  # maximum-weighted SAs
    zeta: frozenset  # minimum-weighted SAs exempt under eq. (5); never contains delta

    @property
    def attacked(self):
        """The SAs intersected by the attack: every SA but delta, declared order."""
        return tuple(s for s in self.sensitive if s != self.delta)

    @property
    def identifying(self):
        """The SAs whose singleton intersection is a breach: not delta, not in zeta."""
        return tuple(s for s in self.attacked if s not in self.zeta)


def sa_model(sensitive, delta, identified_by=None, zeta=None) -> SAModel:
    """Validate the SA list and dependency map; derive weights, xi and zeta (F1, F2)."""
    if isinstance(sensitive, str) or not isinstance(sensitive, Iterable):
        raise ValueError("sensitive must be a list of SA names, e.g. ['physician', 'symptom']")
    sensitive = tuple(sensitive)
    if not sensitive:
        raise ValueError("sensitive is empty; give the names of the sensitive attributes")
    dup = _sorted(s for s, c in Counter(sensitive).items() if c > 1)
    if dup:
        raise ValueError(f"sensitive lists {dup} more than once; give each SA once")
    if delta not in sensitive:
        raise ValueError(f"delta {delta!r} is not one of the sensitive attributes {list(sensitive)}; "
                         "pass the SA that links buckets (the physician in the paper)")
    identified_by = {} if identified_by is None else identified_by
    if not isinstance(identified_by, Mapping):
        raise ValueError("identified_by must map each SA to the SAs that identify it")
    weights = {s: 0 for s in sensitive}
    for s, by in identified_by.items():
        if s not in weights:
            raise ValueError(f"identified_by names {s!r}, which is not a sensitive attribute; "
                             "declare it in sensitive or drop it from the map")
        by = {by} if isinstance(by, str) else set(by)
        bad = _sorted(b for b in by if b not in weights)
        if bad:
            raise ValueError(f"identified_by[{s!r}] names {bad}, which are not sensitive attributes")
        if s in by:
            raise ValueError(f"identified_by[{s!r}] contains {s!r} itself; an SA does not identify itself")
        weights[s] = len(by)
    wmax = max(weights.values())
    xi = frozenset(s for s, w in weights.items() if w == wmax)
    if delta not in xi:
        raise ValueError(f"delta {delta!r} has weight {weights[delta]} but the maximum weight is {wmax} "
                         f"(xi = {_sorted(xi)}); choose delta among xi or correct identified_by")
    if zeta is None:
        wmin = min(weights.values())
        zeta = {s for s in sensitive if s != delta and weights[s] == wmin}
        if zeta == set(sensitive) - {delta}:
            zeta = set()
    else:
        zeta = {zeta} if isinstance(zeta, str) else set(zeta)
        bad = _sorted(z for z in zeta if z not in weights)
        if bad:
            raise ValueError(f"zeta names {bad}, which are not sensitive attributes")
        if delta in zeta:
            raise ValueError(f"zeta contains delta {delta!r}; the linking attribute cannot be exempt")
    return SAModel(sensitive, delta, weights, xi, frozenset(zeta))


# --------------------------------------------------------------------------------------------
# Release input: ST buckets and GT rows
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Bucket:
    """One ST bucket: distinct values per SA, counts per SA where published, size if known."""

    bid: object
    values: dict  # SA -> frozenset of distinct values
    counts: dict  # SA -> {value: count}, only the SAs published with counts
    size: object = None  # number of records when the counts give it, else None


@dataclass(frozen=True)
class GTRow:
    """One published GT row (one record): generalized QI vector and its bucket link(s)."""

    rid: object
    qi: object
    buckets: frozenset
    ec: object = None
    home: object = None

    @property
    def cls(self):
        """The equivalence class: ``ec`` when given, else the QI vector."""
        return self.qi if self.ec is None else self.ec


def _hashable(x, what):
    try:
        hash(x)
    except TypeError:
        raise ValueError(f"{what} {x!r} is not hashable; use tuples, strings or numbers") from None
    return x


def normalize_st(st, model: SAModel) -> dict:
    """ST as ``{bid: Bucket}``; checks every bucket has a non-empty value set for every SA."""
    if isinstance(st, Mapping) and all(isinstance(b, Bucket) for b in st.values()):
        return dict(st)
    if not isinstance(st, Mapping):
        raise ValueError("st must map bucket id -> {SA name -> values}")
    out = {}
    for bid, cells in st.items():
        if isinstance(bid, _MULTI):
            raise ValueError(f"bucket id {bid!r} is a collection; use a number or a string")
        if not isinstance(cells, Mapping):
            raise ValueError(f"bucket {bid!r} must map SA name -> values, got {type(cells).__name__}")
        extra = _sorted(a for a in cells if a not in model.weights)
        if extra:
            raise ValueError(f"bucket {bid!r} has SA(s) {extra} that the model does not declare; "
                             "add them to sensitive or drop them from ST")
        values, counts, sizes = {}, {}, set()
        for a in model.sensitive:
            if a not in cells:
                raise ValueError(f"bucket {bid!r} has no values for SA {a!r}; every bucket needs every SA")
            cell = cells[a]
            if isinstance(cell, Mapping):
                cnt = {}
                for v, c in cell.items():
                    _hashable(v, f"bucket {bid!r}, SA {a!r}: value")
                    if isinstance(c, bool) or not isinstance(c, int) or c < 1:
                        raise ValueError(f"bucket {bid!r}, SA {a!r}: count {c!r} of value {v!r} "
                                         "must be an integer >= 1")
                    cnt[v] = c
                counts[a] = cnt
                sizes.add(sum(cnt.values()))
                vals = frozenset(cnt)
            elif isinstance(cell, (str, bytes)) or not isinstance(cell, Iterable):
                raise ValueError(f"bucket {bid!r}, SA {a!r}: give a set of values or a value->count "
                                 f"mapping, not {cell!r}")
            else:
                vals = frozenset(_hashable(v, f"bucket {bid!r}, SA {a!r}: value") for v in cell)
            if not vals:
                raise ValueError(f"bucket {bid!r} has an empty value set for SA {a!r}; every record "
                                 "needs a value (NULLs are not supported: encode them as a value)")
            values[a] = vals
        if len(sizes) > 1:
            raise ValueError(f"bucket {bid!r}: the counts of different SAs add up to {_sorted(sizes)}; "
                             "every SA's counts must sum to the bucket's number of records")
        out[bid] = Bucket(bid, values, counts, sizes.pop() if sizes else None)
    return out


def _row(x):
    if isinstance(x, GTRow):
        return x.rid, x.qi, x.buckets, x.ec, x.home
    if isinstance(x, Mapping):
        unknown = _sorted(k for k in x if k not in ("rid", "qi", "buckets", "bucket", "ec", "home"))
        if unknown:
            raise ValueError(f"GT row has unknown key(s) {unknown}; use rid, qi, buckets, ec, home")
        if "buckets" in x and "bucket" in x:
            raise ValueError("GT row gives both bucket and buckets; give one")
        try:
            return x["rid"], x["qi"], x["buckets"] if "buckets" in x else x["bucket"], x.get("ec"), x.get("home")
        except KeyError as e:
            raise ValueError(f"GT row {dict(x)!r} has no {e.args[0]!r}") from None
    if isinstance(x, (tuple, list)) and 3 <= len(x) <= 5:
        x = tuple(x) + (None,) * (5 - len(x))
        return x
    raise ValueError(f"GT row {x!r} must be a GTRow, a mapping or a tuple (rid, qi, buckets[, ec[, home]])")


def normalize_gt(gt, buckets: dict) -> list:
    """GT rows as `GTRow`s; checks unique record ids and that every link names an ST bucket."""
    rows, seen = [], set()
    for x in gt:
        rid, qi, links, ec, home = _row(x)
        _hashable(rid, "record id")
        _hashable(qi, f"record {rid!r}: QI vector")
        _hashable(ec, f"record {rid!r}: class id")
        if rid in seen:
            raise ValueError(f"record id {rid!r} appears in more than one GT row; ids must be unique")
        seen.add(rid)
        links = frozenset(links) if isinstance(links, _MULTI) else frozenset([links])
        if not links:
            raise ValueError(f"record {rid!r} links to no bucket; give at least one bucket id")
        missing = _sorted(b for b in links if b not in buckets)
        if missing:
            raise ValueError(f"record {rid!r} links to bucket(s) {missing} that ST does not have")
        if home is None and len(links) == 1:
            home = next(iter(links))
        if home is not None and home not in links:
            raise ValueError(f"record {rid!r}: home bucket {home!r} is not one of its links {_sorted(links)}")
        rows.append(GTRow(rid, qi, links, ec, home))
    return rows


def _homes(rows, buckets, model, source):
    """rid -> own bucket (F9); rows whose home cannot be known map to None.  With a source,
    checks that every bucket's published values are exactly those of its records."""
    homes = {r.rid: r.home for r in rows}
    if source is None:
        return homes
    if not isinstance(source, Mapping):
        raise ValueError("source must map record id -> {SA name -> true value}")
    for r in rows:
        if r.rid not in source:
            raise ValueError(f"record {r.rid!r} is published in GT but missing from source; "
                             "pass the source table the release was built from")
        truth = source[r.rid]
        missing = [a for a in model.sensitive if a not in truth]
        if missing:
            raise ValueError(f"source record {r.rid!r} has no value for SA(s) {missing}")
        if homes[r.rid] is None:
            fits = [b for b in _sorted(r.buckets)
                    if all(truth[a] in buckets[b].values[a] for a in model.sensitive)]
            if not fits:
                raise ValueError(f"record {r.rid!r}: its true SA values fit none of its linked buckets "
                                 f"{_sorted(r.buckets)}; the release does not come from this source")
            if len(fits) > 1:
                raise ValueError(f"record {r.rid!r} fits several linked buckets {fits}; give its "
                                 "home bucket in the GT row (home=...)")
            homes[r.rid] = fits[0]
    members = defaultdict(list)
    for rid, b in homes.items():
        members[b].append(rid)
    for b in _sorted(buckets):
        bk = buckets[b]
        for a in model.sensitive:
            got = Counter(source[rid][a] for rid in members.get(b, ()))
            if set(got) != bk.values[a]:
                raise ValueError(
                    f"bucket {b!r}, SA {a!r}: ST has {_sorted(bk.values[a])} but its records have "
                    f"{_sorted(got)}; the release and the source disagree (pass the source the release "
                    "was built from, canonicalised the same way)")
            if a in bk.counts and dict(got) != bk.counts[a]:
                raise ValueError(f"bucket {b!r}, SA {a!r}: ST counts {bk.counts[a]} differ from its "
                                 f"records' counts {dict(got)}; the release and the source disagree")
    return homes


# --------------------------------------------------------------------------------------------
# The attack: linkable pairs, intersections, breaches, disclosures
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LinkablePair:
    """Buckets i < j sharing the delta values ``shared`` (F3)."""

    i: object
    j: object
    shared: frozenset


@dataclass(frozen=True)
class PairFinding:
    """eq. (3) for one linkable pair: the intersection per non-delta SA and what it breaks."""

    i: object
    j: object
    shared: frozenset  # shared delta values
    cells: dict  # SA -> frozenset intersection, non-delta SAs in declared order
    singletons: dict  # SA -> the single value, for the cells of size 1
    eq4_ok: bool  # strict: no non-delta singleton
    eq5_ok: bool  # relaxed: no singleton outside zeta and delta
    kind: object  # 'ffcorr', 'pfcorr' or None (F6)

    @property
    def breach(self):
        return self.kind is not None


@dataclass(frozen=True)
class Disclosure:
    """The attack attributes ``value`` of SA ``sa`` to delta value ``delta_value`` (F7)."""

    i: object
    j: object
    delta_value: object
    sa: str
    value: object


def linkable_pairs(st, model: SAModel) -> list:
    """Every unordered pair of buckets sharing a delta value, sorted by (i, j) (F3)."""
    buckets = normalize_st(st, model)
    order = {b: n for n, b in enumerate(_sorted(buckets))}
    holders = defaultdict(list)
    for b in _sorted(buckets):
        for v in buckets[b].values[model.delta]:
            holders[v].append(b)
    shared = defaultdict(set)
    for v, bs in holders.items():
        for i, j in combinations(bs, 2):
            shared[(i, j)].add(v)
    return [LinkablePair(i, j, frozenset(vs))
            for (i, j), vs in sorted(shared.items(), key=lambda kv: (order[kv[0][0]], order[kv[0][1]]))]


def _finding(i, j, shared, bi: Bucket, bj: Bucket, model: SAModel) -> PairFinding:
    """eq. (3)-(5) and the breach kind (F4-F6) of the linkable pair (i, j) sharing ``shared``."""
    cells = {a: bi.values[a] & bj.values[a] for a in model.attacked}
    singles = {a: next(iter(s)) for a, s in cells.items() if len(s) == 1}
    eq4 = not singles
    eq5 = not any(a not in model.zeta for a in singles)
    if model.attacked and len(singles) == len(model.attacked):
        kind = "ffcorr"
    elif not eq5:
        kind = "pfcorr"
    else:
        kind = None
    return PairFinding(i, j, shared, cells, singles, eq4, eq5, kind)


def fcorr(st, model: SAModel) -> list:
    """eq. (3) for every linkable pair: intersections per non-delta SA, eq. (4)/(5), breach kind."""
    buckets = normalize_st(st, model)
    return [_finding(p.i, p.j, p.shared, buckets[p.i], buckets[p.j], model)
            for p in linkable_pairs(buckets, model)]


def disclosures(findings, model: SAModel) -> list:
    """The (pair, delta value, SA, value) attributions of the breaching singletons (F7)."""
    out = []
    for f in findings:
        for v in _sorted(f.shared):
            for a, x in f.singletons.items():
                if a not in model.zeta:
                    out.append(Disclosure(f.i, f.j, v, a, x))
    return out


# --------------------------------------------------------------------------------------------
# Vulnerable records
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Vulnerability:
    """Vulnerable records (F8).  Ids are None without a source; counts None when unknowable."""

    disclosures: tuple
    covered: object  # frozenset of record ids, or None
    correct: object  # frozenset of record ids, or None
    n_covered: object  # int or None
    n_correct: object  # int or None


def _vulnerability(rows, buckets, model, source, homes, findings):
    disc = tuple(disclosures(findings, model))
    exposed = {(b, d.delta_value) for d in disc for b in (d.i, d.j)}
    if source is not None:
        by_home = defaultdict(list)
        for d in disc:
            for b in (d.i, d.j):
                by_home[(b, d.delta_value)].append(d)
        covered, correct = set(), set()
        for r in rows:
            truth = source[r.rid]
            hits = by_home.get((homes[r.rid], truth[model.delta]))
            if hits:
                covered.add(r.rid)
                if any(truth[d.sa] == d.value for d in hits):
                    correct.add(r.rid)
        return Vulnerability(disc, frozenset(covered), frozenset(correct), len(covered), len(correct))
    if all(model.delta in buckets[b].counts for b, _ in exposed):
        n = sum(buckets[b].counts[model.delta][v] for b, v in exposed)
        return Vulnerability(disc, None, None, n, 0 if not disc else None)
    return Vulnerability(disc, None, None, None, None)


def vulnerable_records(gt, st, model: SAModel, source=None) -> Vulnerability:
    """Covered/correct vulnerable records of the fcorr attack (F8); source gives the record ids."""
    buckets = normalize_st(st, model)
    rows = normalize_gt(gt, buckets)
    homes = _homes(rows, buckets, model, source)
    return _vulnerability(rows, buckets, model, source, homes, fcorr(buckets, model))


# --------------------------------------------------------------------------------------------
# PriRisk
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RiskGroup:
    """PriRisk = r/n of one class or sub-pattern (F10, F11); bound = 1/|E|."""

    ec: object
    qi: object  # the sub-pattern's QI vector; None for a whole class
    rows: frozenset  # record ids
    buckets: frozenset  # linked buckets B(E)
    r: int
    n: int

    @property
    def ratio(self) -> Fraction:
        return Fraction(self.r, self.n)

    @property
    def risk(self) -> float:
        return self.r / self.n

    @property
    def bound(self) -> Fraction:
        return Fraction(1, len(self.rows))

    @property
    def within_bound(self) -> bool:
        return self.ratio <= self.bound


@dataclass(frozen=True)
class PriRisk:
    by_ec: dict  # class -> RiskGroup
    by_pattern: dict  # (class, qi) -> RiskGroup
    bucket_sizes: dict  # bucket -> |FB| used


def _bucket_sizes(rows, buckets, sizes, homes):
    sizes = {} if sizes is None else dict(sizes)
    for b, s in sizes.items():
        if b not in buckets:
            raise ValueError(f"sizes names bucket {b!r}, which ST does not have")
        if isinstance(s, bool) or not isinstance(s, int) or s < 1:
            raise ValueError(f"sizes[{b!r}] = {s!r}; a bucket size must be an integer >= 1")
        if buckets[b].size is not None and buckets[b].size != s:
            raise ValueError(f"sizes[{b!r}] = {s} but the ST counts of bucket {b!r} add up to "
                             f"{buckets[b].size}; drop sizes or fix it")
    homed = Counter(h for h in homes.values() if h is not None)
    unsure = set()
    for r in rows:
        if homes[r.rid] is None:
            unsure |= r.buckets
    out = {}
    for b in _sorted(buckets):
        if b in sizes:
            out[b] = sizes[b]
        elif buckets[b].size is not None:
            out[b] = buckets[b].size
        elif b not in unsure and homed[b]:
            out[b] = homed[b]
    return out


def _pririsk(rows, buckets, sizes, homes):
    size = _bucket_sizes(rows, buckets, sizes, homes)
    ecs, pats = defaultdict(list), defaultdict(list)
    for r in rows:
        ecs[r.cls].append(r)
        pats[(r.cls, r.qi)].append(r)

    def group(ec, qi, members):
        linked = frozenset().union(*(r.buckets for r in members))
        unknown = _sorted(b for b in linked if b not in size)
        if unknown:
            raise ValueError(f"the size of bucket(s) {unknown} is unknown: ST has no counts and some "
                             "rows linking to them have no home; pass sizes= or give home in GT")
        e = len(members)
        return RiskGroup(ec, qi, frozenset(r.rid for r in members), linked, e,
                         sum(e * size[b] for b in linked))

    by_ec = {ec: group(ec, None, ecs[ec]) for ec in _sorted(ecs)}
    by_pattern = {key: group(key[0], key[1], pats[key]) for key in _sorted(pats)}
    return PriRisk(by_ec, by_pattern, size)


def pririsk(gt, st, model: SAModel, sizes=None) -> PriRisk:
    """PriRisk per equivalence class and per distinguishable QI sub-pattern (F10, F11)."""
    buckets = normalize_st(st, model)
    rows = normalize_gt(gt, buckets)
    return _pririsk(rows, buckets, sizes, {r.rid: r.home for r in rows})


# --------------------------------------------------------------------------------------------
# Whole audit
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Audit:
    model: SAModel
    pairs: tuple  # PairFinding per linkable pair, sorted by (i, j)
    vulnerability: Vulnerability
    risk: PriRisk
    summary: dict  # json-ready (F12)

    @property
    def breaches(self):
        return tuple(f for f in self.pairs if f.breach)


TALLY = ("n_linkable_pairs", "n_singleton_cells", "n_identifying_singleton_cells", "n_eq4_violations",
         "n_eq5_violations", "n_pfcorr", "n_ffcorr")


def _tally(findings, model: SAModel) -> dict:
    """The pair counts of the summary (keys TALLY) from the findings."""
    return {
        "n_linkable_pairs": len(findings),
        "n_singleton_cells": sum(len(f.singletons) for f in findings),
        "n_identifying_singleton_cells": sum(1 for f in findings for a in f.singletons if a not in model.zeta),
        "n_eq4_violations": sum(1 for f in findings if not f.eq4_ok),
        "n_eq5_violations": sum(1 for f in findings if not f.eq5_ok),
        "n_pfcorr": sum(1 for f in findings if f.kind == "pfcorr"),
        "n_ffcorr": sum(1 for f in findings if f.kind == "ffcorr"),
    }


def _summary(model: SAModel, n_buckets, n_rows, risk: PriRisk, tally: dict, n_disclosures, vul) -> dict:
    """The json-ready summary (F12) from the pair counts, the disclosure count, the vulnerable
    record counts and PriRisk; shared by `audit` and the vectorized `fcorr_fast.audit`."""
    ec_risks = [g.risk for g in risk.by_ec.values()]
    return {
        "delta": model.delta,
        "zeta": _sorted(model.zeta),
        "n_buckets": n_buckets,
        "n_gt_rows": n_rows,
        "n_classes": len(risk.by_ec),
        "n_linkable_pairs": tally["n_linkable_pairs"],
        "n_intersection_cells": tally["n_linkable_pairs"] * len(model.attacked),
        "n_singleton_cells": tally["n_singleton_cells"],
        "n_identifying_singleton_cells": tally["n_identifying_singleton_cells"],
        "n_eq4_violations": tally["n_eq4_violations"],
        "n_eq5_violations": tally["n_eq5_violations"],
        "strict_ok": tally["n_eq4_violations"] == 0,
        "relaxed_ok": tally["n_eq5_violations"] == 0,
        "n_pfcorr": tally["n_pfcorr"],
        "n_ffcorr": tally["n_ffcorr"],
        "n_breaches": tally["n_pfcorr"] + tally["n_ffcorr"],
        "n_disclosures": n_disclosures,
        "n_vulnerable_covered": vul.n_covered,
        "n_vulnerable_correct": vul.n_correct,
        "pririsk_max": max(ec_risks) if ec_risks else None,
        "pririsk_mean": sum(ec_risks) / len(ec_risks) if ec_risks else None,
        "pririsk_pattern_max": max((g.risk for g in risk.by_pattern.values()), default=None),
        "n_classes_over_bound": sum(1 for g in risk.by_ec.values() if not g.within_bound),
    }


def audit(gt, st, model: SAModel, source=None, sizes=None) -> Audit:
    """Run the whole fcorr audit of one GT/ST release and summarise it for the release metrics."""
    buckets = normalize_st(st, model)
    rows = normalize_gt(gt, buckets)
    homes = _homes(rows, buckets, model, source)
    findings = fcorr(buckets, model)
    vul = _vulnerability(rows, buckets, model, source, homes, findings)
    risk = _pririsk(rows, buckets, sizes, homes)
    summary = _summary(model, len(buckets), len(rows), risk, _tally(findings, model),
                       len(vul.disclosures), vul)
    return Audit(model, tuple(findings), vul, risk, summary)

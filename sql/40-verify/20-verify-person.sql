-- The independent verifier of person-aware releases (danonyir, geneir, one_m_generalization;
-- spec 002 and spec 003 §2.1). Like 00-verify.sql it shares no code with the engine: the
-- identity-reserved models are counted again in SQL from the GT alone (persons = distinct
-- id_num of a class), and EIR l-diversity, the one model without a closed form in counts, is
-- decided by pganon._ir_min_hs_at_least, an exact bounded hitting-set search written here from
-- Def. 3.3 / Theorem §2.9 (no import of pganon_engine).

CREATE OR REPLACE FUNCTION pganon._ir_min_hs_at_least(sets jsonb, l int) RETURNS boolean
LANGUAGE plpython3u IMMUTABLE STRICT SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
# sets: a JSON array of arrays, the distinct SA values S(p) of each person of one class.
# True iff every hitting set of the family has at least l values (EIR l-diversity of the class,
# Def. 3.3 with Theorem 3.1 read as iff).  Written from the definitions, not from the engine:
# - the value of a one-value person is in every hitting set (forced);
# - the rest is searched for a hitting set of at most b = l - 1 - |forced| values by branching
#   on the values of one set still unhit (any hitting set holds one of them), smallest set first;
# - a branch is cut when it holds more than b pairwise disjoint unhit sets (each needs a value
#   of its own, so no hitting set within the budget exists below it);
# - after the branch of value v failed, later branches of the same set leave v out (a hitting
#   set containing v was already searched in v's branch).
import json
family = [frozenset(s) for s in json.loads(sets)]
if any(not s for s in family):
    return False
forced = frozenset(v for s in family if len(s) == 1 for v in s)
if len(forced) >= l:
    return True
rest = [s for s in family if not (s & forced)]

def disjoint_count(unhit, limit):
    taken, count = set(), 0
    for s in sorted(unhit, key=len):
        if taken.isdisjoint(s):
            taken |= s
            count += 1
            if count > limit:
                break
    return count

def within(unhit, budget):
    if not unhit:
        return True
    if budget == 0 or disjoint_count(unhit, budget) > budget:
        return False
    branch = min(unhit, key=len)
    for v in sorted(branch, key=lambda x: (-sum(1 for s in unhit if x in s), repr(x))):
        if within([s for s in unhit if v not in s], budget - 1):
            return True
        unhit = [s - {v} for s in unhit]
        if not all(unhit):
            return False
    return False

return not within(rest, l - 1 - len(forced))
$$;
COMMENT ON FUNCTION pganon._ir_min_hs_at_least(jsonb, int) IS
  'Internal (verifier): true iff the minimum hitting set of the given value sets has at least l values (EIR l-diversity of one class), by an exact bounded branching search.';

CREATE OR REPLACE FUNCTION pganon._verify_person(lay jsonb, source regclass, source_rows bigint,
                                                 suppressed_rows bigint, dataset_id int)
RETURNS TABLE ("check" text, passed boolean, detail text)
LANGUAGE plpgsql STABLE SECURITY INVOKER SET search_path = pg_catalog, pg_temp SET jit = off
AS $$
-- Person-aware releases: the map (key, person, class_id, id_num) is the admin-only link; the GT
-- has one row per record (danonyir, geneir) or per person (one_m_generalization).
DECLARE
  gt regclass := (lay->'relations'->>'gt')::regclass;
  map regclass := (lay->'relations'->>'map')::regclass;
  keycol text := lay->>'key';
  pcol text := lay->>'person';
  sa text := lay->'sas'->>0;
  per_person boolean := lay->>'gt_rows' = 'person';
  model text := lay->>'model';
  qcols text; cover text := ''; ctes text := ''; hjoins text := ''; qi jsonb; i int := 0;
  n bigint; m bigint; g bigint; bad bigint; bad2 bigint; bad3 bigint; ex text;
  n_cls bigint; v_cls bigint; val float8; val2 float8;
BEGIN
  SELECT string_agg(format('%I', x->>'column'), ', ') INTO qcols FROM jsonb_array_elements(lay->'qis') x;

  -- 1. every source row is published once or counted as suppressed; one GT row per published
  -- record (or per published person)
  EXECUTE format('SELECT count(*), count(DISTINCT m.%1$I), count(*) - count(s.%1$I) FROM %2$s m LEFT JOIN %3$s s USING (%1$I)',
                 keycol, map, source) INTO n, m, bad;
  IF per_person THEN
    EXECUTE format('SELECT (SELECT count(*) FROM %s), (SELECT count(DISTINCT %I) FROM %s)', gt, pcol, map) INTO g, bad2;
  ELSE
    EXECUTE format('SELECT count(*), count(*) FROM %s', gt) INTO g, bad2;
    bad2 := n;
  END IF;
  "check" := 'partition'; passed := n = m AND g = bad2 AND n + suppressed_rows = source_rows AND bad = 0;
  detail := format('%s published + %s suppressed = %s source rows; %s GT rows for %s published %s; %s duplicate and %s unknown keys',
                   n, suppressed_rows, source_rows, g, bad2, CASE WHEN per_person THEN 'persons' ELSE 'records' END, n - m, bad);
  RETURN NEXT;

  -- 2. persons move whole: a published person has all her records published, in one class,
  -- under one id_num, and no two persons share an id_num
  EXECUTE format('SELECT (SELECT count(*) FROM %1$s s WHERE s.%3$I IN (SELECT %3$I FROM %2$s)
                            AND s.%4$I NOT IN (SELECT %4$I FROM %2$s)),
                         (SELECT count(*) FROM (SELECT %3$I FROM %2$s GROUP BY 1 HAVING count(DISTINCT (class_id, id_num)) > 1) x),
                         (SELECT count(*) FROM (SELECT id_num FROM %2$s GROUP BY 1 HAVING count(DISTINCT %3$I) > 1) x)',
                 source, map, pcol, keycol) INTO bad, bad2, bad3;
  "check" := 'persons_whole'; passed := bad = 0 AND bad2 = 0 AND bad3 = 0;
  detail := CASE WHEN passed THEN 'every published person has all her records in one class under one id_num of her own'
                 ELSE format('%s record(s) of published persons left out, %s person(s) in several classes or id_nums, '
                             '%s id_num(s) shared by several persons', bad, bad2, bad3) END;
  RETURN NEXT;

  -- 3. each class publishes one QI vector that covers its records; the GT's persons and SA
  -- values are those of the source
  FOR qi IN SELECT * FROM jsonb_array_elements(lay->'qis') LOOP
    i := i + 1;
    IF qi->>'form' = 'range' THEN
      cover := cover || format(' OR NOT (s.%1$I::numeric <@ v.%1$I::text::numrange)', qi->>'column');
    ELSIF qi->>'form' = 'values' THEN
      cover := cover || format(' OR NOT s.%1$I::text = ANY (v.%1$I)', qi->>'column');
    ELSE  -- a hierarchy label: the record's value must be a leaf below it
      ctes := ctes || format(', h%s AS (SELECT * FROM pganon._hierarchy_closure(%s, %L))', i, dataset_id, qi->>'column');
      hjoins := hjoins || format(' LEFT JOIN h%1$s ON h%1$s.node = v.%2$I AND h%1$s.leaf = s.%2$I::text', i, qi->>'column');
      cover := cover || format(' OR h%s.node IS NULL', i);
    END IF;
  END LOOP;
  EXECUTE format('SELECT count(*) FROM (SELECT class_id FROM %s GROUP BY class_id HAVING count(DISTINCT ROW(%s)) > 1) x', gt, qcols) INTO bad;
  EXECUTE format('WITH v AS (SELECT DISTINCT ON (class_id) * FROM %1$s ORDER BY class_id)%6$s
                  SELECT count(*) FROM %2$s m JOIN %3$s s USING (%4$I) LEFT JOIN v USING (class_id)%7$s
                   WHERE v.class_id IS NULL%5$s', gt, map, source, keycol, cover, ctes, hjoins) INTO bad2;
  IF per_person THEN
    -- one GT row per (class, id_num) of the map; a person's generalized set covers each of her
    -- SA values and every node of it covers at least one of them
    EXECUTE format('WITH p AS (SELECT DISTINCT class_id, id_num, %5$I AS person FROM %2$s),
                         gs AS (SELECT g.class_id, g.id_num, x.node FROM %1$s g, unnest(g.%6$I) AS x(node)),
                         h AS (SELECT * FROM pganon._hierarchy_closure(%7$s, %6$L)),
                         sv AS (SELECT DISTINCT p.class_id, p.id_num, s.%6$I::text AS v
                                  FROM p JOIN %2$s m ON m.%5$I = p.person JOIN %3$s s USING (%4$I)),
                         -- (person, value, ancestor-or-self of the value), then those among the nodes
                         -- published for that person: a few rows per value, hash joins (joining the
                         -- nodes to their leaves first would give every leaf under a high node)
                         anc AS MATERIALIZED (SELECT sv.class_id, sv.id_num, sv.v, h.node FROM sv JOIN h ON h.leaf = sv.v),
                         hit AS (SELECT a.* FROM anc a JOIN (SELECT DISTINCT * FROM gs) g USING (class_id, id_num, node))
                    SELECT (SELECT count(*) FROM (SELECT class_id, id_num, count(*) AS c FROM %1$s GROUP BY 1, 2) a
                              FULL JOIN (SELECT class_id, id_num, count(*) AS c FROM p GROUP BY 1, 2) b USING (class_id, id_num)
                             WHERE a.c IS DISTINCT FROM 1 OR b.c IS DISTINCT FROM 1)
                         -- values that no node of the set covers
                         + (SELECT count(*) FROM sv) - (SELECT count(*) FROM (SELECT DISTINCT class_id, id_num, v FROM hit) x)
                         -- nodes of the set that cover none of the values of the person
                         + (SELECT count(*) FROM (SELECT DISTINCT * FROM gs) x)
                         - (SELECT count(*) FROM (SELECT DISTINCT class_id, id_num, node FROM hit) y)',
                   gt, map, source, keycol, pcol, sa, dataset_id) INTO m;
  ELSE
    EXECUTE format('SELECT count(*) FROM (SELECT class_id, id_num, %1$I::text AS v, count(*) AS c FROM %2$s GROUP BY 1, 2, 3) g
                      FULL JOIN (SELECT m.class_id, m.id_num, s.%1$I::text AS v, count(*) AS c FROM %3$s m JOIN %4$s s USING (%5$I)
                                  GROUP BY 1, 2, 3) r USING (class_id, id_num, v) WHERE g.c IS DISTINCT FROM r.c',
                   sa, gt, map, source, keycol) INTO m;
  END IF;
  "check" := 'gt_matches_source'; passed := bad = 0 AND bad2 = 0 AND m = 0;
  detail := CASE WHEN passed THEN 'every class publishes one QI vector that covers its records, with their persons and sensitive values'
                 ELSE format('%s class(es) with several QI vectors, %s record(s) not covered, %s person/SA mismatch(es)', bad, bad2, m) END;
  RETURN NEXT;

  -- 4. the privacy model, from the GT alone
  IF per_person THEN
    -- (k,l)-diversity of 1:M generalization: every generalized SA set is published for >= k
    -- persons, every class holds >= l distinct generalized sets
    EXECUTE format('SELECT count(*), min(format(''a generalized set on %%s person(s)'', c))
                      FROM (SELECT count(*) AS c FROM %s GROUP BY ARRAY(SELECT x FROM unnest(%I) x ORDER BY x)) y
                     WHERE c < %s', gt, sa, (lay->>'k')::int) INTO bad, ex;
    "check" := 'k_sets'; passed := bad = 0;
    detail := CASE WHEN passed THEN format('every generalized SA set is shared by at least k = %s persons', lay->>'k')
                   ELSE format('%s generalized set(s) below k = %s, e.g. %s', bad, lay->>'k', ex) END;
    RETURN NEXT;
    EXECUTE format('SELECT count(*), min(format(''class %%s has %%s distinct set(s)'', class_id, c))
                      FROM (SELECT class_id, count(DISTINCT ARRAY(SELECT x FROM unnest(%I) x ORDER BY x)) AS c FROM %s GROUP BY 1) y
                     WHERE c < %s', sa, gt, (lay->>'l')::int) INTO bad, ex;
    "check" := 'l_sets'; passed := bad = 0;
    detail := CASE WHEN passed THEN format('every class holds at least l = %s distinct generalized SA sets', lay->>'l')
                   ELSE format('%s class(es) below l = %s, e.g. %s', bad, lay->>'l', ex) END;
    RETURN NEXT;
  ELSE
    -- per class: persons, distinct values, alpha = max records of a person / records, IR beta =
    -- max records of a value / records, EIR beta = max persons of a value / persons, and EIR l
    -- (min hitting set >= l) when an l is known
    EXECUTE format('WITH r AS (SELECT class_id, id_num, %1$I::text AS v FROM %2$s),
                         c AS (SELECT class_id, count(*) AS nrec, count(DISTINCT id_num) AS nper, count(DISTINCT v) AS nv FROM r GROUP BY 1),
                         pr AS (SELECT class_id, max(c) AS c FROM (SELECT class_id, id_num, count(*) AS c FROM r GROUP BY 1, 2) x GROUP BY 1),
                         vr AS (SELECT class_id, max(nrec) AS nrec, max(nper) AS nper
                                  FROM (SELECT class_id, v, count(*) AS nrec, count(DISTINCT id_num) AS nper FROM r GROUP BY 1, 2) x GROUP BY 1),
                         ps AS (SELECT class_id, jsonb_agg(s) AS sets
                                  FROM (SELECT class_id, id_num, jsonb_agg(DISTINCT v) AS s FROM r GROUP BY 1, 2) x GROUP BY 1),
                         st AS (SELECT c.class_id, c.nper AS persons, c.nv AS distinct_values, pr.c::float8 / c.nrec AS alpha,
                                       vr.nrec::float8 / c.nrec AS beta_ir, vr.nper::float8 / c.nper AS beta_eir,
                                       CASE WHEN %3$L::int IS NULL THEN NULL ELSE pganon._ir_min_hs_at_least(ps.sets, %3$L::int) END AS el
                                  FROM c JOIN pr USING (class_id) JOIN vr USING (class_id) JOIN ps USING (class_id)),
                         t AS (SELECT *, CASE %4$L WHEN ''kl'' THEN persons >= %5$L::int AND distinct_values >= %3$L::int
                                                   WHEN ''el'' THEN el
                                                   WHEN ''ab'' THEN alpha <= %6$L::float8 AND beta_ir <= %7$L::float8
                                                   ELSE alpha <= %6$L::float8 AND beta_eir <= %7$L::float8 END AS ok,
                                          CASE WHEN %4$L IN (''kl'', ''el'')
                                               THEN persons >= coalesce(%5$L::int, %3$L::int) AND distinct_values >= %3$L::int AND NOT el
                                               ELSE alpha <= %6$L::float8 AND beta_ir <= %7$L::float8 AND beta_eir > %7$L::float8 END AS vul
                                 FROM st)
                    SELECT count(*), count(*) FILTER (WHERE NOT ok), count(*) FILTER (WHERE vul),
                           min(format(''class %%s: %%s persons, %%s values, alpha %%s, beta %%s / %%s'', class_id, persons,
                                      distinct_values, round(alpha::numeric, 4), round(beta_ir::numeric, 4), round(beta_eir::numeric, 4)))
                             FILTER (WHERE NOT ok),
                           max(alpha), max(CASE WHEN %4$L = ''eab'' THEN beta_eir ELSE beta_ir END) FROM t',
                   sa, gt, lay->>'l', model, lay->>'k', lay->>'alpha', lay->>'beta') INTO n_cls, bad, v_cls, ex, val, val2;
    "check" := CASE model WHEN 'kl' THEN 'ir_kl_anonymity' WHEN 'el' THEN 'eir_l_diversity'
                          WHEN 'ab' THEN 'ir_alpha_beta' ELSE 'eir_alpha_beta' END;
    passed := bad = 0 AND n_cls > 0;
    detail := CASE WHEN NOT passed THEN format('%s of %s class(es) fail %s, e.g. %s', bad, n_cls, model, coalesce(ex, 'no class published'))
                   WHEN model = 'kl' THEN format('every class has >= k = %s persons and >= l = %s distinct sensitive values', lay->>'k', lay->>'l')
                   WHEN model = 'el' THEN format('every reasoning set of every class has >= l = %s distinct sensitive values (min hitting set >= l)', lay->>'l')
                   ELSE format('every class has alpha <= %s and %s beta <= %s; achieved %s, %s', lay->>'alpha',
                               CASE WHEN model = 'eab' THEN 'person' ELSE 'record' END, lay->>'beta',
                               round(val::numeric, 6), round(val2::numeric, 6)) END;
    RETURN NEXT;

    -- the vulnerable share v (spec 002 §2.16): classes meeting the IR model but not its EIR
    -- counterpart with the same thresholds (informational: the model checked above decides)
    "check" := 'vulnerable_share'; passed := true;
    detail := format('v = %s (%s of %s class(es) meet the IR model but not the EIR one)',
                     round(v_cls::numeric / greatest(n_cls, 1), 6), v_cls, n_cls);
    RETURN NEXT;
  END IF;

  -- 5. nothing that identifies: no key, identifier or person column in the GT
  RETURN QUERY SELECT * FROM pganon._verify_no_identifiers(ARRAY[gt], keycol, dataset_id);
  SELECT count(*) INTO bad FROM pg_attribute a WHERE a.attrelid = gt AND a.attnum > 0 AND NOT a.attisdropped AND a.attname = pcol;
  "check" := 'no_person_column'; passed := bad = 0;
  detail := CASE WHEN passed THEN format('the GT carries id_num, not the person column %s', pcol)
                 ELSE format('the GT publishes the person column %s', pcol) END;
  RETURN NEXT;
END $$;
COMMENT ON FUNCTION pganon._verify_person(jsonb, regclass, bigint, bigint, int) IS
  'Internal (verifier): checks of a person-aware release (danonyir, geneir, one_m_generalization).';

-- Person-level checks of releases whose records are not grouped per person by construction
-- (generalized: mondrian, gaa, semantic), for a dataset that declares a person column. A
-- published class is a distinct published QI vector; its persons are read from the map and the
-- source (the GT publishes no person id). Written from the definitions, not from the engine.

CREATE OR REPLACE FUNCTION pganon._verify_person_k(map regclass, source regclass, keycol text, personcol text,
                                                   gt regclass, qis text[], k int, grp text DEFAULT 'class_id')
RETURNS TABLE ("check" text, passed boolean, detail text)
LANGUAGE plpgsql STABLE SECURITY INVOKER SET search_path = pg_catalog, pg_temp SET jit = off
AS $$
-- k over persons: every published QI vector of the GT holds records of at least k distinct persons
-- (map: key -> grp; the GT: grp -> published QI vector; the source: key -> person). With no QIs
-- given, every group grp of the GT is a class (e.g. a bucketization group).
DECLARE
  what text := CASE WHEN cardinality(qis) > 0 THEN 'QI vector' ELSE 'group' END;
  qcols text := coalesce((SELECT string_agg(format('g.%I', q), ', ') FROM unnest(qis) q), format('g.%I', grp));
  bad bigint; n bigint; low bigint; ex text;
BEGIN
  EXECUTE format('SELECT count(*), count(*) FILTER (WHERE p < $1), min(p),
                         min(format(''a %%s on %%s record(s) of %%s person(s)'', $2, r, p)) FILTER (WHERE p < $1)
                    FROM (SELECT count(*) AS r, count(DISTINCT s.%1$I) AS p
                            FROM (SELECT DISTINCT g.%7$I%8$s FROM %3$s g) g JOIN %4$s m USING (%7$I)
                            JOIN %5$s s USING (%6$I) GROUP BY %2$s) x',
                 personcol, qcols, gt, map, source, keycol, grp,
                 CASE WHEN cardinality(qis) > 0 THEN ', ' || qcols ELSE '' END) USING k, what INTO n, bad, low, ex;
  "check" := 'k_anonymity_persons'; passed := bad = 0 AND n > 0;
  detail := CASE WHEN passed THEN format('every %s of the GT holds records of at least k = %s persons (%s) (fewest: %s)',
                                         what, k, personcol, low)
                 ELSE format('%s of %s %s(s) hold fewer than k = %s persons (%s), e.g. %s', bad, n, what, k, personcol,
                             coalesce(ex, 'none published')) END;
  RETURN NEXT;
END $$;
COMMENT ON FUNCTION pganon._verify_person_k(regclass, regclass, text, text, regclass, text[], int, text) IS
  'Internal (verifier): k over persons: every published QI vector (or, without QIs, every group) of a GT holds records of >= k distinct persons (from the map and the source).';

CREATE OR REPLACE FUNCTION pganon._verify_person_privacy(map regclass, source regclass, keycol text, personcol text,
                                                         gt regclass, qis text[], sas text[], priv jsonb, whole boolean)
RETURNS TABLE ("check" text, passed boolean, detail text)
LANGUAGE plpgsql STABLE SECURITY INVOKER SET search_path = pg_catalog, pg_temp SET jit = off
AS $$
-- A generalized release's privacy model read over persons, per published QI vector (class) and
-- SA: a person counts once per value she holds in the class. distinct l: >= l distinct values;
-- entropy l: the entropy of the class's (person, value) pairs >= ln l; (alpha, k): persons holding
-- a value / persons of the class <= alpha; t-closeness: the distance between the class's pairs and
-- the published table's pairs (l1, halved for the equal distance) <= t. With whole, every person's
-- records are in one class (no value set of a person can be intersected across classes).
DECLARE
  qcols text := (SELECT string_agg(format('g.%I', q), ', ') FROM unnest(qis) q);
  base text; sa text; model text := priv->>'model'; val float8; bad bigint; ex text;
BEGIN
  -- (published class, person, value of SA v) per published record; built once per SA with one
  -- format() call, so no name is ever read as a format string
  IF whole THEN
    base := format('SELECT dense_rank() OVER (ORDER BY %1$s) AS cls, s.%2$I AS p
                      FROM (SELECT DISTINCT class_id, %1$s FROM %3$s g) g JOIN %4$s m USING (class_id)
                      JOIN %5$s s USING (%6$I)', qcols, personcol, gt, map, source, keycol);
    EXECUTE format('SELECT count(*), min(format(''person %%s in %%s classes'', p, c))
                      FROM (SELECT p, count(DISTINCT cls) AS c FROM (%s) r GROUP BY p HAVING count(DISTINCT cls) > 1) x',
                   base) INTO bad, ex;
    "check" := 'persons_whole'; passed := bad = 0;
    detail := CASE WHEN passed THEN format('every person (%s) has all her records in one QI vector', personcol)
                   ELSE format('%s person(s) have records in several QI vectors, e.g. %s', bad, ex) END;
    RETURN NEXT;
  END IF;
  IF priv IS NULL OR jsonb_typeof(priv) <> 'object' THEN
    RETURN;
  END IF;
  FOREACH sa IN ARRAY sas LOOP
    base := format('SELECT dense_rank() OVER (ORDER BY %1$s) AS cls, s.%2$I AS p, s.%7$I::text AS v
                      FROM (SELECT DISTINCT class_id, %1$s FROM %3$s g) g JOIN %4$s m USING (class_id)
                      JOIN %5$s s USING (%6$I)', qcols, personcol, gt, map, source, keycol, sa);
    IF model = 'l_diversity' THEN
      EXECUTE format('SELECT min(c) FROM (SELECT count(DISTINCT v) AS c FROM (%s) r GROUP BY cls) x', base) INTO val;
      passed := val >= (priv->>'l')::float8;
    ELSIF model = 'entropy_l_diversity' THEN
      EXECUTE format('WITH pv AS (SELECT DISTINCT cls, p, v FROM (%s) r),
                           q AS (SELECT cls, count(*)::float8 / sum(count(*)) OVER (PARTITION BY cls) AS q FROM pv GROUP BY cls, v)
                      SELECT min(h) FROM (SELECT -sum(q * ln(q)) AS h FROM q GROUP BY cls) x', base) INTO val;
      val := exp(val);
      passed := ln(val) >= ln((priv->>'l')::float8) - 1e-9;
    ELSIF model = 'alpha_k_anonymity' THEN
      EXECUTE format('WITH r AS (%s), n AS (SELECT cls, count(DISTINCT p) AS n FROM r GROUP BY cls)
                      SELECT max(c::float8 / n.n) FROM (SELECT cls, v, count(DISTINCT p) AS c FROM r GROUP BY cls, v) x
                        JOIN n USING (cls)', base) INTO val;
      passed := val <= (priv->>'alpha')::float8 + 1e-12;
    ELSE  -- t_closeness over (person, value) pairs: sum over all values of |q - p| (l1), halved for equal
      EXECUTE format('WITH pv AS (SELECT DISTINCT cls, p, v FROM (%s) r),
                           g AS (SELECT v, count(*)::float8 / sum(count(*)) OVER () AS p FROM (SELECT DISTINCT p, v FROM pv) y GROUP BY v),
                           c AS (SELECT cls, v, count(*)::float8 / sum(count(*)) OVER (PARTITION BY cls) AS q FROM pv GROUP BY cls, v)
                      SELECT max(d) FROM (SELECT cls, sum(abs(c.q - g.p) - g.p) + 1 AS d FROM c JOIN g USING (v) GROUP BY cls) x',
                     base) INTO val;
      IF priv->>'distance' = 'equal' THEN val := val / 2; END IF;
      passed := val <= (priv->>'t')::float8 + 1e-9;
    END IF;
    "check" := format('%s(%s)', model, sa);
    detail := format('achieved %s over the persons (%s) of each QI vector; required %s', round(val::numeric, 6),
                     personcol, (priv - 'model')::text);
    RETURN NEXT;
  END LOOP;
END $$;
COMMENT ON FUNCTION pganon._verify_person_privacy(regclass, regclass, text, text, regclass, text[], text[], jsonb, boolean) IS
  'Internal (verifier): a generalized release''s privacy model over persons per published QI vector, and persons kept whole.';

CREATE OR REPLACE FUNCTION pganon._verify_person_rules(lay jsonb, source regclass)
RETURNS TABLE ("check" text, passed boolean, detail text)
LANGUAGE plpgsql STABLE SECURITY INVOKER SET search_path = pg_catalog, pg_temp SET jit = off
AS $$
-- Semantic rules over persons: in no class do at least `coverage` of the persons hold a value
-- that a recorded rule matches (pganon._semantic_match, the record-level check's predicate).
DECLARE
  map regclass := (lay->'relations'->>'map')::regclass;
  theta numeric := (lay->'semantic'->>'coverage')::numeric;
  r jsonb; n bigint; bad bigint := 0; ex text; first text;
BEGIN
  FOR r IN SELECT * FROM jsonb_array_elements(lay->'semantic'->'rules') LOOP
    EXECUTE format('SELECT count(*), min(format(''class %%s: rule %%s matches a value of %%s of %%s persons'', class_id, %1$L, h, c))
                      FROM (SELECT class_id, count(*) AS c, count(*) FILTER (WHERE hit) AS h
                              FROM (SELECT m.class_id, s.%2$I, bool_or(pganon._semantic_match(s.%3$I::text, %4$L, %5$L::text[])) AS hit
                                      FROM %6$s m JOIN %7$s s USING (%8$I) GROUP BY 1, 2) y GROUP BY 1) x
                     WHERE h >= $1 * c', r->>'id', lay->>'person', r->>'sa', r->>'predicate',
                   ARRAY(SELECT jsonb_array_elements_text(r->'vals')), map, source, lay->>'key')
      USING theta INTO n, ex;
    bad := bad + n;
    first := coalesce(first, ex);
  END LOOP;
  "check" := 'no_effective_rule_persons'; passed := bad = 0;
  detail := CASE WHEN passed THEN format('in no class do %s of the persons (%s) hold a value a semantic rule matches', theta, lay->>'person')
                 ELSE format('%s (class, rule) pair(s) at person coverage >= %s, e.g. %s', bad, theta, first) END;
  RETURN NEXT;
END $$;
COMMENT ON FUNCTION pganon._verify_person_rules(jsonb, regclass) IS
  'Internal (verifier): semantic rules judged over persons: no class where coverage of its persons hold a matched value.';

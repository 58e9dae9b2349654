-- The catalog API: declare a dataset, its attributes, the security level of each sensitive value
-- and the l of each level. Each function validates before it writes and names the fix.

CREATE OR REPLACE FUNCTION pganon._dataset_id(dataset text) RETURNS int
LANGUAGE plpgsql STABLE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE did int;
BEGIN
  SELECT d.id INTO did FROM pganon.dataset d WHERE d.name = _dataset_id.dataset;
  IF did IS NULL THEN
    RAISE EXCEPTION 'dataset "%" is not registered', dataset USING ERRCODE = 'PA001',
      HINT = 'register it with pganon.register_dataset(name, source, key_column)';
  END IF;
  RETURN did;
END $$;

CREATE OR REPLACE FUNCTION pganon._column_type(source regclass, column_name text) RETURNS regtype
LANGUAGE plpgsql STABLE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE t regtype;
BEGIN
  SELECT a.atttypid::regtype INTO t FROM pg_attribute a
   WHERE a.attrelid = source AND a.attname = column_name AND a.attnum > 0 AND NOT a.attisdropped;
  IF t IS NULL THEN
    RAISE EXCEPTION 'column "%" does not exist in %', column_name, source USING ERRCODE = 'PA001',
      HINT = 'check the column name (names are case-sensitive as written in the table)';
  END IF;
  RETURN t;
END $$;

CREATE OR REPLACE FUNCTION pganon.register_dataset(name text, source regclass, key_column text,
                                                   person_column text DEFAULT NULL) RETURNS int
LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE did int;
BEGIN
  IF name IS NULL OR octet_length(name) NOT BETWEEN 1 AND 55 THEN
    RAISE EXCEPTION 'dataset name is % bytes long; it must be 1 to 55 bytes', coalesce(octet_length(name), 0)
      USING ERRCODE = 'PA002',
      HINT = 'release views are named <dataset>_gt ... <dataset>_promise, which must fit in 63 bytes (UTF-8 '
             'letters outside ASCII take 2 to 4 bytes each)';
  END IF;
  IF starts_with(key_column, '_pganon') OR starts_with(person_column, '_pganon') THEN
    RAISE EXCEPTION 'column "%" starts with "_pganon", which pganon reserves for its work columns',
      CASE WHEN starts_with(key_column, '_pganon') THEN key_column ELSE person_column END USING ERRCODE = 'PA002',
      HINT = 'register a view that renames it (CREATE VIEW v AS SELECT ..., "_pganon..." AS other_name FROM ...)';
  END IF;
  IF (SELECT c.relkind FROM pg_class c WHERE c.oid = source) NOT IN ('r', 'p', 'v', 'm', 'f') THEN
    RAISE EXCEPTION '% is not a table or view', source USING ERRCODE = 'PA002';
  END IF;
  -- a dataset is declared by a role that can read its source (its owner runs its releases)
  IF NOT pg_catalog.has_any_column_privilege(current_user, source, 'SELECT') THEN
    RAISE EXCEPTION 'role % cannot read %', current_user, source USING ERRCODE = 'PA002',
      HINT = 'register only tables you can SELECT; ask their owner for GRANT SELECT';
  END IF;
  PERFORM pganon._column_type(source, key_column);
  IF person_column IS NOT NULL THEN PERFORM pganon._column_type(source, person_column); END IF;
  IF NOT pg_catalog.has_column_privilege(current_user, source, key_column, 'SELECT')
     OR (person_column IS NOT NULL AND NOT pg_catalog.has_column_privilege(current_user, source, person_column, 'SELECT')) THEN
    RAISE EXCEPTION 'role % cannot read the key or person column of %', current_user, source USING ERRCODE = 'PA002',
      HINT = 'the key (and person) column must be readable by the role that registers the dataset';
  END IF;
  BEGIN
    INSERT INTO pganon.dataset AS d (name, source, key_column, person_column)
    VALUES (register_dataset.name, source, key_column, person_column)
    ON CONFLICT ON CONSTRAINT dataset_name_key DO UPDATE
       SET source = EXCLUDED.source, key_column = EXCLUDED.key_column, person_column = EXCLUDED.person_column
    RETURNING d.id INTO did;
  EXCEPTION WHEN insufficient_privilege THEN   -- row-level security: the name is another role's dataset
    RAISE EXCEPTION 'dataset name "%" is taken by a dataset you do not manage', register_dataset.name
      USING ERRCODE = 'PA002', HINT = 'choose another name';
  END;
  INSERT INTO pganon.level_l (dataset_id, level, l) VALUES (did, 0, 1), (did, 1, 2), (did, 2, 3)
  ON CONFLICT DO NOTHING;
  RETURN did;
END $$;
COMMENT ON FUNCTION pganon.register_dataset(text, regclass, text, text) IS
  'Declare (or re-declare) a dataset: its source table, unique key column and optional person column. '
  'Sets l0=1, l1=2, l2=3 unless levels are already set. Example: SELECT pganon.register_dataset(''adult'', ''adult'', ''id'');';

CREATE OR REPLACE FUNCTION pganon.set_attribute(dataset text, column_name text, role text,
                                                kind text DEFAULT NULL) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  did int := pganon._dataset_id(dataset);
  src regclass;
  keycol name;
  t regtype;
  cat text;
BEGIN
  SELECT d.source, d.key_column INTO src, keycol FROM pganon.dataset d WHERE d.id = did;
  t := pganon._column_type(src, column_name);
  IF starts_with(column_name, '_pganon') THEN
    RAISE EXCEPTION 'column "%" starts with "_pganon", which pganon reserves for its work columns', column_name
      USING ERRCODE = 'PA002',
      HINT = 'register a view that renames it (CREATE VIEW v AS SELECT ..., "_pganon..." AS other_name FROM ...)';
  END IF;
  IF NOT pg_catalog.has_column_privilege(current_user, src, column_name, 'SELECT') THEN
    RAISE EXCEPTION 'role % cannot read column "%" of %', current_user, column_name, src USING ERRCODE = 'PA002',
      HINT = 'declare only columns you can SELECT';
  END IF;
  IF role IS NULL OR role NOT IN ('identifier', 'quasi', 'sensitive', 'insensitive') THEN
    RAISE EXCEPTION 'unknown role "%" for column "%"', role, column_name USING ERRCODE = 'PA002',
      HINT = 'role is one of identifier, quasi, sensitive, insensitive';
  END IF;
  IF column_name = keycol THEN
    RAISE EXCEPTION 'column "%" is the key of dataset "%" and cannot have a role', column_name, dataset
      USING ERRCODE = 'PA002', HINT = 'the key is never published; declare the other columns';
  END IF;
  SELECT typcategory INTO cat FROM pg_type WHERE oid = t;
  IF kind IS NULL AND role IN ('quasi', 'sensitive') THEN
    kind := CASE WHEN cat = 'N' THEN 'numeric' WHEN cat = 'D' THEN 'date' ELSE 'categorical' END;
  END IF;
  IF kind IS NOT NULL AND kind NOT IN ('numeric', 'categorical', 'date') THEN
    RAISE EXCEPTION 'unknown kind "%" for column "%"', kind, column_name USING ERRCODE = 'PA002',
      HINT = 'kind is one of numeric, categorical, date';
  END IF;
  IF kind = 'numeric' AND cat <> 'N' THEN
    RAISE EXCEPTION 'column "%" has type %, which cannot be numeric', column_name, t USING ERRCODE = 'PA002',
      HINT = 'declare it categorical, or cast it in a view and register the view';
  END IF;
  IF kind = 'date' AND cat <> 'D' THEN
    RAISE EXCEPTION 'column "%" has type %, which cannot be a date', column_name, t USING ERRCODE = 'PA002',
      HINT = 'declare it categorical, or cast it in a view and register the view';
  END IF;
  INSERT INTO pganon.attribute AS a (dataset_id, column_name, role, kind, position)
  VALUES (did, column_name, role, kind,
          coalesce((SELECT max(x.position) + 1 FROM pganon.attribute x WHERE x.dataset_id = did), 1))
  ON CONFLICT (dataset_id, column_name) DO UPDATE SET role = EXCLUDED.role, kind = EXCLUDED.kind;
  IF role <> 'sensitive' THEN
    UPDATE pganon.attribute a SET default_level = NULL
     WHERE a.dataset_id = did AND a.column_name = set_attribute.column_name AND a.default_level IS NOT NULL;
    DELETE FROM pganon.security_level s WHERE s.dataset_id = did AND s.column_name = set_attribute.column_name;
    DELETE FROM pganon.sa_dependency s WHERE s.dataset_id = did
       AND set_attribute.column_name IN (s.column_name, s.identified_by);
  END IF;
END $$;
COMMENT ON FUNCTION pganon.set_attribute(text, text, text, text) IS
  'Declare a column''s role (identifier | quasi | sensitive | insensitive) and kind (numeric | categorical | date; '
  'inferred from the column type when NULL). Declaration order is kept: sensitive attributes are used in it.';

CREATE OR REPLACE FUNCTION pganon._shown_value(value text) RETURNS text
LANGUAGE sql IMMUTABLE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
  -- one user value for a message: quoted, cut to 40 characters with its length (a sensitive
  -- value can be megabytes; the message goes to the client and the server log whole)
  SELECT CASE WHEN length(value) <= 40 THEN quote_literal(value)
              ELSE quote_literal(left(value, 40)) || format('... (%s characters)', length(value)) END
$$;
COMMENT ON FUNCTION pganon._shown_value(text) IS
  'Internal: a value for an error message, quoted and cut to 40 characters.';

CREATE OR REPLACE FUNCTION pganon._nearest_values(value text, candidates text[]) RETURNS text[]
LANGUAGE plpython3u IMMUTABLE STRICT SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
# The (at most three) candidates closest to value, closest first: a misspelt sensitive value
# ('HIVV') is named with the values the column does hold ('HIV'). Standard library only.
import difflib
near = difflib.get_close_matches(value, candidates, n=3, cutoff=0.5)
if not near:
    folded = value.casefold()
    near = [c for c in candidates if folded in c.casefold() or c.casefold() in folded][:3]
return near
$$;
COMMENT ON FUNCTION pganon._nearest_values(text, text[]) IS
  'Internal: the candidates closest to a value (difflib), for "did you mean" in error messages.';

CREATE OR REPLACE FUNCTION pganon._check_value_occurs(dataset_id int, column_name text, value text) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
-- Refuse (PA002) a value the dataset's column never holds, naming the nearest ones. The source
-- is read the way publish reads it (issue 12, roles.py): with the rights of the dataset's owner
-- (a SET LOCAL ROLE, undone when this function returns), only columns that role may SELECT, and
-- never through a view or foreign table of another role (its code would run as the owner).
-- VOLATILE: it switches roles.
DECLARE
  src regclass;
  ds text;
  own text;
  r record;
  found boolean;
  near text[];
BEGIN
  SELECT d.source, d.name INTO src, ds FROM pganon.dataset d WHERE d.id = _check_value_occurs.dataset_id;
  own := pganon._owner_to_act_as(_check_value_occurs.dataset_id);
  IF own IS NOT NULL THEN
    EXECUTE format('SET LOCAL ROLE %I', own);
  END IF;
  SELECT c.relkind::text AS kind, pg_catalog.pg_get_userbyid(c.relowner) AS owner,
         c.relowner = (SELECT x.oid FROM pg_catalog.pg_roles x WHERE x.rolname = current_user) AS mine
    INTO r FROM pg_catalog.pg_class c WHERE c.oid = src;
  IF r.kind IN ('v', 'f') AND NOT r.mine THEN
    RAISE EXCEPTION 'the source of dataset %, %, is a % owned by %: reading it to check the value would run that '
                    'role''s code with the rights of the dataset''s owner', ds, src,
                    CASE r.kind WHEN 'v' THEN 'view' ELSE 'foreign table' END, r.owner USING ERRCODE = 'PA002',
      HINT = format('register the dataset as %s, or copy the rows into a table the dataset''s owner owns '
                    '(CREATE TABLE ... AS SELECT); force => true sets the level unchecked', r.owner);
  END IF;
  IF NOT pg_catalog.has_column_privilege(current_user, src, column_name, 'SELECT') THEN
    RAISE EXCEPTION 'role % cannot read column "%" of %, so the value cannot be checked', current_user,
      column_name, src USING ERRCODE = 'PA002',
      HINT = 'ask the table''s owner for GRANT SELECT, or pass force => true to set the level unchecked';
  END IF;
  EXECUTE format('SELECT EXISTS (SELECT 1 FROM %s WHERE %I::text = $1)', src, column_name) INTO found USING value;
  IF found THEN
    RETURN;
  END IF;
  EXECUTE format('SELECT array_agg(v ORDER BY v) FROM (SELECT DISTINCT %1$I::text AS v FROM %2$s '
                 'WHERE %1$I IS NOT NULL LIMIT 10000) x', column_name, src) INTO near;
  near := pganon._nearest_values(value, coalesce(near, '{}'));
  RAISE EXCEPTION '%', format('value %s never occurs in column "%s" of %s', pganon._shown_value(value),
                              column_name, src)
    || CASE WHEN cardinality(near) > 0
            THEN '; nearest: ' || (SELECT string_agg(pganon._shown_value(n), ', ' ORDER BY o)
                                     FROM unnest(near) WITH ORDINALITY u(n, o))
            ELSE '' END
    USING ERRCODE = 'PA002',
    HINT = 'correct the value, or pass force => true to give a level to a value the column does not hold yet';
END $$;
COMMENT ON FUNCTION pganon._check_value_occurs(int, text, text) IS
  'Internal: refuse a value the dataset''s column never holds (read with the owner''s rights), naming the nearest.';

CREATE OR REPLACE FUNCTION pganon._check_level(did int, dataset text, column_name text, value text, level int,
                                               for_default boolean)
RETURNS void
LANGUAGE plpgsql STABLE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
-- The checks of pganon.set_security_level (a value's level) and pganon.set_default_level
-- (for_default: the level of the values without one, where NULL means the highest), in the order
-- each made them: the column is a sensitive attribute, the arguments, the level has an l.
#variable_conflict use_column
DECLARE
  r text;
BEGIN
  SELECT a.role INTO r FROM pganon.attribute a
   WHERE a.dataset_id = did AND a.column_name = _check_level.column_name;
  IF r IS NULL OR r <> 'sensitive' THEN
    RAISE EXCEPTION 'column "%" is not a sensitive attribute of dataset "%"', column_name, dataset
      USING ERRCODE = 'PA001', HINT = 'declare it first with pganon.set_attribute(dataset, column, ''sensitive'')';
  END IF;
  IF for_default THEN
    IF level < 0 THEN
      RAISE EXCEPTION 'default level must be a non-negative integer or NULL, not %', level USING ERRCODE = 'PA002',
        HINT = 'NULL gives unlisted values the highest level';
    END IF;
  ELSE
    IF value IS NULL THEN
      RAISE EXCEPTION 'a security level needs a value' USING ERRCODE = 'PA002';
    END IF;
    IF level IS NULL OR level < 0 THEN
      RAISE EXCEPTION 'security level must be a non-negative integer, not %', level USING ERRCODE = 'PA002';
    END IF;
  END IF;
  IF level IS NOT NULL AND NOT EXISTS (SELECT 1 FROM pganon.level_l x WHERE x.dataset_id = did
                                                                        AND x.level = _check_level.level) THEN
    RAISE EXCEPTION 'security level % of dataset "%" has no l', level, dataset USING ERRCODE = 'PA003',
      HINT = format('set it first: SELECT pganon.set_level_l(%L, %s, l)', dataset, level);
  END IF;
END $$;
COMMENT ON FUNCTION pganon._check_level(int, text, text, text, int, boolean) IS
  'Internal: refuse a security level (or default level) that set_security_level / set_default_level cannot store.';

DO $$ BEGIN   -- gained force; an existence check, not IF EXISTS (its NOTICE on every install)
  IF pg_catalog.to_regprocedure('pganon.set_security_level(text, text, text, int)') IS NOT NULL THEN
    DROP FUNCTION pganon.set_security_level(text, text, text, int);
  END IF;
END $$;
CREATE OR REPLACE FUNCTION pganon.set_security_level(dataset text, column_name text, value text, level int,
                                                     force boolean DEFAULT false)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  did int := pganon._dataset_id(dataset);
BEGIN
  PERFORM pganon._check_level(did, dataset, column_name, value, level, false);
  -- A level for a value the column never holds is almost always a typo ('HIVV'): refused,
  -- naming the nearest values, unless forced (a value expected later, a sample of the table).
  IF NOT coalesce(force, false) THEN
    PERFORM pganon._check_value_occurs(did, column_name, value);
  END IF;
  -- the key is md5(value) (migration 0007: values of any length); a different value with the
  -- same md5 is refused, never overwritten
  INSERT INTO pganon.security_level AS s (dataset_id, column_name, value, level)
  VALUES (did, column_name, value, level)
  ON CONFLICT (dataset_id, column_name, md5(value)) DO UPDATE SET level = EXCLUDED.level
   WHERE s.value = EXCLUDED.value;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'another value of column "%" has the same md5 as this one (% bytes), so it cannot get a level',
      column_name, octet_length(value) USING ERRCODE = 'PA002',
      HINT = 'publish from a view that changes one of the two values';
  END IF;
END $$;
COMMENT ON FUNCTION pganon.set_security_level(text, text, text, int, boolean) IS
  'Give one value of a sensitive attribute its security level (0 = no requirement ... higher = stronger). '
  'A value the column does not hold is refused unless force => true. Values without a level get the '
  'attribute''s default level (pganon.set_default_level), else the highest level.';

CREATE OR REPLACE FUNCTION pganon.set_default_level(dataset text, column_name text, level int) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  did int := pganon._dataset_id(dataset);
BEGIN
  PERFORM pganon._check_level(did, dataset, column_name, NULL, level, true);
  UPDATE pganon.attribute a SET default_level = level
   WHERE a.dataset_id = did AND a.column_name = set_default_level.column_name;
END $$;
COMMENT ON FUNCTION pganon.set_default_level(text, text, int) IS
  'The security level of the values of a sensitive attribute that have none of their own. '
  'NULL (the default): the highest level with an l, the most protective.';

CREATE OR REPLACE FUNCTION pganon._default_level(dataset_id int, column_name text) RETURNS int
LANGUAGE sql STABLE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
  SELECT coalesce((SELECT a.default_level FROM pganon.attribute a
                    WHERE a.dataset_id = $1 AND a.column_name = $2::name),
                  (SELECT max(x.level) FROM pganon.level_l x WHERE x.dataset_id = $1))
$$;
COMMENT ON FUNCTION pganon._default_level(int, text) IS
  'Internal: the level of a sensitive attribute''s values without one: its default_level, else the highest level.';

CREATE OR REPLACE FUNCTION pganon._effective_level(dataset_id int, column_name text, value text) RETURNS int
LANGUAGE sql STABLE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
  -- The one definition of a sensitive value's security level, read by publish (lsl.py), verify
  -- (40-verify/00-verify.sql) and risk (risk.py): its own level, else the attribute's default. Callers
  -- call it once per distinct value, not per row.
  SELECT coalesce((SELECT s.level FROM pganon.security_level s
                    WHERE s.dataset_id = $1 AND s.column_name = $2::name AND md5(s.value) = md5($3) AND s.value = $3),
                  pganon._default_level($1, $2))
$$;
COMMENT ON FUNCTION pganon._effective_level(int, text, text) IS
  'Internal: the security level of one value of a sensitive attribute (its own, else the default level).';

CREATE OR REPLACE FUNCTION pganon.set_level_l(dataset text, level int, l int) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  did int := pganon._dataset_id(dataset);
  bad text;
BEGIN
  IF level IS NULL OR level < 0 THEN
    RAISE EXCEPTION 'level must be a non-negative integer, not %', level USING ERRCODE = 'PA002';
  END IF;
  IF l IS NULL OR l < 1 THEN
    RAISE EXCEPTION 'l must be an integer >= 1, not %', l USING ERRCODE = 'PA002',
      HINT = 'l = 1 means no requirement; a value of level k may fill at most 1/l_k of a group';
  END IF;
  INSERT INTO pganon.level_l AS x (dataset_id, level, l) VALUES (did, level, l)
  ON CONFLICT (dataset_id, level) DO UPDATE SET l = EXCLUDED.l;
  SELECT string_agg(format('l%s=%s > l%s=%s', a.level, a.l, b.level, b.l), ', ') INTO bad
    FROM pganon.level_l a JOIN pganon.level_l b ON a.dataset_id = b.dataset_id AND a.level < b.level AND a.l > b.l
   WHERE a.dataset_id = did;
  IF bad IS NOT NULL THEN
    RAISE EXCEPTION 'l must not decrease with the security level: %', bad USING ERRCODE = 'PA002',
      HINT = 'keep 1 <= l0 <= l1 <= l2 ...; change the other levels first';
  END IF;
END $$;
COMMENT ON FUNCTION pganon.set_level_l(text, int, int) IS
  'Set the l of a security level (defaults l0=1, l1=2, l2=3); l must not decrease with the level.';

CREATE OR REPLACE FUNCTION pganon.drop_dataset(dataset text) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE did int := pganon._dataset_id(dataset); rid bigint;
BEGIN
  FOR rid IN SELECT id FROM pganon.release WHERE dataset_id = did AND status <> 'dropped' LOOP
    PERFORM pganon.drop_release(rid);
  END LOOP;
  DELETE FROM pganon.dataset WHERE id = did;
END $$;
COMMENT ON FUNCTION pganon.drop_dataset(text) IS 'Forget a dataset, its metadata and all its releases.';

CREATE OR REPLACE VIEW pganon.attributes AS
SELECT d.name AS dataset, a.column_name, a.role, a.kind, a.position,
       (SELECT count(*) FROM pganon.security_level s
         WHERE s.dataset_id = a.dataset_id AND s.column_name = a.column_name) AS values_with_level,
       -- the level of the values without one (the declared default, else the highest level)
       CASE WHEN a.role = 'sensitive' THEN pganon._default_level(a.dataset_id, a.column_name) END AS default_level
  FROM pganon.attribute a JOIN pganon.dataset d ON d.id = a.dataset_id
 ORDER BY d.name, a.position;

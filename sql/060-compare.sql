-- pganon.compare: the measures every release shape shares, on one shared workload (issue 6).

CREATE OR REPLACE FUNCTION pganon.compare(releases bigint[], params jsonb DEFAULT '{}') RETURNS jsonb
LANGUAGE sql STABLE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$ SELECT pganon._call('compare', jsonb_build_object('releases', to_jsonb(releases),
                                                        'params', coalesce(params, '{}'))) $$;
COMMENT ON FUNCTION pganon.compare(bigint[], jsonb) IS
  'Measure releases side by side: KL divergence of the reconstructed joint distribution, ARE of one '
  'shared seeded COUNT workload per selectivity, NCP%, DM, class sizes, suppression, the attacker''s '
  'confidence per sensitive attribute, recorded metrics and seconds. Params: thetas (default '
  '[0.05, 0.1, 0.2]), queries (1000), seed (0), qd (2). Admin only: reads the sources. '
  'Example: SELECT pganon.compare(ARRAY[1, 2, 3]);';

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

-- pganon.query_error: a kept release's query error measured now (issue 15). Publish runs no
-- workload unless its params ask (queries > 0): 1,000 queries were most of a publish.

CREATE OR REPLACE FUNCTION pganon.query_error(release bigint, queries integer DEFAULT 1000,
                                              theta float8 DEFAULT 0.1, seed bigint DEFAULT NULL)
RETURNS jsonb
LANGUAGE sql STABLE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$ SELECT pganon._call('query_error', jsonb_build_object('release', release, 'queries', queries,
                                                           'theta', theta, 'seed', seed)) $$;
COMMENT ON FUNCTION pganon.query_error(bigint, integer, float8, bigint) IS
  'The query error of a release, measured now: mean, median and max relative error of seeded COUNT '
  'queries on the QIs at selectivity theta, estimated uniformly within the published cells; the figure '
  'publish stores when its params ask for queries, theta, seed (seed NULL: the release''s, else 0), '
  'equal to it while the source is unchanged (a source with another row count is refused, PA004). '
  'Generalized, linked and bucketization releases; nothing is written. Admin only: reads the source. '
  'Example: SELECT pganon.query_error(1, queries => 1000, theta => 0.1);';

-- pganon.release_metrics: the one definition of every headline number (issue 13). The CLI
-- (`pganon publish`, `pganon releases`), `pganon report` and `pganon compare` all read this view,
-- so a release shows the same figure everywhere. Numbers come from what publish stored
-- (pganon.release.metrics, phase_seconds) and from the release's risk figures (pganon.risk).
-- query_error is the figure publish stored, NULL when it ran no workload (the default: the CLI and
-- reports say "not measured"; pganon.query_error measures it on demand, under its own name).
-- NCP % is the loss of the QI cells as published: a bucketization release that publishes its QIs
-- exactly has NCP 0 (qis_exact), and the spread of its groups' QI values, which its metrics store
-- under ncp_percent (Khan et al. 2020, section 6.1.1), is group_ncp_percent here.
CREATE OR REPLACE VIEW pganon.release_metrics WITH (security_invoker = true) AS
SELECT r.id AS release, d.name AS dataset, r.method, r.status, r.layout->>'family' AS family,
       r.source_rows, r.published_rows, r.suppressed_rows, r.groups,
       CASE WHEN r.source_rows > 0 THEN 100.0 * r.suppressed_rows / r.source_rows END::float8 AS suppressed_percent,
       s.ncp = 0 AS qis_exact,
       s.ncp AS ncp_percent,
       CASE WHEN r.layout->>'family' = 'bucketization' THEN (r.metrics->>'ncp_percent')::float8 END AS group_ncp_percent,
       (r.metrics->'query_error'->>'mean')::float8 AS query_error,
       (r.metrics->'query_error'->>'theta')::float8 AS query_error_theta,
       (r.metrics->'ail')::float8 AS ail, (r.metrics->'sr')::float8 AS sr,
       (r.metrics->'dm')::float8 AS dm, (r.metrics->'c_avg')::float8 AS c_avg,
       (r.metrics->'nloss')::float8 AS nloss, (r.metrics->'v')::float8 AS v,
       (r.metrics->'audit'->>'n_vulnerable_correct')::bigint AS vulnerable,
       k.prosecutor_risk_max, k.attacker_confidence_max, k.attacker_confidence_mean, k.risk_failures,
       (SELECT sum(value::numeric) FROM jsonb_each_text(r.phase_seconds))::float8 AS seconds
  FROM pganon.release r
  JOIN pganon.dataset d ON d.id = r.dataset_id,
  LATERAL (SELECT CASE WHEN r.layout->>'family' = 'bucketization'
                            AND NOT coalesce((r.layout->>'generalized')::boolean, false) THEN 0::float8
                       ELSE coalesce(r.metrics->'ncp_percent', r.metrics->'qid_ncp_percent')::float8 END AS ncp) s,
  LATERAL (SELECT max(x.value) FILTER (WHERE x.measure = 'prosecutor_risk_max') AS prosecutor_risk_max,
                  max(x.value) FILTER (WHERE x.measure = 'attacker_confidence_max') AS attacker_confidence_max,
                  max(x.value) FILTER (WHERE x.measure = 'attacker_confidence_mean') AS attacker_confidence_mean,
                  count(*) FILTER (WHERE x.passed IS FALSE) AS risk_failures
             FROM pganon.risk(r.id) x) k;
COMMENT ON VIEW pganon.release_metrics IS
  'The headline numbers of every release, one definition each, as the CLI and the HTML reports show them: '
  'row counts, suppressed %, NCP % of the QI cells as published (0 and qis_exact when the QIs are published '
  'exactly; group_ncp_percent: the spread of each bucketization group''s QI values), the publish-time query '
  'error (COUNT queries on the QIs at query_error_theta; NULL when publish ran none: pganon.query_error '
  'measures it on demand), the method''s own measures (AIL, SR, DM, C_avg, '
  'NLoss, v, vulnerable records), the worst identity risk and attacker confidence of pganon.risk, risk '
  'figures that break the policy, and seconds. Example: SELECT * FROM pganon.release_metrics WHERE dataset = ''adult'';';

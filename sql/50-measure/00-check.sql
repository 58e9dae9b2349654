-- pganon.check: privacy models assessed on any table or view, raw or published (issue 4 point 5),
-- and the identity-reserved models of spec 002 on tables where one person owns several rows
-- (issue 5): params name the person column, e.g. '{"person": "id_num", "l": 3}'.

CREATE OR REPLACE FUNCTION pganon.check(relation regclass, qis text[], sas text[], model text,
                                        params jsonb DEFAULT '{}')
RETURNS jsonb
LANGUAGE sql STABLE SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$ SELECT pganon._call('check', jsonb_build_object('relation', relation::oid, 'qis', qis, 'sas', sas,
                                                      'model', model, 'params', coalesce(params, '{}'))) $$;
COMMENT ON FUNCTION pganon.check(regclass, text[], text[], text, jsonb) IS
  'Assess a table or view under a privacy model; returns {model, scope, value, per_sa, holds, params}. '
  'Models: k_anonymity, alpha_k_anonymity, l_diversity, entropy_l_diversity, recursive_cl_diversity, '
  't_closeness, basic_beta_likeness, enhanced_beta_likeness, delta_disclosure; ''all'' checks every model '
  '(params then map a model to its params). Params: the thresholds (k, alpha, l, c, t, beta, delta) and '
  'scope attribute | joint (the other SAs treated as QIs), distance for t (auto, l1, equal, ordered, hierarchical). '
  'Identity-reserved models (one SA; rows are records of persons; params person = the person column): '
  'ir_kl_anonymity (k, l), eir_l_diversity (l), ir_alpha_beta and eir_alpha_beta (alpha, beta); they return '
  '{model, scope: person, value, holds, classes, failing_classes, split_persons, vulnerable: {v, ...}}, '
  'v = share of classes meeting the IR model but not its EIR counterpart (given l, or alpha and beta); ''all'' '
  'includes them only when params map them to their params. '
  'The caller must be able to read the relation. '
  'Example: SELECT pganon.check(''pganon_release.adult_gt'', ''{age,sex}'', ''{occupation}'', ''l_diversity'', ''{"l": 2}'');';

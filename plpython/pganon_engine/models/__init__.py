"""Privacy models: predicates on one equivalence class or one release, checked from aggregates.

- `predicates`: the model registry, parameter parsing and the per-class test Mondrian and GAA
  plan with; the measures themselves are in `diversity` (k-anonymity, alpha, l-diversity
  variants: each class alone) and `distances` (t-closeness, beta-likeness, delta-disclosure: each
  class against the table), over the validated input of `aggregates`.
- `ir_models`: the identity-reserved models of person-aware releases, with `hitting_sets` (the
  minimum hitting set search) and `ir_states` (incremental states for greedy clustering).
- `check`: `pganon.check` on any table or view.
- `fcorr` (the reference), `fcorr_fast` (vectorized) and `audit` (read from a release): the
  fingerprint-correlation audit of GT/ST releases.

Methods plan with these; the SQL verifier restates every rule apart (docs/architecture.md).
"""

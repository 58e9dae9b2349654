"""Privacy models: predicates on one equivalence class or one release, checked from aggregates.
`predicates` (k-anonymity, l-diversity, t-closeness, beta-likeness...), `ir_models` (the
identity-reserved models of person-aware releases), `check` (`pganon.check` on any table), and the
fingerprint-correlation audit of GT/ST releases (`fcorr` the reference, `fcorr_fast` the vectorized
twin, `audit` read from a release). Methods plan with these; the SQL verifier restates them apart."""

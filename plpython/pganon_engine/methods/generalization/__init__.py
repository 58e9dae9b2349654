"""Generalized releases (one GT, QIs recoded): Mondrian (`mondrian`, the in-memory driver, with
`mondrian_schema` for its input, `mondrian_predicates` for admissible cuts, `mondrian_cuts` for
the cut rules both drivers share, and `mondrian_sql` for the top splits in SQL), GAA (`gaa`, the
entry point, with `gaa_run` the greedy loop, `gaa_strategies` S1-S7 and `gaa_measures`), and the
release family (`family`)."""

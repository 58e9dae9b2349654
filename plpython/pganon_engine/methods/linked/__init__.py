"""Linked GT/ST releases of Khan et al. (2020): (c,k)-anonymization (`ck`, the planner's entry
point, built from `ck_input`, `ck_grouping`, `ck_buckets` and `ck_refine`), the (p,k)-angelization
baseline (`pk`), the SA weights and categories both share (`ck_categories`), the published QI
cells and ST the verifier checks (`ck_cells`), and the release family (`family`)."""

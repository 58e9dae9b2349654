"""Linked GT/ST releases of Khan et al. (2020): (c,k)-anonymization and the (p,k)-angelization
baseline (`ck`), their shared SA categories (`ck_categories`), and the release family (`family`)."""

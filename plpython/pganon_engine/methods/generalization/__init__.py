"""Generalized releases (one GT, QIs recoded): Mondrian (`mondrian`, its top splits in SQL in
`mondrian_sql`), GAA with strategies S1-S7 (`gaa`), and the release family (`family`)."""

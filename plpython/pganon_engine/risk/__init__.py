"""Risk from the analyst's seat, assessed on every candidate before it may be promoted: the
identity, attribute and structure figures (`assess`), Rating's chain attack (`chain_attack`) and
linkage across promoted releases (`linkage`). Above the methods: it reads what a family promised."""

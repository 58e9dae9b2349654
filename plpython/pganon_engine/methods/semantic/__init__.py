"""Semantic anonymization (Mubark et al. 2016): merging classes until no owner-written semantic
rule is effective (`semantic`, with `rules` for parsing and matching the rules and `classes` for
the classes and persons it reads), and the release family built on generalization (`family`)."""

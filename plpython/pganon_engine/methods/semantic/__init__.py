"""Semantic anonymization (Mubark et al. 2016): merging classes until no owner-written semantic
rule is effective (`semantic`), and the release family built on generalization (`family`)."""

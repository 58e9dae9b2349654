"""Generalization hierarchies: the tree of one attribute (`tree`), builders and the ARX file format
(`build`), and their storage in the catalog (`store`). Above `core` only."""

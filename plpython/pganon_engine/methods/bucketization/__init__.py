"""Bucketization of Xiao & Li (2020): the L_sl-diversity planner and the MBF/MSDCF/MMDCF
baselines (`bucketize`, the entry point, built from `inputs`, `runs`, `reference`, `trie` and
`residual`), and the GT/ST release family (`family`)."""

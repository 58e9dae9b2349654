"""Bucketization of Xiao & Li (2020): the L_sl-diversity planner and the MBF/MSDCF/MMDCF
baselines (`bucketize`), and the GT/ST release family (`family`)."""

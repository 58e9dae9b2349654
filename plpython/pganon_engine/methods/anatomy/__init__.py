"""Anatomy (Xiao & Tao 2006): the anatomy bucketizer (`anatomize`, shared with Rating) and the
QIT/ST release family (`family`)."""

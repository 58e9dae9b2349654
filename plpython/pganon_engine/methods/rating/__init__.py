"""Rating (Liu, Luo & Huang 2011): the per-attribute grouping planner (`rating`) and the AT/IDT
release family (`family`)."""

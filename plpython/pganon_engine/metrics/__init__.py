"""What a release costs in utility: information loss (`infoloss`, `ir_metrics`), NCP (`ncp`) and
the COUNT-query workload (`workload`, drawn by `querygen`, answered by `estimate`, read from the
database by `utility`), the joint distribution an analyst can rebuild (`joint`, `reconstruct`)
and `pganon.compare` (`comparison`). Metrics never import methods: every family measures itself
through them."""

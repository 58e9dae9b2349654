# pganon: the everyday commands. Every target runs scripts/setup.sh first (idempotent, fast).
PY := .venv/bin/python
PGANON := .venv/bin/pganon

.PHONY: setup demo test unit bench bench-ck bench-memory bench-msa bench-ir bench-gen bench-risk bench-scale bench-wide server-start server-stop clean

setup:
	@bash scripts/setup.sh

## The main job: local server, install, load Adult, publish MMDCF-MSLF (d = 3), show the release.
demo: setup
	@bash scripts/demo.sh

## The tests: unit (engine, no database) and integration (real PostgreSQL with plpython3u, and a
## headless Chromium for the HTML reports).
test:
	@bash scripts/setup.sh --test
	@$(PY) -m pytest -q tests

unit: setup
	@$(PY) -m pytest -q tests/unit

## Benchmarks (not part of `make test`): writes benchmarks/results/.
bench: setup
	@$(PY) benchmarks/run.py

## (c,k)-anonymization vs (p,k)-angelization on Adult and NMES (Khan et al. 2020, §6): results/ck_experiments.md
bench-ck: setup
	@$(PY) benchmarks/ck_experiments.py

## Backend peak memory against rows, 125k .. 2M (results/memory_scaling.md)
bench-memory: setup
	@$(PY) benchmarks/memory_scaling.py

## The comparative study (Nasr et al., §6): nine methods on Adult and NMES through `pganon compare`,
## 1:M claims on the INFORMS-like table; results/msa_comparison*.{md,html,json}
bench-msa: setup
	@$(PY) benchmarks/msa_comparison.py

## Identity-reserved releases (Wang et al. 2019, §5) and 1:M sweeps; DAnonyIR on 50,000 persons: results/ir_{experiments,speed}.md
bench-ir: setup
	@nice -n 5 $(PY) benchmarks/ir_speed.py
	@nice -n 5 $(PY) benchmarks/ir_experiments.py

## GAA and Mondrian (Mauger et al. 2023, §3.3 and §4.3; Nasr et al., §6): metric/strategy studies, Mondrian k=2..100, speed (results/generalization.md)
bench-gen: setup
	@$(PY) benchmarks/generalization_experiments.py

## Risk from the analyst's seat for all 16 methods on Adult and the INFORMS-like table (results/risk.md)
bench-risk: setup
	@$(PY) benchmarks/risk_figures.py

## Publish at 100k and 1M rows (10M with FULL=1; or SIZES=100000,1000000) as ratios to a table copy, per phase,
## peak backend memory, against issue 15's targets; ANJANA / anonypyx / pyCANON side by side (results/scale.md)
bench-scale: setup
	@SIZES="$(SIZES)" FULL="$(FULL)" $(PY) benchmarks/scale.py

## gaa and mondrian on wide domains (wide_zip: a 13,000-leaf ZIP hierarchy, wide numeric QIs) at 3k and 63k rows: results/wide.md
bench-wide: setup
	@$(PY) benchmarks/wide.py

server-start: setup
	@$(PGANON) server start

server-stop:
	@$(PGANON) server stop

clean: server-stop
	rm -rf .pganon

"""Refit ``pganon/data/adult_model.json`` on UCI Adult: ``python -m
pganon.datasets.adult_model_refit`` says whether the packaged file is what a refit gives, and
``--write`` rewrites it. Run it after changing :data:`~pganon.datasets.adult_model.MODEL_CHAIN`
or :data:`~pganon.datasets.adult_model.MODEL_BINS` (a separate module, so that ``-m`` does not
run a module the package has already imported).
"""

from __future__ import annotations

import argparse
from typing import Sequence

from .adult import adult_rows
from .adult_model import MODEL_FILE, fit_adult_model, model_json
from .fetch import _data_file


def main(argv: Sequence[str] | None = None) -> int:
    """Refit the model on UCI Adult (fetched and verified as for ``pganon dataset load adult``);
    print whether the packaged file matches (exit 0) or not (exit 1), or rewrite it (--write)."""
    ap = argparse.ArgumentParser(prog="python -m pganon.datasets.adult_model_refit",
                                 description="Refit pganon/data/adult_model.json on UCI Adult.")
    ap.add_argument("--write", action="store_true", help="rewrite the packaged file")
    args = ap.parse_args(argv)
    text = model_json(fit_adult_model(adult_rows()))
    path = _data_file(MODEL_FILE)
    if args.write:
        with open(str(path), "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        print(f"wrote {path} ({len(text)} bytes)")
        return 0
    same = path.is_file() and path.read_text(encoding="utf-8") == text
    print(f"{path}: {'up to date' if same else 'differs from a refit (run with --write)'}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())

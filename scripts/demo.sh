#!/usr/bin/env bash
# The main job on the embedded default server: start it, install pganon, load UCI Adult with the
# paper's attribute file, publish an MMDCF-MSLF candidate over d = 3 sensitive attributes, look at
# its risk from the analyst's seat, promote it (the views analysts read switch to it only now),
# and print the first rows of the analysts' GT and ST views and the independent checks.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
P=.venv/bin/pganon
$P server start
$P install
$P dataset load adult --replace
# step 1: a candidate (verified, measured, risk-assessed, invisible to analysts); prints its id
rid=$($P publish adult mmdcf_mslf -p d=3 --quiet | tee /dev/stderr | sed -n 's/^candidate \([0-9]*\).*/\1/p')
$P risk "$rid"
# step 2: promote it; refused (exit 3) with the failing figures when it breaks the dataset's policy
$P promote "$rid"
$P show adult --rows 8
$P verify adult

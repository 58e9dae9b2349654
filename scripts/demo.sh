#!/usr/bin/env bash
# The main job on the embedded default server: start it, install pganon, load UCI Adult with the
# paper's attribute file, publish an MMDCF-MSLF release over d = 3 sensitive attributes, and print
# its summary and the first rows of the analysts' GT and ST views.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
P=.venv/bin/pganon
$P server start
$P install
$P dataset load adult --replace
$P publish adult mmdcf_mslf -p d=3 --show 8
$P verify adult

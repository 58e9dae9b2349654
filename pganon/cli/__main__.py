"""`python -m pganon.cli ...`: the `pganon` command without its console script."""

import sys

from .run import main

sys.exit(main())

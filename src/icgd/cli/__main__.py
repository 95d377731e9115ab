"""`python -m icgd.cli ...`: the same as the `icgd` command."""

import sys

from icgd.cli import main

sys.exit(main())

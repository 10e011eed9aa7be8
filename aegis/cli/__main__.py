"""`python -m aegis.cli`: the same as the `aegis` command."""

import sys

from aegis.cli import main

sys.exit(main())

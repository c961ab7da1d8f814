"""``python -m cpl_cli``: the ``cpl`` command where no ``cpl`` script is installed."""

import sys

from cpl_cli import main

sys.exit(main())

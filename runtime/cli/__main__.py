"""``python -m runtime.cli``: the ``cpl`` command where no ``cpl`` script is installed."""

import sys

from . import main

sys.exit(main())

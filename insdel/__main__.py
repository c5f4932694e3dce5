"""``python -m insdel``: the command line (same as the ``insdel`` script)."""

from .cli import main

raise SystemExit(main())

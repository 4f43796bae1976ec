"""``python -m dvc_cuvis`` runs the CLI."""

import sys

from dvc_cuvis.cli import main

sys.exit(main())

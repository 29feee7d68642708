import sys

from aiscientist.cli import main

sys.exit(main())

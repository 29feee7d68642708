import sys

from aiscientist.cli.app import main

sys.exit(main())

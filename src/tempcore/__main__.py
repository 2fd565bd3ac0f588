import sys

from tempcore.cli import main

sys.exit(main())

# The entry point handles Ctrl-C before it imports the kit (see seamspec/_signals.py).
from seamspec._signals import main

raise SystemExit(main())

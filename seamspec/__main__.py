# The entry point handles Ctrl-C before it imports the kit (see seamspec/_entry.py).
from seamspec._entry import main

raise SystemExit(main())

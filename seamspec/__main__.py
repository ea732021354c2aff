from seamspec._cli import main

raise SystemExit(main())

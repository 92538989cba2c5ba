from anchor_ls.cli import main

raise SystemExit(main())

"""pmapviz's dashboard, as ``pmapviz serve`` runs it from the installed package (the checkout's
``app.py`` runs the same :func:`pmapviz.app.ui.dashboard.main`)."""

from pmapviz.app.ui import dashboard

dashboard.main()

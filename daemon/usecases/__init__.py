"""What a person asks memd to do, shared by the command line and the web page: each use case takes
the caller's ``daemon.runtime.Runtime`` and returns a typed result; the front-ends (``daemon.cli``,
``daemon.ui``) say it in words (``daemon.words``).

The phases a use case runs (publishing, syncing, consolidating now, rewriting history, a memory's story)
are imported inside the function that runs them, each with ``# lazy: daemon.usecases``: the web page
imports these modules, and with those at the top it loads 4,179 modules and 117 MB instead of 674 and
60 MB (measured with ``python -c 'import daemon.ui.app'``); everything the page has loaded anyway is
imported at the top."""

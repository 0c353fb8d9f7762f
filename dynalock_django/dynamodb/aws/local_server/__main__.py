"""``python -m dynalock_django.dynamodb.aws.local_server``: the endpoint's command.

A ``__main__`` of its own, so that running the command does not execute the
module the package's ``__init__`` already imported a second time as
``__main__`` (runpy's "found in sys.modules" RuntimeWarning, and two copies
of its globals).
"""

from . import main

if __name__ == "__main__":  # imported (a tool walking the package), it starts nothing
    main()

"""Run inside the new project by the installed-package test: ``lock_object`` from two processes.

python hold_lock.py hold NAME   # takes the lock on customer NAME, prints HELD, keeps it until stdin closes
python hold_lock.py try NAME    # one attempt, never waiting: prints ACQUIRED or REFUSED <holder's owner>
"""

import sys

import django

django.setup()

from desk.models import Customer  # noqa: E402 (the project's own app)

from dynalock_django import LockNotAcquired, lock_object  # noqa: E402 (after setup)

action, name = sys.argv[1:]
customer, _ = Customer.objects.get_or_create(name=name)
if action == "hold":
    with lock_object(customer, purpose="the installed-package test"):
        print("HELD", flush=True)
        sys.stdin.read()
else:
    try:
        with lock_object(customer, blocking=False):
            print("ACQUIRED")
    except LockNotAcquired as refused:
        print("REFUSED", refused.holder.owner_name if refused.holder else "?")

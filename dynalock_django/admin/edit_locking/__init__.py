"""Edit locks in the admin: staff edits serialized, one browser tab at a time.

Opening an object's change page takes its edit lock for that browser tab.
Anyone else — another user, or the same user in another tab — gets the
read-only view, inlines included, under a banner saying who is editing since
when, which tells them by itself when the lock frees. The tab renews its lock
through the endpoints every third of ``EDIT_LEASE_DURATION`` and releases it
when the page goes away; a save is refused (a form error, nothing written)
unless the submitting tab still holds the lock, and the row is written through
the fencing check when its model has a ``FencingTokenField``. Deletions,
changelist edits and actions take the same locks. Add pages take no lock.
An action made with ``edit_locked_action`` runs only under the locks of all
the objects it was given, as "Delete selected" does.
"""

from .locked_actions import edit_locked_action
from .mixin import EditLockMixin

__all__ = ["EditLockMixin", "edit_locked_action"]

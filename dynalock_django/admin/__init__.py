"""The admin: the live-locks page (registered when the admin loads this module) and
``EditLockMixin``, which serializes staff edits in your own ModelAdmins::

    from dynalock_django.admin import EditLockMixin

    @admin.register(Customer)
    class CustomerAdmin(EditLockMixin, admin.ModelAdmin): ...

and ``edit_locked_action``, for actions that run under the edit locks of all
the selected objects, or not at all.
"""

from .edit_locking import EditLockMixin, edit_locked_action
from .live_locks import LiveLocksAdmin

__all__ = ["EditLockMixin", "LiveLocksAdmin", "edit_locked_action"]

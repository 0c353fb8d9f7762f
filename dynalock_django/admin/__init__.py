"""The admin: the live-locks dashboard (registered when the admin loads this module) and
``EditLockMixin``, which serializes staff edits in your own ModelAdmins::

    from dynalock_django.admin import EditLockMixin

    @admin.register(Customer)
    class CustomerAdmin(EditLockMixin, admin.ModelAdmin): ...
"""

from .edit_locking import EditLockMixin
from .live_locks import LiveLocksAdmin

__all__ = ["EditLockMixin", "LiveLocksAdmin"]

"""What one request to an ``EditLockMixin`` admin decided about edit locks.

The mixin runs each change page and changelist request on its own copy of
the ModelAdmin, which carries a :class:`RequestEditLocks`: Django calls the
admin's hooks (``has_change_permission``, ``save_model``, ``response_change``
...) with the request alone, and this is what they need to agree on.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import models

from ...dynamodb import Lease
from ...keys import key_for_instance
from .object_locks import EditState


@dataclass(frozen=True)
class EditPage:
    """What a change page request decided about its object's edit lock."""

    state: EditState
    may_edit: bool  # the user's change permission, whatever the lock says
    lease: Lease | None = None  # a save's: renewed just before it, used to fence the write


@dataclass
class RequestEditLocks:
    """The edit locks one request works under: its change page's, or those its changelist writes claimed."""

    page: EditPage | None = None  # decided before a page is shown, or when a save's form is cleaned
    claimed: dict[str, Lease] = field(default_factory=dict)  # by key: objects written without their change page
    editors: dict[str, str] = field(default_factory=dict)  # by key: the changelist column's text for each row

    def lease_for(self, obj: models.Model) -> Lease | None:
        """The lease a write of ``obj`` in this request is made under, if any."""
        if self.page is not None:
            return self.page.lease
        return self.claimed.get(key_for_instance(obj))

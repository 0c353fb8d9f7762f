from typing import TYPE_CHECKING

from django.contrib import admin, messages
from django.db import models
from django.http import HttpRequest

from dynalock_django.admin import EditLockMixin, edit_locked_action
from dynalock_django.dynamodb import LeaseGroup
from dynalock_django.fencing import fenced_refresh, fenced_save

from .models import Address, Customer, Note

if TYPE_CHECKING:  # django-stubs makes the admin's classes generic; Django's are not subscriptable
    _AddressInline = admin.TabularInline[Address, Customer]
    _NoteInline = admin.StackedInline[Note, Customer]
    _CustomerModelAdmin = admin.ModelAdmin[Customer]
else:
    _AddressInline = admin.TabularInline
    _NoteInline = admin.StackedInline
    _CustomerModelAdmin = admin.ModelAdmin


class AddressInline(_AddressInline):
    model = Address
    extra = 0


class NoteInline(_NoteInline):
    model = Note
    extra = 0


@admin.register(Customer)
class CustomerAdmin(EditLockMixin, _CustomerModelAdmin):
    """Staff edits of a customer, its addresses and notes are serialized: one tab at a time."""

    list_display = ["name", "email", "plan"]
    search_fields = ["name", "email"]
    inlines = [AddressInline, NoteInline]
    actions = ["merge_customers"]

    def has_merge_permission(self, request: HttpRequest) -> bool:
        """Merging changes one customer and deletes the other."""
        return self.has_change_permission(request) and self.has_delete_permission(request)

    @admin.action(description="Merge the two selected customers", permissions=["merge"])
    @edit_locked_action
    def merge_customers(self, request: HttpRequest, queryset: models.QuerySet[Customer], locks: LeaseGroup) -> None:
        """The newer record's addresses and notes move to the older one, which fills in the contact details it
        lacks; the newer record is deleted. Under both customers' edit locks, written through the fence."""
        selected = sorted(queryset, key=lambda customer: customer.pk)
        if len(selected) != 2:
            self.message_user(request, "Select exactly two customers to merge.", messages.ERROR)
            return
        kept, duplicate = selected
        for customer in selected:
            fenced_refresh(customer, locks)  # from here no older lock's write lands, and we read the rows as stored
        addresses = duplicate.addresses.update(customer=kept)
        notes = duplicate.notes.update(customer=kept)
        filled = [field for field in ("email", "phone") if not getattr(kept, field) and getattr(duplicate, field)]
        for field in filled:
            setattr(kept, field, getattr(duplicate, field))
        fenced_save(kept, locks, update_fields=filled)
        duplicate.delete()
        self.message_user(
            request,
            f"Merged {duplicate} into {kept}: {addresses} address(es) and {notes} note(s) moved.",
            messages.SUCCESS,
        )

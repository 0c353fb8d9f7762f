from typing import TYPE_CHECKING

from django.contrib import admin

from dynalock_django.admin import EditLockMixin

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

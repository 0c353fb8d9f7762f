from django.contrib import admin

from dynalock_django.admin import EditLockMixin

from .models import Address, Customer, Note


class AddressInline(admin.TabularInline[Address, Customer]):
    model = Address
    extra = 0


class NoteInline(admin.StackedInline[Note, Customer]):
    model = Note
    extra = 0


@admin.register(Customer)
class CustomerAdmin(EditLockMixin, admin.ModelAdmin[Customer]):
    """Staff edits of a customer, its addresses and notes are serialized: one tab at a time."""

    list_display = ["name", "email", "plan"]
    search_fields = ["name", "email"]
    inlines = [AddressInline, NoteInline]

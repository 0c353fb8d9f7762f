from django.contrib import admin

from .models import Address, Customer, Note


class AddressInline(admin.TabularInline[Address, Customer]):
    model = Address
    extra = 0


class NoteInline(admin.StackedInline[Note, Customer]):
    model = Note
    extra = 0


@admin.register(Customer)
class CustomerAdmin(admin.ModelAdmin[Customer]):
    list_display = ["name", "email", "plan"]
    search_fields = ["name", "email"]
    inlines = [AddressInline, NoteInline]

"""Edit locks on UUID and string primary keys (Ticket, Tag), and on a model without a fencing token (Tag)."""

from django.contrib import admin

from dynalock_django.admin import EditLockMixin

from .models import Tag, Ticket


@admin.register(Ticket)
class TicketAdmin(EditLockMixin, admin.ModelAdmin):
    pass


@admin.register(Tag)
class TagAdmin(EditLockMixin, admin.ModelAdmin):
    pass

"""Edit locks on UUID and string primary keys (Ticket, Tag, Topic), and on a model without a fencing token (Tag).

Tag's and Ticket's changelists edit in place, and Tag's has actions: the changelist's writes.
TagProxy's admin edits Tag's rows too.
"""

from django.contrib import admin

from dynalock_django.admin import EditLockMixin

from .models import Tag, TagProxy, Ticket, Topic


@admin.register(Ticket)
class TicketAdmin(EditLockMixin, admin.ModelAdmin):
    list_display = ["id", "title"]
    list_editable = ["title"]


@admin.register(Tag)
class TagAdmin(EditLockMixin, admin.ModelAdmin):
    list_display = ["slug", "label"]
    list_editable = ["label"]
    actions = ["mark_reviewed", "count_selected"]

    @admin.action(description="Mark as reviewed", permissions=["change"])
    def mark_reviewed(self, request, queryset):
        queryset.update(label="reviewed")

    @admin.action(description="Count", permissions=["view"])
    def count_selected(self, request, queryset):
        self.message_user(request, f"{queryset.count()} selected")


@admin.register(TagProxy)
class TagProxyAdmin(EditLockMixin, admin.ModelAdmin):
    """A second admin of Tag's rows, under the same edit locks."""


@admin.register(Topic)
class TopicAdmin(EditLockMixin, admin.ModelAdmin):
    pass

"""No tables: an unmanaged model gives the admin its live-locks page, and the permissions for it."""

from django.apps import apps
from django.core.exceptions import ImproperlyConfigured
from django.db import models
from django.utils.translation import gettext_lazy as _

# Who may take a lock away from its holder: on the live-locks page, or by taking over an edit lock.
FORCE_RELEASE_PERMISSION = "dynalock_django.force_release"
# Who may see the live-locks page, and with it the host names and pids of the processes holding locks.
VIEW_LOCK_PERMISSION = "dynalock_django.view_lock"


if not apps.is_installed("dynalock_django"):
    # Else Django's own error names this internal model, not the setting to change.
    raise ImproperlyConfigured(
        'dynalock_django is not in INSTALLED_APPS: add "dynalock_django" there (its admin pages, permissions and '
        "templates come with it), then run manage.py migrate."
    )


class Lock(models.Model):
    """A lock as the admin shows it; the locks themselves live in the DynamoDB table."""

    key = models.CharField(_("key"), primary_key=True, max_length=2048)

    class Meta:
        managed = False
        default_permissions = ("view",)
        permissions = [("force_release", _("Can force-release locks held by others"))]
        verbose_name = _("lock")
        verbose_name_plural = _("live locks")

    def __str__(self) -> str:
        return self.key

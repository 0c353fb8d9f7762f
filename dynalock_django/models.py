"""An unmanaged model gives the admin its live-locks page, and the permissions for it; one small table
records what ``dynalock_django.celery.LeaderScheduler``'s leaders sent (:mod:`dynalock_django.beat_sends`)."""

from django.apps import apps
from django.core.exceptions import ImproperlyConfigured
from django.db import models
from django.utils.translation import gettext_lazy as _

from .fencing import FencingTokenField

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


class BeatSends(models.Model):
    """Per Celery beat (its leadership's key): each entry's last run, written only under the newest leader's token."""

    beat = models.CharField(_("beat"), primary_key=True, max_length=255)
    # entry name -> when it was last sent (ISO 8601, UTC), as the leader that sent it recorded it
    last_runs = models.JSONField(_("last runs"), default=dict)
    fencing_token = FencingTokenField()

    class Meta:
        verbose_name = _("beat's sends")
        verbose_name_plural = _("beats' sends")

    def __str__(self) -> str:
        return self.beat

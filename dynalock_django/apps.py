from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class DynalockConfig(AppConfig):
    name = "dynalock_django"
    verbose_name = _("Locks")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import checks, client  # noqa: F401 (registers the checks and the settings receiver)
        from .tasks import frameworks

        frameworks.listen()  # the queues' signals an adapter reads (django-q2's, when it is installed)

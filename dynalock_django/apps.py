from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class DynalockConfig(AppConfig):
    name = "dynalock_django"
    verbose_name = _("Locks")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import checks, client  # noqa: F401 (registers the checks and the settings receiver)
        from .dynamodb import describe_keys_with
        from .keys import telemetry_attributes
        from .tasks import frameworks

        describe_keys_with(telemetry_attributes)  # spans and metrics name a lock's kind and model
        frameworks.listen()  # the queues' signals an adapter reads (django-q2's, when it is installed)

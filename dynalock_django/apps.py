from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class DynalockConfig(AppConfig):
    name = "dynalock_django"
    verbose_name = _("Locks")

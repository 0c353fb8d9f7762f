from django.apps import AppConfig


class DeskConfig(AppConfig):
    name = "testproject.desk"
    label = "desk"
    verbose_name = "Support desk"
    default_auto_field = "django.db.models.BigAutoField"

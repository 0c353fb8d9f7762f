from django.urls import path

from . import views

app_name = "desk"
urlpatterns = [
    path("", views.customer_list, name="customer-list"),
    path("customers/<int:pk>/", views.customer_edit, name="customer-edit"),
    path("customers/<int:pk>/notes/", views.add_note, name="add-note"),
    path("customers/<int:pk>/snapshot/", views.customer_snapshot, name="customer-snapshot"),
    path("customers/<int:pk>/snapshot/now/", views.customer_snapshot_now, name="customer-snapshot-now"),
]

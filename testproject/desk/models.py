"""A small support desk: customers, their addresses and the notes staff keep on them."""

from django.conf import settings
from django.db import models
from django.urls import reverse

from dynalock_django.fencing import FencingTokenField


class Customer(models.Model):
    name = models.CharField(max_length=200)
    email = models.EmailField(blank=True)
    phone = models.CharField(max_length=50, blank=True)
    plan = models.CharField(max_length=20, choices=[("free", "Free"), ("pro", "Pro"), ("enterprise", "Enterprise")])
    fencing_token = FencingTokenField()

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("desk:customer-edit", args=[self.pk])


class Address(models.Model):
    customer = models.ForeignKey(Customer, on_delete=models.CASCADE, related_name="addresses")
    street = models.CharField(max_length=200)
    city = models.CharField(max_length=100)
    country = models.CharField(max_length=2, default="US")

    class Meta:
        verbose_name_plural = "addresses"

    def __str__(self) -> str:
        return f"{self.street}, {self.city}"


class Note(models.Model):
    customer = models.ForeignKey(Customer, on_delete=models.CASCADE, related_name="notes")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    body = models.TextField()
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created"]

    def __str__(self) -> str:
        return self.body[:50]

"""Models with every kind of primary key the keys must handle."""

import uuid

from django.db import models

from dynalock_django.fencing import FencingTokenField


class Account(models.Model):
    name = models.CharField(max_length=100)
    balance = models.IntegerField(default=0)
    fencing_token = FencingTokenField()

    def __str__(self) -> str:
        return self.name


class PremiumAccount(Account):
    """Multi-table inheritance: shares its row (and lock) with Account."""

    tier = models.CharField(max_length=20, default="gold")


class AccountProxy(Account):
    class Meta:
        proxy = True


class Ticket(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4)
    title = models.CharField(max_length=100)
    fencing_token = FencingTokenField()

    def __str__(self) -> str:
        return self.title


class Tag(models.Model):
    """No fencing token: its admin's saves are checked against the edit lock, but not fenced."""

    slug = models.CharField(primary_key=True, max_length=100)
    label = models.CharField(max_length=100, blank=True)

    def __str__(self) -> str:
        return self.slug


class TagProxy(Tag):
    """Another admin of Tag's rows: its changes are the same rows' changes, under another content type."""

    class Meta:
        proxy = True


class Topic(models.Model):
    """A long string pk: 255 non-ASCII characters make a key far over DynamoDB's 2048 bytes."""

    name = models.CharField(primary_key=True, max_length=255)

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    pk = models.CompositePrimaryKey("team", "person")
    team = models.CharField(max_length=50)
    person = models.CharField(max_length=50)
